import type { EntityManager } from '@mikro-orm/postgresql';
import type { Preset } from '../contracts/account.ts';
import type { AccountState } from '../../platform/db/entities/index.ts';
import { bound, prepared, sql, type Sql } from '../../platform/db/sql.ts';

// The credential lookups of every request (api_key, cli_session, browser_session, each joined with its
// account); what a credential grants is decided in resolve.ts. Each lookup is a named prepared
// statement: one indexed query (digest -> unique index), planned once per connection.

export type CredentialRow = {
  id: string;
  account_id: string;
  email: string;
  display_name: string | null;
  state: AccountState;
  created_at: Date;
  expires_at: Date | null;
  last_used: Date | null;
  scopes: string[] | null;
  max_preset: Preset | null;
  audiences: string[] | null;
};

/** A credential kind looked up here: API keys, CLI sessions and browser sessions. */
export type LookupKind = 'apiKey' | 'cli' | 'browser';

const ACCOUNT_COLUMNS = sql.raw('a.id as account_id, a.email, a.display_name, a.state');

const first = async (rows: Promise<CredentialRow[]>): Promise<CredentialRow | undefined> => (await rows)[0];

// Each select selects the credential's columns as `id, created_at, expires_at, last_used, scopes, max_preset, audiences`.

/** The active API key with this secret digest, of an enabled account. */
export const apiKeyByDigest = (em: EntityManager, secretHash: string) => first(prepared<CredentialRow>(em, sql`select k.id, k.created_at,
    null as expires_at, k.last_used_at as last_used, k.scopes, k.max_preset, k.audiences, ${ACCOUNT_COLUMNS}
    from api_key k join account a on a.id = k.account_id
   where k.secret_hash = ${secretHash} and k.revoked_at is null and a.disabled_at is null`));

/** The live, unexpired CLI session with this token digest, of an enabled account. */
export const cliSessionByDigest = (em: EntityManager, tokenHash: string) => first(prepared<CredentialRow>(em, sql`select s.id, s.created_at,
    s.expires_at, s.last_used_at as last_used, null as scopes, null as max_preset, null as audiences, ${ACCOUNT_COLUMNS}
    from cli_session s join account a on a.id = s.account_id
   where s.token_hash = ${tokenHash} and s.revoked_at is null and s.expires_at > now() and a.disabled_at is null`));

/** The live browser session with this token digest, seen within `idleMs`, of an enabled account. */
export const browserSessionByDigest = (em: EntityManager, tokenHash: string, idleMs: number) => first(prepared<CredentialRow>(em, sql`select
    s.id, s.created_at, s.expires_at, s.last_seen_at as last_used, null as scopes, null as max_preset, null as audiences, ${ACCOUNT_COLUMNS}
    from browser_session s join account a on a.id = s.account_id
   where s.token_hash = ${tokenHash} and s.ended_at is null and s.expires_at > now()
     and s.last_seen_at > now() - (${idleMs} * interval '1 millisecond') and a.disabled_at is null`));

const TOUCHED: Record<LookupKind, Sql> = {
  apiKey: sql.raw('api_key set last_used_at = now()'),
  cli: sql.raw('cli_session set last_used_at = now()'),
  browser: sql.raw('browser_session set last_seen_at = now()'),
};

/** Records that the credential was used now. */
export async function touchCredential(em: EntityManager, kind: LookupKind, id: string): Promise<void> {
  await bound(em, sql`update ${TOUCHED[kind]} where id = ${id}`);
}
