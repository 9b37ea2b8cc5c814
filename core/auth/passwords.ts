import { hash, verify } from '@node-rs/argon2';

/**
 * argon2id with the OWASP Password Storage Cheat Sheet's first recommended configuration:
 * m = 19 MiB, t = 2, p = 1. Parameters are stored in each hash (PHC string), so they can be raised
 * later without invalidating existing passwords.
 */
// algorithm 2 is Argon2id in @node-rs/argon2's (const enum) Algorithm.
export const ARGON2_PARAMS = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_PARAMS);
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies a password. With no stored hash (unknown email) it verifies against a dummy hash anyway, so
 * a wrong email and a wrong password take the same time and cannot be told apart.
 */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  dummyHash ??= hashPassword('cairn-dummy-password-for-timing');
  const target = storedHash ?? (await dummyHash);
  let ok: boolean;
  try {
    ok = await verify(target, password);
  } catch {
    ok = false; // a malformed stored hash never authenticates
  }
  return ok && storedHash !== undefined;
}
