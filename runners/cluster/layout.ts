import { z } from 'zod';
import { ConfigError } from '../../platform/config.ts';
import type { TemporalPorts } from './temporal.ts';

/** The default CLUSTER_PORT: clear of `npm start` (8080, 8081, 7233, 8233) and of the test suite's ephemeral ports. */
export const DEFAULT_CLUSTER_PORT = 8180;
/** API and worker processes are numbered from 1; at most this many of each (their ports are reserved). */
export const MAX_REPLICAS = 9;

/**
 * Every port of `npm run cluster`, from CLUSTER_PORT (p): the balancer's API and MCP ports (p, p+1),
 * the Temporal UI (p+2), API process i's API and MCP ports (p+10+2i, p+11+2i), the Temporal server
 * (p+30 to p+38) and worker i's metrics (p+40+i).
 */
export function clusterLayout(base: number) {
  const temporal: TemporalPorts = {
    frontend: base + 30, frontendHttp: base + 31, history: base + 32, matching: base + 33, worker: base + 34,
    membership: { frontend: base + 35, history: base + 36, matching: base + 37, worker: base + 38 },
  };
  return {
    balancer: { api: base, mcp: base + 1 },
    temporalUi: base + 2,
    api: (i: number) => ({ api: base + 10 + 2 * i, mcp: base + 11 + 2 * i }),
    workerMetrics: (i: number) => base + 40 + i,
    temporal,
    temporalAddress: `127.0.0.1:${temporal.frontend}`,
  };
}
export type ClusterLayout = ReturnType<typeof clusterLayout>;

const replicas = z.coerce.number().int().min(1).max(MAX_REPLICAS);
const clusterEnv = z.object({
  // Temporal keeps membership ports in a smallint column: every port stays below 32768.
  CLUSTER_PORT: z.coerce.number().int().min(1024).max(32_700).default(DEFAULT_CLUSTER_PORT),
  CLUSTER_APIS: replicas.default(2),
  CLUSTER_WORKERS: replicas.default(2),
  DBNAME: z.string().regex(/^\w+$/).default('temporal'),
  VISIBILITY_DBNAME: z.string().regex(/^\w+$/).default('temporal_visibility'),
});

/** `npm run cluster`'s own settings (docs/operations.md, Production shape); the rest is the usual configuration. */
export function loadClusterSettings(env: NodeJS.ProcessEnv = process.env) {
  const parsed = clusterEnv.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => ({ variable: String(i.path[0]), message: i.message })));
  }
  const e = parsed.data;
  return { port: e.CLUSTER_PORT, apis: e.CLUSTER_APIS, workers: e.CLUSTER_WORKERS, temporalDb: { db: e.DBNAME, visibilityDb: e.VISIBILITY_DBNAME } };
}
