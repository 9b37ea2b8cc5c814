import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../shared/local/ephemeral.ts';
import { createTemporalClient } from '../../shared/temporal/client.ts';
import { startMemoryEvent } from '../../shared/temporal/workflows.ts';

// A workflow start nobody waits for (the API's memory-event dispatch after its receipt) can still be
// retrying when the process shuts down. Closing the channel under it used to throw "Channel has been
// shut down" from a gRPC timer: an uncaught exception that killed the process (vitest reports it as an
// unhandled error and fails the run).
describe('TemporalClientHandle.detach', () => {
  it('close() cancels detached calls still retrying, and nothing throws afterwards', async () => {
    // Nothing listens on this port: the start keeps retrying UNAVAILABLE with backoff until its deadline.
    const handle = createTemporalClient(`127.0.0.1:${await freePort()}`, 'default', { detachedDeadlineMs: 1500 });
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      handle.detach(() => startMemoryEvent(handle.client, 'q', `00000000-0000-4000-8000-00000000000${i}`).then(
        () => outcomes.push('started'),
        (err: unknown) => {
          outcomes.push('failed');
          throw err;
        },
      ));
    }
    await sleep(300);
    await handle.close();
    expect(outcomes).toEqual(['failed', 'failed', 'failed']);
    // Later retry timers would fire in this window.
    await sleep(3000);
    handle.detach(async () => outcomes.push('after close'));
    await sleep(50);
    expect(outcomes).not.toContain('after close');
  });
});
