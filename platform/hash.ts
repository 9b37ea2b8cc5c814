import { createHash, hash } from 'node:crypto';

// The digests Cairn stores and compares. Every sha256 in the product is one of these.

/** sha256 (hex) of text (UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/** JSON with object keys sorted and undefined members dropped: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object' && !(v instanceof Date)
        ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, canonical(x)]))
        : v;
  return JSON.stringify(canonical(value));
}

/** ASCII text is its own NFC, and normalize() would copy it all the same. */
const nfc = (text: string) => (/[\u0080-\uffff]/.test(text) ? text.normalize('NFC') : text);

const WHITESPACE = /\s/g;

/** Small enough that each piece's normalized copies are young objects, freed by the next scavenge. */
const HASH_PIECE_CHARS = 1 << 15;

/**
 * sha256 (hex) of the text with whitespace collapsed and trimmed (and Unicode NFC), for deduplication.
 * Long texts are hashed in pieces cut before a whitespace character (nothing composes across one), so
 * a 50 MB document does not need several full-size normalized copies at once; the digest is the same.
 */
export function contentHash(text: string, pieceChars = HASH_PIECE_CHARS): string {
  // One piece (every record): the same digest in one call, with the cheaper one-shot hash().
  if (text.length <= pieceChars) return sha256Hex(nfc(text).replace(/\s+/g, ' ').trim());
  const h = createHash('sha256');
  let started = false;
  let pendingSpace = false;
  for (let from = 0; from < text.length; ) {
    let to = Math.min(text.length, from + pieceChars);
    // The next whitespace character at or after `to` (one search, not a test per character).
    if (to < text.length) {
      WHITESPACE.lastIndex = to;
      to = WHITESPACE.exec(text)?.index ?? text.length;
    }
    let body = nfc(text.slice(from, to)).replace(/\s+/g, ' ');
    from = to;
    if (body.startsWith(' ')) {
      pendingSpace = true;
      body = body.slice(1);
    }
    const trailing = body.endsWith(' ');
    if (trailing) body = body.slice(0, -1);
    if (body) {
      if (started && pendingSpace) h.update(' ');
      h.update(body);
      started = true;
      pendingSpace = false;
    }
    if (trailing) pendingSpace = true;
  }
  return h.digest('hex');
}
