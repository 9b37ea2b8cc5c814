import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type RunningCluster } from '../helpers/cluster.ts';

// `npm run cluster` comes up (real Temporal server on PostgreSQL, 2 APIs, a worker) and its balancer
// serves requests through both APIs, on both listeners, and the Temporal UI answers. The test set-up
// builds the Temporal server once (~/.cache/cairn); the replica and fault suites are `npm run test:cluster`.

let cluster: RunningCluster;

describe('npm run cluster', () => {
  beforeAll(async () => {
    cluster = await startCluster({ CLUSTER_APIS: '2', CLUSTER_WORKERS: '1' });
  }, 300_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it('the balancer alternates requests between the APIs, on the API and the MCP listener', async () => {
    for (const port of [cluster.layout.balancer.api, cluster.layout.balancer.mcp]) {
      const path = port === cluster.layout.balancer.api ? '/readyz' : '/.well-known/oauth-protected-resource';
      const upstreams: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`http://127.0.0.1:${port}${path}`);
        expect(r.status).toBe(200);
        upstreams.push(r.headers.get('x-cairn-upstream')!);
      }
      expect(new Set(upstreams)).toEqual(new Set(['api-1', 'api-2']));
      for (let i = 1; i < 4; i++) expect(upstreams[i]).not.toBe(upstreams[i - 1]);
    }
  });

  it('serves the Temporal UI, connected to the server, with the namespace', async () => {
    const ui = `http://127.0.0.1:${cluster.layout.temporalUi}`;
    expect((await fetch(ui)).status).toBe(200);
    const namespaces = (await (await fetch(`${ui}/api/v1/namespaces`)).json()) as { namespaces: { namespaceInfo: { name: string } }[] };
    expect(namespaces.namespaces.map((n) => n.namespaceInfo.name)).toContain('default');
  });
});
