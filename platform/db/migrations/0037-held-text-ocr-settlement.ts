import { Migration } from '@mikro-orm/migrations';
import { routineSources, routineStatements } from './routines.ts';

/**
 * Issue 39. A person can redact one message (core/memory/redaction.ts): its text goes, the row stays with who
 * redacted it, when and why. A message whose text changes makes the API's search index copies start
 * over (trigger memory_message_rewritten), as a deletion does. Claims are looked up by the message they
 * cite: whether a message is held for review, and which claims a redaction ends.
 *
 * OCR billing under any timing: a provider-backed preview heartbeats while it works, and the settlement
 * sweeper leaves a reservation alone while its preview is running and heartbeating; cairn_settle says
 * when a reservation was settled before (r_status 'settled'), so work that finished after the sweeper
 * settled it stores nothing unpaid.
 */
export class Migration0037HeldTextOcrSettlement extends Migration {
  override name = '0037-held-text-ocr-settlement';

  override up(): void {
    this.addSql(`alter table memory_message add column redacted_at timestamptz, add column redacted_by jsonb,
      add column redaction_reason text;`);
    this.addSql('create index memory_claim_message_idx on memory_claim(message_id) where message_id is not null;');
    this.addSql('alter table provider_preview add column heartbeat_at timestamptz not null default now();');
    const mine = new Set(['cairn_memory_message_rewritten', 'memory_message_rewritten', 'cairn_settle']);
    for (const statement of routineStatements(routineSources().filter((r) => mine.has(r.name)))) this.addSql(statement);
  }

  override down(): void {
    this.addSql('alter table provider_preview drop column heartbeat_at;');
    this.addSql('drop trigger if exists memory_message_rewritten on memory_message;');
    this.addSql('drop function if exists cairn_memory_message_rewritten();');
    this.addSql('drop index if exists memory_claim_message_idx;');
    this.addSql('alter table memory_message drop column redacted_at, drop column redacted_by, drop column redaction_reason;');
  }
}
