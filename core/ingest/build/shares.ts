/**
 * Large ingest work shares a worker's ingest slots (issue 39). Fair dispatch orders the waiting jobs,
 * but nothing preempts a running one: an account whose large builds took every slot made every other
 * job wait for them, its own small uploads included. So in each worker process, the large steps (a
 * build of at least `largeBytes`, OCR) of one account hold at most all slots but one: another
 * account's job, and the same account's small ones, always find a slot. A step over that share
 * yields at once (it does nothing and says so; its workflow waits and asks again), so its slot goes to
 * whatever the task queue dispatches next. Retried steps and small ones never yield. The count is per
 * process: with more workers every worker keeps its slot, and nothing is shared between processes.
 */
export type IngestShares = {
  /** A step's turn: `leave` when it ends, or null when it must yield. `always`: count it, never refuse. */
  enter(accountId: string, sizeBytes: number, always?: boolean): (() => void) | null;
  /** Large steps running per account (for tests and logs). */
  running(): Map<string, number>;
};

export function createIngestShares(opts: { slots: number; largeBytes: number }): IngestShares {
  const share = Math.max(1, opts.slots - 1);
  const large = new Map<string, number>();
  return {
    enter(accountId, sizeBytes, always = false) {
      if (sizeBytes < opts.largeBytes) return () => {};
      const held = large.get(accountId) ?? 0;
      if (held >= share && !always) return null;
      large.set(accountId, held + 1);
      let left = false;
      return () => {
        if (left) return;
        left = true;
        const n = (large.get(accountId) ?? 1) - 1;
        if (n > 0) large.set(accountId, n);
        else large.delete(accountId);
      };
    },
    running: () => new Map(large),
  };
}
