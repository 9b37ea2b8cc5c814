CREATE TRIGGER memory_message_1_vector BEFORE INSERT ON memory_message FOR EACH ROW WHEN (new.tsv IS NULL) EXECUTE FUNCTION cairn_memory_message_tsv();
