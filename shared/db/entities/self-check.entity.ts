import { defineEntity, p } from '@mikro-orm/core';

/**
 * One row per operator self-check run (`npm run admin -- selfcheck`): proof that the API side, the
 * Temporal server, a worker on the task queue and PostgreSQL are wired together. Keyed by workflow id so
 * a retried activity writes the same row once.
 */
export const SelfCheckSchema = defineEntity({
  name: 'SelfCheck',
  tableName: 'self_check',
  properties: {
    id: p.string().primary(),
    requestedBy: p.string(),
    workerIdentity: p.string(),
    checkedAt: p.datetime(),
  },
});

export class SelfCheck extends SelfCheckSchema.class {}
SelfCheckSchema.setClass(SelfCheck);
