import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Preset, Scope } from '../contracts/account.ts';
import { ApiKey } from '../../platform/db/entities/index.ts';
import { notFound } from '../../platform/errors.ts';
import { API_KEY_PREFIX } from '../contracts/auth.ts';
import { digest, displayPrefix, newSecret } from './tokens.ts';

export function apiKeyRecord(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes as Scope[],
    maxPreset: k.maxPreset,
    audiences: (k.audiences as string[] | null | undefined) ?? null,
    status: k.revokedAt ? ('revoked' as const) : ('active' as const),
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
    replacedBy: k.rotatedTo ?? null,
  };
}

type KeyInput = { name: string; scopes: Scope[]; maxPreset: Preset; audiences?: string[] | null };

function newKey(em: EntityManager, accountId: string, input: KeyInput) {
  const secret = newSecret(API_KEY_PREFIX);
  const key = em.create(ApiKey, {
    id: randomUUID(),
    accountId,
    name: input.name,
    prefix: displayPrefix(secret),
    secretHash: digest(secret),
    scopes: input.scopes,
    maxPreset: input.maxPreset,
    audiences: input.audiences?.length ? input.audiences : null,
    createdAt: new Date(),
    lastUsedAt: null,
    revokedAt: null,
    rotatedTo: null,
  });
  return { key, secret };
}

export async function createApiKey(
  em: EntityManager,
  accountId: string,
  input: KeyInput,
) {
  const created = newKey(em, accountId, input);
  await em.flush();
  return created;
}

export async function listApiKeys(em: EntityManager, accountId: string) {
  return em.find(ApiKey, { accountId }, { orderBy: { createdAt: 'desc' }, limit: 500 });
}

/** The API key with this id (the calling key, so it exists). */
export async function getApiKey(em: EntityManager, id: string): Promise<ApiKey> {
  return em.findOneOrFail(ApiKey, { id });
}

/** Another account's key id is indistinguishable from an unknown one. */
async function ownKey(em: EntityManager, accountId: string, id: string) {
  const key = await em.findOne(ApiKey, { id, accountId });
  if (!key) throw notFound('No API key with this id.');
  return key;
}

export async function revokeApiKey(em: EntityManager, accountId: string, id: string) {
  const key = await ownKey(em, accountId, id);
  key.revokedAt ??= new Date();
  await em.flush();
  return key;
}

/** Issues a replacement with the same scopes and ceiling and revokes the old key, atomically. */
export async function rotateApiKey(em: EntityManager, accountId: string, id: string, name?: string) {
  return em.transactional(async (tx) => {
    const old = await tx.findOne(ApiKey, { id, accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!old || old.revokedAt) throw notFound('No active API key with this id.');
    const created = newKey(tx, accountId, {
      name: name ?? old.name,
      scopes: old.scopes as Scope[],
      maxPreset: old.maxPreset,
      audiences: (old.audiences as string[] | null | undefined) ?? null,
    });
    old.revokedAt = new Date();
    old.rotatedTo = created.key.id;
    return created;
  });
}
