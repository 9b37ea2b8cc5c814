import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../../lib/dispatch.ts';
import { updateConfigFile, type Settings } from '../config.ts';
import { CliFailure } from '../failure.ts';
import { ApiError, apiClient, type ApiClient, type Json } from '../http.ts';
import { fields, when, type Output } from '../output.ts';
import { bearerFor, defineCommand, flag, has, signInHint } from '../registry.ts';

// Sign-in (spec 3.2 and 4.1): the device flow, sign-out and who the stored credentials belong to.

/** Opens the URL in the user's browser when there is a person at a terminal; never fails. */
function openBrowser(url: string): boolean {
  if (!process.stderr.isTTY) return false;
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [url]]
      : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.on('error', () => {}); // no opener installed: the printed URL is enough
    child.unref();
    return true;
  } catch {
    return false;
  }
}

/** After expiresAt the service answers device_code_expired; this bound only guards against a silent one. */
const EXPIRY_GRACE_MS = 60_000;

/**
 * Polls the token route at the interval the service gives: 202 pending keeps waiting, 429 slow_down
 * adds five seconds to the interval for this and every later poll (RFC 8628, 3.5) or waits what
 * retry-after says if that is longer; any other error ends the sign-in with its code.
 */
async function pollForSession(api: ApiClient, device: Json, out: Output): Promise<Json> {
  let interval = Number(device.intervalSeconds) || 0;
  const expires = Date.parse(device.expiresAt);
  for (;;) {
    await sleep(Math.max(interval, 1) * 1000);
    if (Date.now() > expires + EXPIRY_GRACE_MS) throw new CliFailure('device_code_expired', 'the sign-in code expired before it was approved; run `cairn login` again');
    try {
      const res = await api.post('/v1/auth/cli/token', { deviceCode: device.deviceCode });
      if (res.status === 200) return res.body;
      interval = Number(res.body?.intervalSeconds ?? interval);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'slow_down')) throw err;
      interval = Math.max(interval + 5, Number(err.retryAfter) || 0);
      out.note(`The service asked for slower polling; checking every ${interval}s.`);
    }
  }
}

export const loginCommand = defineCommand({
  name: 'login',
  summary: 'Sign in with the device flow; stores the CLI session token (0600) in the config dir',
  usage: 'cairn login [--no-browser]',
  credential: 'none',
  options: { 'no-browser': flag },
  async run(ctx) {
    const { api, out, settings } = ctx;
    const clientName = `cairn CLI on ${hostname()}`.slice(0, 80);
    const device = (await api.post('/v1/auth/cli/device', { clientName })).body;
    out.note(`To sign in, open ${device.verificationUrl}\nand confirm the code: ${device.userCode}`);
    if (!has(ctx, 'no-browser') && openBrowser(device.verificationUrl)) out.note('(opening your browser)');
    out.note(`Waiting for approval; the code expires at ${when(device.expiresAt)}.`);
    const signedIn = await pollForSession(api, device, out);
    const session = { token: signedIn.cliSession.token as string, expiresAt: signedIn.cliSession.expiresAt as string, email: signedIn.account.email as string };
    const configFile = await updateConfigFile(ctx.env, (c) => {
      c.baseUrl = settings.baseUrl;
      c.sessions = { ...c.sessions, [settings.baseUrl]: session };
    });
    // Signing in again replaces the stored session: end the previous one on the service too, so no
    // forgotten token stays valid (best effort: it may have expired already).
    if (settings.session) await apiClient(settings.baseUrl, settings.session.token).delete('/v1/auth/cli/session').catch(() => {});
    // The token itself is never printed: it lives only in the config file.
    const result = { signedIn: true, baseUrl: settings.baseUrl, account: signedIn.account, expiresAt: session.expiresAt, configFile };
    out.result(result, () => `Signed in to ${settings.baseUrl} as ${session.email}.\nThe CLI session lasts until ${when(session.expiresAt)} and is stored in ${configFile}.`);
  },
});

async function forgetSession(env: NodeJS.ProcessEnv, settings: Settings): Promise<string> {
  return updateConfigFile(env, (c) => {
    if (c.sessions) delete c.sessions[settings.baseUrl];
  });
}

export const logoutCommand = defineCommand({
  name: 'logout',
  summary: 'End the CLI session on the service and remove the stored token (API keys stay valid)',
  usage: 'cairn logout',
  credential: 'none',
  async run(ctx) {
    const { out, settings } = ctx;
    if (!settings.session) {
      out.result({ signedOut: true, baseUrl: settings.baseUrl, serverSession: 'none' }, () => `Not signed in to ${settings.baseUrl}; nothing to do.`);
      return;
    }
    let serverSession = 'ended';
    try {
      await apiClient(settings.baseUrl, settings.session.token).delete('/v1/auth/cli/session');
    } catch (err) {
      // Already expired or revoked there: only the local copy is left to remove. Anything else (the
      // service unreachable) keeps the token, so a later logout can still end the session.
      if (!(err instanceof ApiError && err.status === 401)) throw err;
      serverSession = 'already_ended';
    }
    const configFile = await forgetSession(ctx.env, settings);
    out.result({ signedOut: true, baseUrl: settings.baseUrl, serverSession, configFile }, () =>
      serverSession === 'ended'
        ? `Signed out of ${settings.baseUrl}; the token was removed from ${configFile}. API keys stay valid.`
        : `The session had already ended on ${settings.baseUrl}; the stored token was removed from ${configFile}.`);
  },
});

export const whoamiCommand = defineCommand({
  name: 'whoami',
  summary: 'Show the signed-in account (CLI session) and the configured API key',
  usage: 'cairn whoami',
  credential: 'none',
  options: { 'api-key': { type: 'string' } },
  async run(ctx) {
    const { out, settings } = ctx;
    if (!settings.session && !settings.apiKey) throw new UsageError(signInHint(settings));
    const session = settings.session ? (await apiClient(settings.baseUrl, settings.session.token).get('/v1/auth/cli/session')).body : null;
    const access = settings.apiKey ? (await apiClient(settings.baseUrl, bearerFor('apiKey', settings)).get('/v1/access')).body : null;
    out.result({ baseUrl: settings.baseUrl, session, apiKey: access && { ...access, source: settings.apiKeySource } }, () =>
      fields([
        ['service', settings.baseUrl],
        ['signed in', session ? `${session.account.email} (CLI session until ${when(session.expiresAt)})` : 'no (run `cairn login`)'],
        ['API key', access ? `${access.key.name} (${access.key.prefix}…), account ${access.account.email}, from ${settings.apiKeySource}` : 'none configured'],
        ['scopes', access ? `${access.key.scopes.join(', ') || '(none)'}; max preset ${access.key.maxPreset}` : undefined],
      ]));
  },
});

export const authCommands = [loginCommand, logoutCommand, whoamiCommand];
