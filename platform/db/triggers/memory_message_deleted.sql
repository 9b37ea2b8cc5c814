CREATE TRIGGER memory_message_deleted AFTER DELETE ON memory_message REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION cairn_memory_messages_deleted();
