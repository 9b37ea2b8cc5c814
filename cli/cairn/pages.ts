import { z } from 'zod';
import { parseFlags } from '../lib/dispatch.ts';
import type { Json } from './http.ts';
import { flag, str, type CommandContext } from './registry.ts';

// Paging for every list command, on the client side: `--limit N` and `--cursor C` ask the service for
// one page (the cursor is the `next_cursor`/`nextCursor` a previous page printed), `--all` follows the
// cursors to the end and prints one result with every item. A page that is not the last says on
// stderr how to get the next one, so a list never stops short without a word.

export const PAGE_OPTIONS = { limit: str, cursor: str, all: flag } as const;
export const PAGE_USAGE = '[--limit N] [--cursor CURSOR | --all]';

const PageFlags = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  cursor: z.string().min(1).max(400).optional(),
  all: z.boolean().optional(),
});

export type PageRequest = { limit?: number; cursor?: string };

/** Where a page response keeps its items and its next cursor. */
export type PageShape = { items: string; next(body: Json): string | null };
/** Native memory pages (spec 4.5 PagePeer, …): `items`, `pagination.next_cursor`. */
export const MEMORY_PAGE: PageShape = { items: 'items', next: (b) => (b.pagination?.has_more ? b.pagination.next_cursor : null) };
/** The ingest job list (spec 2.2): `jobs`, `pagination.nextCursor`. */
export const JOB_PAGE: PageShape = { items: 'jobs', next: (b) => (b.pagination?.hasMore ? b.pagination.nextCursor : null) };

/**
 * Reads the page the flags ask for, or every page from there with --all (then the response is the
 * last page's with all the items and `returned` counting them). `again` is the command line to repeat
 * with --cursor.
 */
export async function readPages(ctx: CommandContext, shape: PageShape, fetch: (page: PageRequest) => Promise<Json>, again: string): Promise<Json> {
  const f = parseFlags(PageFlags, ctx.args);
  let body = await fetch({ limit: f.limit, cursor: f.cursor });
  if (!f.all) {
    const next = shape.next(body);
    if (next) ctx.out.note(`More: ${again} --cursor ${next} (or --all for every page)`);
    return body;
  }
  const items: Json[] = [...body[shape.items]];
  for (let next = shape.next(body); next; next = shape.next(body)) {
    body = await fetch({ limit: f.limit, cursor: next });
    items.push(...body[shape.items]);
  }
  return { ...body, [shape.items]: items, pagination: { ...body.pagination, returned: items.length } };
}
