import { createHash } from 'node:crypto';

/**
 * Account affinity behind a balancer (docs/operations.md, Production shape): an API answers every
 * authenticated request with the account's home key in this header, so that a balancer can send the
 * account's later requests to the same API process, which then holds the account's index copy alone.
 * The key is a digest of the account id, not the id; the cluster's balancer strips it.
 */
export const HOME_HEADER = 'x-cairn-home';

export function accountHome(accountId: string): string {
  return createHash('sha256').update(accountId).digest('base64url').slice(0, 16);
}

/**
 * Rendezvous (highest random weight) hashing: the candidate with the highest digest of key + name.
 * Every balancer picks the same one for a key; when it is down, its keys spread over the others and
 * come back when it returns, while every other key stays where it was.
 */
export function rendezvous<T extends { name: string }>(key: string, candidates: readonly T[]): T | undefined {
  let best: T | undefined;
  let bestWeight = '';
  for (const c of candidates) {
    const weight = createHash('sha1').update(key).update('\0').update(c.name).digest('hex');
    if (best === undefined || weight > bestWeight) [best, bestWeight] = [c, weight];
  }
  return best;
}
