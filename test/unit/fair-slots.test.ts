import { describe, expect, it } from 'vitest';
import { fairSlots } from '../../core/ingest/extraction/pool.ts';

// The extraction processes are shared between accounts (issue 24): one account never holds them all.

describe('fair extraction slots', () => {
  it('leave one process to other accounts: B starts at once while A waits for its own', async () => {
    const slots = fairSlots(2);
    const started: string[] = [];
    const run = (account: string, label: string) => slots.acquire(account).then(() => started.push(label));
    const a = [run('A', 'a1'), run('A', 'a2'), run('A', 'a3')];
    await a[0];
    await new Promise((r) => setTimeout(r, 10));
    expect(started).toEqual(['a1']); // a2 waits: A may hold one of the two
    await run('B', 'b1');
    expect(started).toEqual(['a1', 'b1']);
    slots.release('A');
    await a[1];
    expect(started).toEqual(['a1', 'b1', 'a2']);
    slots.release('B');
    await new Promise((r) => setTimeout(r, 10));
    expect(started).toEqual(['a1', 'b1', 'a2']); // a3 still waits for A's own slot
    slots.release('A');
    await a[2];
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3']);
  });

  it('give a single process to whoever comes first, in arrival order', async () => {
    const slots = fairSlots(1);
    const started: string[] = [];
    const waits = ['A', 'B', 'A'].map((acc, i) => slots.acquire(acc).then(() => started.push(`${acc}${i}`)));
    await waits[0];
    slots.release('A');
    await waits[1];
    slots.release('B');
    await waits[2];
    expect(started).toEqual(['A0', 'B1', 'A2']);
  });
});
