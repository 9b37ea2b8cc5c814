import { Migration } from '@mikro-orm/migrations';
import { routineSources, routineStatements } from './routines.ts';

/**
 * A person can redact one message (core/memory/redaction.ts): its text goes, the row stays with who
 * redacted it, when and why. A message whose text changes makes the API's search index copies start
 * over (trigger memory_message_rewritten), as a deletion does. Claims are looked up by the message they
 * cite: whether a message is held for review, and which claims a redaction ends.
 */
export class Migration0037MessageRedaction extends Migration {
  override name = '0037-message-redaction';

  override up(): void {
    this.addSql(`alter table memory_message add column redacted_at timestamptz, add column redacted_by jsonb,
      add column redaction_reason text;`);
    this.addSql('create index memory_claim_message_idx on memory_claim(message_id) where message_id is not null;');
    const mine = new Set(['cairn_memory_message_rewritten', 'memory_message_rewritten']);
    for (const statement of routineStatements(routineSources().filter((r) => mine.has(r.name)))) this.addSql(statement);
  }

  override down(): void {
    this.addSql('drop trigger if exists memory_message_rewritten on memory_message;');
    this.addSql('drop function if exists cairn_memory_message_rewritten();');
    this.addSql('drop index if exists memory_claim_message_idx;');
    this.addSql('alter table memory_message drop column redacted_at, drop column redacted_by, drop column redaction_reason;');
  }
}
