import { randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../../platform/hash.ts';
import { API_KEY_PREFIX } from '../contracts/auth.ts';


/** 256 bits of randomness, base64url. */
export function newSecret(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

/**
 * The stored form of a high-entropy token. SHA-256 is right here (unlike for passwords): the input has
 * 256 bits of entropy, and a deterministic digest allows an indexed lookup well under a millisecond.
 */
export function digest(token: string): string {
  return sha256Hex(token);
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** No vowels (no words), no 0/O/1/I/U/V look-alikes: easy to read aloud and type. */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTWXZ23456789';

export function newUserCode(): string {
  const pick = () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  const part = () => Array.from({ length: 4 }, pick).join('');
  return `${part()}-${part()}`;
}

/** Accepts what a person types: lower case, spaces, a missing hyphen. */
export function normalizeUserCode(input: string): string {
  const compact = input.toUpperCase().replace(/[\s-]/g, '');
  return compact.length === 8 ? `${compact.slice(0, 4)}-${compact.slice(4)}` : input.toUpperCase().trim();
}

/** The short, non-secret part of an API key shown in lists ("cairn_sk_AbCd…"). */
export function displayPrefix(secret: string): string {
  return secret.slice(0, API_KEY_PREFIX.length + 6);
}
