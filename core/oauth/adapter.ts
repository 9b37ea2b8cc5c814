import type { EntityManager } from '@mikro-orm/postgresql';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Orm } from '../../platform/db/orm.ts';
import { digest } from '../auth/tokens.ts';
import {
  consumePayload,
  deleteExpiredPayloads,
  deleteGrantPayloads,
  deletePayload,
  extendClientPayload,
  findPayload,
  upsertPayload,
} from './payload.queries.ts';

/** Models whose id is a bearer value: their `jti` is not stored (only its digest, as the row key). */
const BEARER_KINDS = new Set(['AccessToken', 'RefreshToken', 'AuthorizationCode']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Expired rows are swept at most this often per model and process (the sweep is an indexed delete). */
const SWEEP_EVERY_MS = 60_000;
/** Models whose saving means the client was authorized: its registration then lives at least as long. */
const USE_KINDS = new Set(['Grant', 'RefreshToken']);

/**
 * oidc-provider's storage in PostgreSQL (table oauth_payload), shared by every API process. Rows are
 * keyed by the digest of the instance id: for access tokens, refresh tokens and authorization codes
 * the id is the bearer value, so it is never stored; their `jti` is taken out of the stored payload and
 * put back from the id the provider looks up with.
 *
 * Dynamically registered clients expire: a registration lives `unusedClientTtlSeconds` unless the client
 * is authorized, and then as long as its longest-lived grant or refresh token, so an abandoned or
 * never-used registration is swept like any expired row.
 */
export class PostgresOauthAdapter implements Adapter {
  readonly kind: string;
  private readonly orm: Orm;
  private readonly unusedClientTtlSeconds: number;
  private lastSweep = 0;

  constructor(orm: Orm, kind: string, opts: { unusedClientTtlSeconds: number }) {
    this.orm = orm;
    this.kind = kind;
    this.unusedClientTtlSeconds = opts.unusedClientTtlSeconds;
  }

  private em(): EntityManager {
    return this.orm.em.fork() as EntityManager;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const stored: AdapterPayload = { ...payload };
    if (BEARER_KINDS.has(this.kind)) delete stored.jti;
    const accountId = typeof payload.accountId === 'string' && UUID.test(payload.accountId) ? payload.accountId : null;
    const clientId = (payload.clientId ?? payload.client_id ?? null) as string | null;
    const lifetime = expiresIn ?? (this.kind === 'Client' ? this.unusedClientTtlSeconds : undefined);
    const expiresAt = typeof lifetime === 'number' ? new Date(Date.now() + lifetime * 1000) : null;
    const em = this.em();
    await upsertPayload(em, {
      kind: this.kind,
      idDigest: digest(id),
      payload: JSON.stringify(stored),
      accountId,
      clientId,
      grantId: payload.grantId ?? null,
      uid: payload.uid ?? null,
      expiresAt,
    });
    if (USE_KINDS.has(this.kind) && clientId && expiresAt) await extendClientPayload(em, digest(clientId), expiresAt);
    await this.sweep(em);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.findBy('id_digest', digest(id), id);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.findBy('uid', uid);
  }

  async findByUserCode(): Promise<AdapterPayload | undefined> {
    return undefined; // the device flow is not enabled
  }

  async consume(id: string): Promise<void> {
    await consumePayload(this.em(), this.kind, digest(id));
  }

  async destroy(id: string): Promise<void> {
    await deletePayload(this.em(), this.kind, digest(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    // Every token and code of a grant goes at once, whatever model this adapter instance serves.
    await deleteGrantPayloads(this.em(), grantId);
  }

  private async findBy(by: 'id_digest' | 'uid', value: string, id?: string): Promise<AdapterPayload | undefined> {
    const row = await findPayload(this.em(), this.kind, by, value);
    if (!row) return undefined;
    const payload: AdapterPayload = { ...row.payload };
    if (id !== undefined && BEARER_KINDS.has(this.kind)) payload.jti = id;
    if (row.consumed_at) payload.consumed = Math.floor(new Date(row.consumed_at).getTime() / 1000);
    return payload;
  }

  private async sweep(em: EntityManager): Promise<void> {
    if (Date.now() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = Date.now();
    await deleteExpiredPayloads(em, this.kind);
  }
}
