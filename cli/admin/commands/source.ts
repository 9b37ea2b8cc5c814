import { z } from 'zod';
import { releaseSource } from '../../../core/ingest/build/build.ts';
import { parseFlags, UsageError, type AdminCommand } from '../registry.ts';

export const sourceReleaseCommand: AdminCommand = {
  name: 'source release',
  summary: 'Release a quarantined source (after review) so that it is used for answers.',
  usage: 'source release --id SOURCE_ID',
  options: { id: { type: 'string' } },
  async run(ctx, args) {
    const { id } = parseFlags(z.object({ id: z.uuid() }), args);
    if (!(await releaseSource(ctx.orm.em.fork(), id))) throw new UsageError(`No quarantined source ${id}.`);
    ctx.out({ id, status: 'active' });
  },
};
