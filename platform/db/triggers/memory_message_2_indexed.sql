CREATE TRIGGER memory_message_2_indexed BEFORE INSERT ON memory_message FOR EACH ROW WHEN (new.available) EXECUTE FUNCTION cairn_memory_message_indexed();
