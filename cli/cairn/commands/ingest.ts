import { randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { CONTENT_TYPES, MAX_FILE_BYTES } from '../../../core/contracts/ingest.ts';
import { parseFlags, UsageError } from '../../lib/dispatch.ts';
import { CliFailure } from '../failure.ts';
import type { ApiClient, Json } from '../http.ts';
import { fields, table, tree, when } from '../output.ts';
import { JOB_PAGE, PAGE_OPTIONS, PAGE_USAGE, readPages, type PageRequest } from '../pages.ts';
import { defineCommand, flag, str, type CommandContext } from '../registry.ts';
import { waitTimeoutMs, waitUntil, WAIT_OPTIONS } from '../wait.ts';

// Ingest (spec 4.3): dry-run plans by default, live submissions with a dated-at day and an idempotency
// key, job status and source deletion; --wait follows a job until it ends.

const TERMINAL = new Set(['succeeded', 'failed', 'quarantined']);

const jobLine = (j: Json) =>
  `job ${j.id}: ${j.status}${j.attempts ? ` (attempt ${j.attempts})` : ''}${j.failure ? ` - ${j.failure.message}` : ''}`;

/** What a job was about: the file name or URL it was given; a deletion names its source. */
const jobSubject = (j: Json) => j.filename ?? j.sourceUrl ?? (j.sourceId ? `source ${j.sourceId}` : null);

const jobFields = (j: Json): [string, unknown][] => [
  ['job', j.id],
  ['kind', j.kind],
  ['source', jobSubject(j) ?? undefined],
  ['title', j.title ?? undefined],
  ['status', j.status],
  ['attempts', j.attempts],
  ['created', when(j.createdAt)],
  ['completed', when(j.completedAt)],
  ['records', j.records ? `${j.records.total} (${j.records.sourceExcerpts} excerpts, ${j.records.facts} facts, ${j.records.links} links)` : undefined],
  ['failure', j.failure ? `${j.failure.message} (${j.failure.retryable ? 'retryable' : 'not retryable'}, ${when(j.failure.failedAt)})` : undefined],
];

/**
 * With --wait: follows the job until it ends, returning the response with the job as it ended; a job
 * that ends failed or quarantined fails the command (exit 1) after its result is printed.
 */
async function followJob(ctx: CommandContext, response: Json): Promise<void> {
  let body = response;
  if (ctx.args.values.wait === true) {
    const timeoutMs = waitTimeoutMs(ctx.args.values.timeout as string | undefined);
    const job = await waitUntil({
      read: async () => (await ctx.api.get(`/v1/ingest/jobs/${response.job.id}`)).body.job,
      done: (j: Json) => TERMINAL.has(j.status),
      describe: jobLine,
      out: ctx.out,
      timeoutMs,
      what: `job ${response.job.id}`,
    });
    body = { ...response, job };
  }
  const job = body.job;
  ctx.out.result(body, () => {
    const head = body.created === false ? 'This idempotency key already had a job; here it is.' : null;
    const tail = TERMINAL.has(job.status) || ctx.args.values.wait === true ? null : `Follow it with \`cairn jobs show ${job.id} --wait\`.`;
    return [head, fields(jobFields(job)), tail].filter(Boolean).join('\n');
  });
  if (ctx.args.values.wait === true && job.status !== 'succeeded') {
    throw new CliFailure('job_failed', `job ${job.id} ended ${job.status}${job.failure ? `: ${job.failure.message}` : ''}`, { resultPrinted: true });
  }
}

/** The local calendar day, YYYY-MM-DD: the default datedAt of a live submission. */
function today(): string {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

const liveFlags = z.object({
  live: z.boolean().optional(),
  'dated-at': z.iso.date('YYYY-MM-DD').optional(),
  'idempotency-key': z.string().min(8).max(160).optional(),
  wait: z.boolean().optional(),
});

/** Submits a URL or file request: the plan in a dry run, or the queued job (followed with --wait). */
async function submit(ctx: CommandContext, route: string, request: Record<string, unknown>, subject: string): Promise<void> {
  const f = parseFlags(liveFlags, ctx.args);
  if (!f.live) {
    if (f.wait || f['dated-at'] || f['idempotency-key']) throw new UsageError('--wait, --dated-at and --idempotency-key apply to --live submissions only');
    const body = (await ctx.api.post(route, { ...request, dryRun: true })).body;
    const { summary, ...rest } = body.plan;
    ctx.out.result(body, () => `Dry run for ${subject} (nothing was stored):\n${summary}\n\n${tree(rest, 2)}\n\nTo queue it: add --live (and --wait to follow the job).`);
    return;
  }
  const live = { dryRun: false, datedAt: f['dated-at'] ?? today(), idempotencyKey: f['idempotency-key'] ?? `cairn-cli-${randomUUID()}` };
  const res = await ctx.api.post(route, { ...request, ...live });
  ctx.out.note(`Queued ${subject} (datedAt ${live.datedAt}, idempotency key ${live.idempotencyKey}).`);
  await followJob(ctx, { ...res.body, request: live });
}

const LIVE_OPTIONS = { live: flag, 'dated-at': str, 'idempotency-key': str, ...WAIT_OPTIONS };
const LIVE_USAGE = '[--live [--dated-at YYYY-MM-DD] [--idempotency-key KEY] [--wait [--timeout S]]]';

export const ingestUrlCommand = defineCommand({
  name: 'ingest url',
  summary: 'Plan (dry run, default) or queue (--live) the ingest of a public URL',
  usage: `cairn ingest url URL ${LIVE_USAGE}`,
  positionals: ['URL'],
  credential: 'apiKeyOrSession',
  options: LIVE_OPTIONS,
  run: (ctx) => submit(ctx, '/v1/ingest/url', { url: ctx.args.positionals[0] }, ctx.args.positionals[0]!),
});

const BY_EXTENSION: Record<string, (typeof CONTENT_TYPES)[number]> = {
  '.pdf': 'application/pdf',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.text': 'text/plain',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.json': 'application/json',
};

export const ingestFileCommand = defineCommand({
  name: 'ingest file',
  summary: 'Plan (dry run, default) or queue (--live) the ingest of a local file',
  usage: `cairn ingest file PATH [--content-type TYPE] [--filename NAME] ${LIVE_USAGE}`,
  positionals: ['PATH'],
  credential: 'apiKeyOrSession',
  options: { 'content-type': str, filename: str, ...LIVE_OPTIONS },
  async run(ctx) {
    const file = ctx.args.positionals[0]!;
    const f = parseFlags(z.object({ 'content-type': z.enum(CONTENT_TYPES).optional(), filename: z.string().trim().min(1).max(255).optional() }), ctx.args);
    const contentType = f['content-type'] ?? BY_EXTENSION[path.extname(file).toLowerCase()];
    if (!contentType) throw new UsageError(`cannot tell the content type of ${file} from its extension: pass --content-type (${CONTENT_TYPES.join(', ')})`);
    const size = await stat(file).then((s) => s.size, (err: Error) => {
      throw new UsageError(`cannot read ${file}: ${err.message}`);
    });
    // The service would answer 413 too, but only after the whole upload.
    if (size > MAX_FILE_BYTES) throw new CliFailure('payload_too_large', `${file} has ${size} bytes; the limit is ${MAX_FILE_BYTES}`);
    const bytes = await readFile(file);
    const request = { filename: f.filename ?? path.basename(file), contentType, contentBase64: bytes.toString('base64') };
    await submit(ctx, '/v1/ingest/file', request, `${file} (${contentType}, ${size} bytes)`);
  },
});

export const jobsListCommand = defineCommand({
  name: 'jobs',
  summary: 'List ingest jobs, newest first, with the file name or URL each was about',
  usage: `cairn jobs ${PAGE_USAGE}`,
  credential: 'apiKeyOrSession',
  options: PAGE_OPTIONS,
  async run(ctx) {
    const fetch = async (p: PageRequest) => (await ctx.api.get('/v1/ingest/jobs', { limit: p.limit, cursor: p.cursor })).body;
    const body = await readPages(ctx, JOB_PAGE, fetch, 'cairn jobs');
    ctx.out.result(body, () => {
      if (body.jobs.length === 0) return 'No ingest jobs.';
      const rows = body.jobs.map((j: Json) => [j.id, j.kind, j.status, jobSubject(j), when(j.createdAt), when(j.completedAt), j.failure?.message]);
      return table(['ID', 'KIND', 'STATUS', 'SOURCE', 'CREATED', 'COMPLETED', 'FAILURE'], rows);
    });
  },
});

const readJob = async (api: ApiClient, id: string) => (await api.get(`/v1/ingest/jobs/${encodeURIComponent(id)}`)).body;

export const jobsShowCommand = defineCommand({
  name: 'jobs show',
  summary: 'Show one ingest job; --wait follows it until it ends',
  usage: 'cairn jobs show ID [--wait [--timeout S]]',
  positionals: ['ID'],
  credential: 'apiKeyOrSession',
  options: WAIT_OPTIONS,
  async run(ctx) {
    await followJob(ctx, await readJob(ctx.api, ctx.args.positionals[0]!));
  },
});

export const sourcesDeleteCommand = defineCommand({
  name: 'sources delete',
  summary: 'Delete a source (id = the ingest job that created it); --wait follows the deletion job',
  usage: 'cairn sources delete ID [--wait [--timeout S]]',
  positionals: ['ID'],
  credential: 'apiKeyOrSession',
  options: WAIT_OPTIONS,
  async run(ctx) {
    await followJob(ctx, (await ctx.api.delete(`/v1/sources/${encodeURIComponent(ctx.args.positionals[0]!)}`)).body);
  },
});

export const ingestCommands = [ingestUrlCommand, ingestFileCommand, jobsListCommand, jobsShowCommand, sourcesDeleteCommand];
