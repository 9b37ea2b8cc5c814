import { describe, expect, it } from 'vitest';
import { createIngestShares } from '../../core/ingest/build/shares.ts';

// One account's large ingest steps hold at most all of a worker's ingest slots but one (issue 39).

describe('ingest shares', () => {
  it('refuse a large step over all-but-one slots, never a small one, a retried one or another account\'s', () => {
    const shares = createIngestShares({ slots: 3, largeBytes: 1000 });
    const a1 = shares.enter('A', 5000)!;
    const a2 = shares.enter('A', 5000)!;
    expect(a1).toBeTypeOf('function');
    expect(a2).toBeTypeOf('function');
    expect(shares.enter('A', 5000)).toBeNull();
    expect(shares.enter('A', 10)).toBeTypeOf('function'); // small: never refused, not counted
    expect(shares.enter('B', 5000)).toBeTypeOf('function');
    const retried = shares.enter('A', 5000, true)!; // a retry counts and runs
    expect(shares.running().get('A')).toBe(3);
    retried();
    a1();
    a1(); // leaving twice counts once
    expect(shares.running().get('A')).toBe(1);
    expect(shares.enter('A', 5000)).toBeTypeOf('function');
  });

  it('let a single slot go to whoever comes: one slot is nobody\'s to keep free', () => {
    const shares = createIngestShares({ slots: 1, largeBytes: 0 });
    const leave = shares.enter('A', 1)!;
    expect(shares.enter('A', 1)).toBeNull();
    leave();
    expect(shares.enter('A', 1)).toBeTypeOf('function');
  });
});
