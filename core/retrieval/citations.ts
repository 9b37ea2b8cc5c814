import { createCipheriv, createDecipheriv, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { citationKey } from './citations.queries.ts';

/**
 * Citation handles: `cit_` + base64url(iv | AES-256-GCM(kind, row id) | tag), sealed with a secret kept
 * in the database (query_secret) and bound to the account as additional authenticated data. A handle
 * therefore opens only for the account that received it, reveals no internal id, and cannot be forged.
 * The IV is derived from the content (HMAC), so the same evidence always gets the same handle.
 */

export type CitedRef = { table: 'record' | 'message' | 'claim'; id: string };

const TABLE_CODE = { record: 1, message: 2, claim: 3 } as const;
const CODE_TABLE = new Map<number, CitedRef['table']>(Object.entries(TABLE_CODE).map(([k, v]) => [v, k as CitedRef['table']]));

/**
 * Citation handles with their caches, made once per process (buildApp) and given to each query, like
 * the search index. `key` loads the database's key once (it never changes once created: a round trip
 * per query saved). `seal` keeps the most recent SEALED_MAX handles of each key: a handle is a function
 * of the key, the account and the row alone, and queries seal one per piece of evidence, much of it the
 * same evidence again, so a repeat spares an HMAC and a cipher setup. `open` reuses the key's KeyObject.
 */
export type Citations = {
  key(em: EntityManager): Promise<Buffer>;
  seal(key: Buffer, accountId: string, ref: CitedRef): string;
  open(key: Buffer, accountId: string, handle: string): CitedRef | null;
};

const SEALED_MAX = 50_000;

export function createCitations(): Citations {
  const keys = new Map<string, Promise<Buffer>>();
  // Per key, made once: createHmac and createCipheriv would build a KeyObject from a Buffer key on every call.
  const perKey = new WeakMap<Buffer, { keyObject: KeyObject; sealed: Map<string, string> }>();
  const forKey = (key: Buffer) => {
    let k = perKey.get(key);
    if (!k) perKey.set(key, (k = { keyObject: createSecretKey(key), sealed: new Map() }));
    return k;
  };
  return {
    key(em) {
      const id = `${em.config.get('clientUrl') ?? ''}/${em.config.get('dbName') ?? ''}`;
      let key = keys.get(id);
      if (!key) {
        key = citationKey(em.fork(), randomBytes(32));
        keys.set(id, key);
        key.catch(() => keys.delete(id));
      }
      return key;
    },
    seal(key, accountId, ref) {
      const { keyObject, sealed } = forKey(key);
      const id = `${accountId}/${TABLE_CODE[ref.table]}/${ref.id}`;
      let handle = sealed.get(id);
      if (handle === undefined) {
        handle = seal(keyObject, accountId, ref);
        if (sealed.size >= SEALED_MAX) sealed.delete(sealed.keys().next().value!);
        sealed.set(id, handle);
      }
      return handle;
    },
    open: (key, accountId, handle) => open(forKey(key).keyObject, accountId, handle),
  };
}

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidText = (b: Buffer) => {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** The handle of `ref` for this account (no cache: Citations.seal keeps one). */
export const sealCitation = (key: Buffer, accountId: string, ref: CitedRef): string => seal(createSecretKey(key), accountId, ref);

function seal(k: KeyObject, accountId: string, ref: CitedRef): string {
  const plain = Buffer.concat([Buffer.from([TABLE_CODE[ref.table]]), uuidBytes(ref.id)]);
  const aad = Buffer.from(accountId);
  const iv = createHmac('sha256', k).update(aad).update(plain).digest().subarray(0, 12);
  const cipher = createCipheriv('aes-256-gcm', k, iv);
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return `cit_${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
}

/** The evidence a handle names, or null when it is malformed, forged or sealed for another account. */
export const openCitation = (key: Buffer, accountId: string, handle: string): CitedRef | null => open(createSecretKey(key), accountId, handle);

function open(k: KeyObject, accountId: string, handle: string): CitedRef | null {
  if (!handle.startsWith('cit_')) return null;
  const raw = Buffer.from(handle.slice(4), 'base64url');
  if (raw.length !== 12 + 17 + 16) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', k, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(accountId));
    decipher.setAuthTag(raw.subarray(29));
    const plain = Buffer.concat([decipher.update(raw.subarray(12, 29)), decipher.final()]);
    const table = CODE_TABLE.get(plain[0]!);
    return table ? { table, id: uuidText(plain.subarray(1)) } : null;
  } catch {
    return null; // authentication failed: forged, altered or another account's handle
  }
}
