import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { storedSecrets, storeSecretsOnce } from './secrets.queries.ts';

export type OauthSecrets = {
  /** Private JWKs the authorization server signs ID tokens with (RS256, the OpenID default). */
  jwks: { keys: Record<string, unknown>[] };
  /** Keys signing the authorization server's cookies (interaction and its short session). */
  cookieKeys: string[];
};

function generate(): OauthSecrets {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
  return { jwks: { keys: [jwk] }, cookieKeys: [randomBytes(32).toString('base64url')] };
}

/**
 * The authorization server's key material, shared by every API process: the first process to start
 * generates it and stores it (insert ... on conflict do nothing), every process then reads the stored
 * row, so tokens and cookies made by one process verify in another.
 */
export async function loadOauthSecrets(em: EntityManager): Promise<OauthSecrets> {
  await storeSecretsOnce(em, JSON.stringify(generate()));
  return storedSecrets<OauthSecrets>(em);
}
