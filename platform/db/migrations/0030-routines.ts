import { Migration } from '@mikro-orm/migrations';
import { routineStatements } from './routines.ts';
import { ADD_MESSAGES_POSITIONAL } from './0023-audience-boundaries.ts';

/**
 * Every function and trigger from its source file (routines.ts), so the database equals
 * platform/db/functions and platform/db/triggers. cairn_add_messages takes its write as one jsonb
 * object instead of nineteen positional arguments; a settlement may be 'recognition_failed' (OCR that
 * recognised nothing), refunded in full like 'retrieval_failed'.
 */
export class Migration0030Routines extends Migration {
  override name = '0030-routines';

  override up(): void {
    this.addSql(`drop function if exists cairn_add_messages(uuid, text, text, text, uuid[], uuid, text, boolean, text, text, jsonb,
      timestamptz, jsonb, text[], uuid[], integer[], text[], text[], text[]);`);
    for (const statement of routineStatements()) this.addSql(statement);
  }

  override down(): void {
    this.addSql('drop function if exists cairn_add_messages(jsonb);');
    this.addSql(ADD_MESSAGES_POSITIONAL);
  }
}
