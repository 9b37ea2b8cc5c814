import { embedForStorage, NO_EMBEDDING, type StoredEmbedding } from '../retrieval/embeddings.ts';
import { commitAdds, GONE, type DerivedAdd } from './commit.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { ClaimDeriver } from './deriver.ts';
import { derive, failEvents, processDeletion } from './event-steps.ts';
import { beginBatch, loadMessages } from './events.queries.ts';

/** Derivations run at once (a model deriver waits on the network per event; the rules do not wait). */
export const DERIVE_CONCURRENCY = 4;

export type BatchOutcome = {
  succeeded: number; failed: number; finishedBefore: number; retry: string[];
  /** The accounts whose events this attempt began (operators find a batch by account in the Temporal UI). */
  accounts: string[];
};

/**
 * Processes one batch of memory events (the activity behind memoryBatchWorkflow):
 * 1. begins the events still of this batch, and loads the messages of its add-events in one query;
 * 2. derives their claims, outside any transaction, DERIVE_CONCURRENCY at a time, and with an embeddings
 *    provider, embeds their messages (best effort: a message is stored without a vector if it fails);
 * 3. commits them in write order: consecutive add-events together in one transaction (commit.ts), each
 *    deletion on its own between them, so a later event always meets the effects of earlier ones.
 * When a transaction of several events fails, its events are committed one by one, so one event's
 * failure never undoes another's. The events that threw are returned in `retry` for the workflow to
 * try again later. Idempotent: a retried batch skips the events that already ended.
 */
export async function processBatch(em: Em, deriver: ClaimDeriver, batch: {
  batchId: string;
  eventIds: string[];
  onError: (eventId: string, err: unknown) => void;
  embeddings?: StoredEmbedding;
}): Promise<BatchOutcome> {
  const { batchId, eventIds, onError, embeddings = NO_EMBEDDING } = batch;
  const events = await beginBatch(em, batchId, eventIds);
  const outcome: BatchOutcome = {
    succeeded: 0, failed: 0, finishedBefore: eventIds.length - events.length, retry: [], accounts: [...new Set(events.map((e) => e.account_id))],
  };
  const fail = (ids: string[], err: unknown) => {
    for (const id of ids) onError(id, err);
    outcome.retry.push(...ids);
  };
  const count = (statuses: string[]) => {
    for (const s of statuses) outcome[s === 'succeeded' ? 'succeeded' : 'failed']++;
  };

  const addIds = events.filter((e) => e.kind === 'add_messages').map((e) => e.id);
  const messages = addIds.length ? await loadMessages(em, addIds) : new Map<string, DerivedAdd['messages']>();
  const gone = addIds.filter((id) => !messages.has(id)); // messages cascaded away with a deleted peer or session
  if (gone.length) {
    await failEvents(em, gone, GONE);
    outcome.failed += gone.length;
  }
  const derived = new Map<string, DerivedAdd>();
  const toDerive = events.filter((e) => messages.has(e.id));
  const deriveNext = async () => {
    for (let ev = toDerive.shift(); ev; ev = toDerive.shift()) {
      const msgs = messages.get(ev.id)!;
      try {
        derived.set(ev.id, { ev, messages: msgs, proposals: await derive(deriver, ev, msgs) });
      } catch (err) {
        fail([ev.id], err);
      }
    }
  };
  await Promise.all(Array.from({ length: DERIVE_CONCURRENCY }, deriveNext));
  // The messages' vectors, stored as they become available (none without a provider, or when it fails).
  const stored = [...derived.values()].flatMap((d) => d.messages);
  const made = await embedForStorage(embeddings.embedder, stored.map((m) => m.content), embeddings.log);
  const vectors = made ? { model: embeddings.embedder!.model, byMessage: new Map(stored.map((m, i) => [m.id, made[i]!])) } : null;

  const commitRun = async (run: DerivedAdd[]) => {
    try {
      count((await commitAdds(em.fork(), run, vectors)).map((e) => e.status));
    } catch (err) {
      if (run.length === 1) return fail([run[0]!.ev.id], err);
      for (const one of run) await commitRun([one]);
    }
  };
  let run: DerivedAdd[] = [];
  for (const ev of events) {
    const add = derived.get(ev.id);
    if (add) {
      run.push(add);
      continue;
    }
    if (ev.kind === 'add_messages') continue; // failed above (gone or derivation)
    if (run.length) await commitRun(run);
    run = [];
    await processDeletion(em.fork(), ev).then(({ status }) => count([status]), (err: unknown) => fail([ev.id], err));
  }
  if (run.length) await commitRun(run);
  return outcome;
}
