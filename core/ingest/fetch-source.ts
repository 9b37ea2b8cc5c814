import { MAX_FILE_BYTES } from '../contracts/ingest.ts';
import { AppError } from '../../platform/errors.ts';
import { normalizeContentType } from './extract/decode.ts';
import type { SupportedContentType } from './extract/types.ts';
import { FetchRefusedError, safeFetch } from '../../platform/net/safe-fetch.ts';
import type { UrlPolicy } from '../../platform/net/url-safety.ts';

// Fetching a URL source: used by the preview (dry run) and by the build of a live url job.

/** The caller's input is refused: 400 invalid_ingest_request. */
export const invalidIngest = (message: string) => new AppError(400, 'invalid_ingest_request', message);

/** Content type of a fetched page: the header, else the URL's file extension. */
export function fetchedContentType(header: string | null, url: string): SupportedContentType | null {
  const fromHeader = normalizeContentType(header);
  if (fromHeader) return fromHeader;
  const ext = new URL(url).pathname.toLowerCase().match(/\.([a-z]+)$/)?.[1];
  const byExt: Record<string, SupportedContentType> = {
    pdf: 'application/pdf', md: 'text/markdown', markdown: 'text/markdown', txt: 'text/plain',
    html: 'text/html', htm: 'text/html', json: 'application/json',
  };
  return ext ? (byExt[ext] ?? null) : null;
}

export async function fetchSource(policy: UrlPolicy, url: URL, timeoutMs: number) {
  try {
    const res = await safeFetch(url, { policy, maxBytes: MAX_FILE_BYTES, timeoutMs });
    const contentType = fetchedContentType(res.contentType, res.finalUrl);
    return { ...res, supportedType: contentType };
  } catch (err) {
    if (err instanceof FetchRefusedError && (err.reason === 'blocked_address' || err.reason === 'bad_url')) {
      throw invalidIngest(err.publicMessage);
    }
    throw err;
  }
}
