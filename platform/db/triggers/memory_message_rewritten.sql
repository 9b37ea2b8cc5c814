CREATE TRIGGER memory_message_rewritten AFTER UPDATE OF content ON memory_message FOR EACH ROW WHEN (new.content IS DISTINCT FROM old.content) EXECUTE FUNCTION cairn_memory_message_rewritten();
