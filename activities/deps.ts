import type { Orm } from '../shared/db/orm.ts';
import type { Logger } from '../shared/logger.ts';

export type ActivityDeps = {
  orm: Orm;
  logger: Logger;
  workerIdentity: string;
  ingest: { urlAllowlist: string[]; fetchTimeoutMs: number };
};
