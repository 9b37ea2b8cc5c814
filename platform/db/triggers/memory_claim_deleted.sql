CREATE TRIGGER memory_claim_deleted AFTER DELETE ON memory_claim REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION cairn_memory_claims_deleted();
