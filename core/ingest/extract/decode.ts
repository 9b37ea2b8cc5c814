/**
 * Content-type normalisation, content sniffing and text decoding.
 */
import { ExtractionError, SUPPORTED_CONTENT_TYPES, type SupportedContentType } from './types.ts';

const ALIASES: Record<string, SupportedContentType> = {
  'application/pdf': 'application/pdf',
  'application/x-pdf': 'application/pdf',
  'text/markdown': 'text/markdown',
  'text/x-markdown': 'text/markdown',
  'text/md': 'text/markdown',
  'text/x-gfm': 'text/markdown',
  'application/markdown': 'text/markdown',
  'application/x-markdown': 'text/markdown',
  'text/plain': 'text/plain',
  'text/html': 'text/html',
  'application/xhtml+xml': 'text/html',
  'application/json': 'application/json',
  'text/json': 'application/json',
  'application/x-json': 'application/json',
};

/** 'text/html; charset=utf-8' -> 'text/html'; 'text/x-markdown' -> 'text/markdown'; unknown -> null. */
export function normalizeContentType(header: string | null | undefined): SupportedContentType | null {
  if (typeof header !== 'string') return null;
  const essence = header.split(';', 1)[0]!.trim().toLowerCase();
  if (!essence) return null;
  return ALIASES[essence] ?? null;
}

export function isSupportedContentType(v: unknown): v is SupportedContentType {
  return typeof v === 'string' && (SUPPORTED_CONTENT_TYPES as readonly string[]).includes(v);
}

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-

/** True when %PDF- occurs within the first 1024 bytes (where readers look for the header). */
export function hasPdfMagic(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length - PDF_MAGIC.length, 1024);
  outer: for (let i = 0; i <= n; i++) {
    for (let j = 0; j < PDF_MAGIC.length; j++) if (bytes[i + j] !== PDF_MAGIC[j]) continue outer;
    return true;
  }
  return false;
}

function startsWithPdfMagic(bytes: Uint8Array): boolean {
  let i = 0;
  // Skip a UTF-8 BOM and leading whitespace.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) i = 3;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i++;
  return PDF_MAGIC.every((b, j) => bytes[i + j] === b);
}

const mismatch = (detail: string) => new ExtractionError('type_mismatch', undefined, { detail });

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The charset an HTML document declares in its first bytes (BOM or <meta>), lower-cased. */
function declaredHtmlCharset(bytes: Uint8Array): string | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if ((bytes[0] === 0xfe && bytes[1] === 0xff) || (bytes[0] === 0xff && bytes[1] === 0xfe)) return 'utf-16';
  const head = Buffer.from(bytes.subarray(0, 2048)).toString('latin1');
  // <meta charset="x">, or charset=x inside <meta http-equiv ... content="text/html; charset=x">.
  for (const tag of head.match(/<meta\b[^<>]*/gi) ?? []) {
    const m = /charset\s*=[\s"']*([\w:.-]+)/i.exec(tag);
    if (m) return m[1]!.toLowerCase();
  }
  return null;
}

function decoderFor(label: string): TextDecoder | null {
  try {
    return new TextDecoder(label);
  } catch {
    // Unknown label: the caller falls back to UTF-8.
    return null;
  }
}

/**
 * Decodes a text document, rejecting binary content. Markdown, plain text and JSON must be UTF-8
 * (a BOM is allowed); HTML may declare another charset with a BOM or <meta charset>.
 */
export function decodeText(bytes: Uint8Array, declared: SupportedContentType): string {
  if (startsWithPdfMagic(bytes)) throw mismatch(`a PDF file was declared as ${declared}`);
  if (declared === 'text/html') {
    const cs = declaredHtmlCharset(bytes);
    if (cs && cs !== 'utf-8' && cs !== 'utf8' && cs !== 'unicode-1-1-utf-8') {
      // UTF-16 is only trusted with a byte order mark (handled below); a <meta> claiming it is wrong.
      const dec = cs.startsWith('utf-16') ? null : decoderFor(cs);
      if (dec && dec.encoding !== 'utf-8') {
        if (bytes.includes(0)) throw mismatch('binary content (NUL bytes) was declared as text/html');
        return dec.decode(bytes);
      }
    }
  }
  let text: string;
  const utf16 = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : null;
  if (utf16) {
    // Text saved as "Unicode" (UTF-16 with a byte order mark).
    try {
      text = new TextDecoder(utf16, { fatal: true }).decode(bytes);
    } catch {
      throw mismatch(`content declared as ${declared} is not valid ${utf16.toUpperCase()}`);
    }
  } else {
    if (bytes.includes(0)) throw mismatch(`binary content (NUL bytes) was declared as ${declared}`);
    try {
      text = utf8.decode(bytes);
    } catch {
      throw mismatch(`content declared as ${declared} is not valid UTF-8`);
    }
  }
  // Mostly control characters: binary data that happens to be valid UTF-8.
  let controls = 0;
  const sample = Math.min(text.length, 65_536);
  for (let i = 0; i < sample; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) || c === 0x7f) controls++;
  }
  if (sample > 0 && controls / sample > 0.1) throw mismatch(`binary content was declared as ${declared}`);
  return text;
}

/** Parses JSON bytes, or throws type_mismatch. */
export function parseJsonBytes(bytes: Uint8Array): unknown {
  const text = decodeText(bytes, 'application/json');
  if (!text.trim()) throw new ExtractionError('empty');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw mismatch(`content declared as application/json does not parse: ${(e as Error).message.slice(0, 120)}`);
  }
}

/**
 * Throws ExtractionError('type_mismatch') when the bytes cannot be what `declared` says: a "PDF"
 * without the %PDF- header, JSON that does not parse, or binary content declared as text.
 */
export function assertContentMatches(bytes: Uint8Array, declared: SupportedContentType): void {
  if (!isSupportedContentType(declared)) throw new ExtractionError('unsupported');
  // Nothing to contradict the declared type; extract() reports an empty document.
  if (bytes.length === 0) return;
  if (declared === 'application/pdf') {
    if (!hasPdfMagic(bytes)) throw mismatch('content declared as application/pdf has no %PDF- header');
    return;
  }
  if (declared === 'application/json') {
    const text = decodeText(bytes, declared);
    if (!text.trim()) return;
    try {
      JSON.parse(text);
    } catch (e) {
      throw mismatch(`content declared as application/json does not parse: ${(e as Error).message.slice(0, 120)}`);
    }
    return;
  }
  decodeText(bytes, declared);
}
