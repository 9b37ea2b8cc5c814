CREATE TRIGGER credit_ledger_append_only BEFORE UPDATE ON credit_ledger FOR EACH ROW EXECUTE FUNCTION credit_ledger_reject_update();
