import { Migration } from '@mikro-orm/migrations';

/**
 * Peer and session labels in Unicode NFC, the form the API now stores and looks labels up in. Labels
 * that meet in one NFC form within an account are not merged: one takes the NFC form (a row already in
 * NFC keeps it, otherwise the oldest), each other is renamed to the NFC form followed by
 * " (duplicate <first 8 characters of its id>)", so it stays reachable and distinct, and its owner can
 * move or delete what it holds.
 */
export class Migration0032LabelNfc extends Migration {
  override name = '0032-label-nfc';

  override up(): void {
    for (const table of ['memory_peer', 'memory_session'] as const) this.addSql(nfcLabels(table));
  }

  override down(): void {
    // Nothing to undo: NFC labels were valid labels before this migration too.
  }
}

/** The statement that puts every label of `table` in NFC (exported for its test). */
export function nfcLabels(table: 'memory_peer' | 'memory_session'): string {
  return `with ranked as (
      select id, normalize(label, NFC) as nfc,
             row_number() over (partition by account_id, workspace, normalize(label, NFC)
                                order by label is nfc normalized desc, created_at, id) as rank
        from ${table})
    update ${table} t
       set label = case when r.rank = 1 then r.nfc else left(r.nfc, 170) || ' (duplicate ' || left(t.id::text, 8) || ')' end
      from ranked r
     where r.id = t.id and t.label is not nfc normalized;`;
}
