import { hash } from 'node:crypto';

/**
 * A UUID (version 5 layout) derived from a name: the same name always gives the same id, which makes
 * writes repeatable (upserts keyed by deterministic ids).
 */
export function deterministicUuid(name: string): string {
  // One-shot hash(): about twice as fast as createHash() for short names (ingest derives one id per record).
  const h = hash('sha1', name, 'buffer');
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
