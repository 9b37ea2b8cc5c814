CREATE TRIGGER memory_claim_indexed BEFORE INSERT OR UPDATE ON memory_claim FOR EACH ROW EXECUTE FUNCTION cairn_memory_claim_indexed();
