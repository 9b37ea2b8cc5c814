import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { getAccount } from '../../../core/auth/accounts.ts';
import { endBrowserSession, getBrowserSession, login, sessionTimes } from '../../../core/auth/sessions.ts';
import type { Config } from '../../../platform/config.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { AuthResponse, AuthSessionStatus, LoginRequest, SignOutResponse } from '../../../core/contracts/auth.ts';
import { clearSessionCookie, SESSION_COOKIE, setSessionCookie } from '../../plugins/auth.ts';

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 429: ErrorEnvelope };

const SIGNED_OUT = {
  schemaVersion: 'service-auth-session-v2' as const,
  signedIn: false,
  accountState: 'signed_out' as const,
  account: null,
  session: null,
  linkedProviders: null,
};

export const authRoutes: FastifyPluginAsyncZod<{ config: Config }> = async (app, { config }) => {
  app.post(
    '/v1/auth/login',
    {
      config: { auth: { accept: [], optional: true, csrf: 'always' } },
      schema: {
        tags: ['sign-in'],
        summary: 'Sign in with email and password (browser session)',
        body: LoginRequest,
        response: { 200: AuthResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { token, session, account } = await login(request.em, config.auth, {
        email: request.body.email,
        password: request.body.password,
        clientAddress: request.ip,
      });
      setSessionCookie(reply, token, session.expiresAt, config.publicBaseUrl);
      return {
        schemaVersion: 'service-email-auth-v1' as const,
        account: { email: account.email, displayName: account.displayName ?? null },
        session: sessionTimes(session),
        auth: { provider: 'email' as const, email: account.email, mode: 'login' as const },
      };
    },
  );

  app.get(
    '/v1/auth/session',
    {
      config: { auth: { accept: ['browser'], optional: true, allowPending: true } },
      schema: {
        tags: ['sign-in'],
        summary: 'Browser session status',
        response: { 200: AuthSessionStatus, ...errors },
      },
    },
    async (request) => {
      const p = request.principal;
      if (!p) return SIGNED_OUT;
      const [account, session] = await Promise.all([
        getAccount(request.em, p.accountId),
        getBrowserSession(request.em, p.credentialId),
      ]);
      const pending = account.state === 'deletion_pending';
      return {
        schemaVersion: 'service-auth-session-v2' as const,
        signedIn: true,
        accountState: account.state,
        account: { email: account.email, displayName: account.displayName ?? null },
        session: sessionTimes(session),
        // Deletion-pending sessions have recovery-only authority: no provider linking (spec 2.1 table).
        linkedProviders: pending ? null : account.linkedProviders,
      };
    },
  );

  app.delete(
    '/v1/auth/session',
    {
      config: { auth: { accept: ['browser'], optional: true, csrf: 'always', allowPending: true } },
      schema: { tags: ['sign-in'], summary: 'Sign out', response: { 200: SignOutResponse, ...errors } },
    },
    async (request, reply) => {
      const token = request.cookies[SESSION_COOKIE];
      const ended = token ? await endBrowserSession(request.em, token) : false;
      clearSessionCookie(reply, config.publicBaseUrl);
      return { schemaVersion: 'service-auth-session-v2' as const, ok: ended };
    },
  );
};
