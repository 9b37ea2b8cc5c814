import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../platform/errors.ts';
import { CONSOLE_DIST } from './build.ts';
import { CONSOLE_CSP, SECURITY_HEADERS } from './csp.ts';
import { CONSOLE_PAGES } from './pages.ts';

/**
 * Serves the built browser console: the HTML shell at each page path (/, /keys, …, /device) and the
 * bundle under /assets/. Everything it renders comes from the public HTTP routes (session cookie and
 * csrf header); this plugin only serves files. The build output is api/console/dist (see build.ts).
 */
export const consolePlugin: FastifyPluginAsync<{ dist?: string }> = async (app, opts) => {
  const dist = opts.dist ?? CONSOLE_DIST;
  const built = existsSync(path.join(dist, 'index.html'));
  if (!built) app.log.warn(`the browser console is not built (${dist}); run npm run console:build`);

  app.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });

  if (built) {
    await app.register(fastifyStatic, {
      root: dist,
      prefix: '/assets/',
      index: false,
      dotfiles: 'ignore',
      // Fixed file names: browsers revalidate with the ETag on each load.
      cacheControl: false,
      setHeaders: (reply) => reply.header('cache-control', 'no-cache'),
    });
  }

  const hide = { schema: { hide: true } };
  for (const page of CONSOLE_PAGES) {
    app.get(page.path, hide, async (_request, reply) => {
      if (!built) throw new AppError(503, 'service_unavailable', 'The browser console is not built on this server: run npm run console:build.');
      return reply.header('content-security-policy', CONSOLE_CSP).header('cache-control', 'no-cache').sendFile('index.html', dist);
    });
  }
};
