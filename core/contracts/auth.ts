import { z } from 'zod';

// Wire shapes of spec section 2.1. `strictObject` = a closed record (unknown fields rejected on input);
// on output zod keeps only declared fields, so responses are whitelisted.

/** Recognisable prefixes: a leaked secret is easy to identify and route to the right lookup. */
export const API_KEY_PREFIX = 'cairn_sk_';
export const CLI_TOKEN_PREFIX = 'cairn_cli_';

export const PASSWORD_MIN = 15;
export const PASSWORD_MAX = 128;

export const Email = z.email().max(254);
export const DateTime = z.iso.datetime({ offset: true });

export const LoginRequest = z
  .strictObject({ email: Email, password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX) })
  .meta({ id: 'LoginRequest' });

export const AuthAccount = z
  .strictObject({ email: Email, displayName: z.string().nullable() })
  .meta({ id: 'AuthAccount' });

export const SessionTimes = z.strictObject({ issuedAt: DateTime, expiresAt: DateTime });

export const AuthResponse = z
  .strictObject({
    schemaVersion: z.literal('service-email-auth-v1'),
    account: AuthAccount,
    session: SessionTimes,
    auth: z.strictObject({ provider: z.literal('email'), email: Email, mode: z.literal('login') }),
  })
  .meta({ id: 'AuthResponse' });

export const LinkedProviders = z.strictObject({ google: z.boolean(), github: z.boolean() });

export const AuthSessionStatus = z
  .strictObject({
    schemaVersion: z.literal('service-auth-session-v2'),
    signedIn: z.boolean(),
    accountState: z.enum(['signed_out', 'active', 'deletion_pending']),
    account: AuthAccount.nullable(),
    session: SessionTimes.nullable(),
    linkedProviders: LinkedProviders.nullable(),
  })
  .meta({ id: 'AuthSessionStatus' });

export const SignOutResponse = z
  .strictObject({ schemaVersion: z.literal('service-auth-session-v2'), ok: z.boolean() })
  .meta({ id: 'SignOutResponse' });

// CLI device sign-in (3.2)

export const CliDeviceAuthorizationRequest = z
  .strictObject({ clientName: z.string().min(1).max(80).optional() })
  .meta({ id: 'CliDeviceAuthorizationRequest' });

export const CliDeviceAuthorizationResponse = z
  .strictObject({
    schemaVersion: z.literal('service-cli-device-authorization-v1'),
    deviceCode: z.string(),
    userCode: z.string().regex(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/),
    verificationUrl: z.url(),
    expiresAt: DateTime,
    intervalSeconds: z.int().min(0),
  })
  .meta({ id: 'CliDeviceAuthorizationResponse' });

export const CliDeviceApprovalRequest = z
  .strictObject({ userCode: z.string().min(1).max(32) })
  .meta({ id: 'CliDeviceApprovalRequest' });

export const CliDeviceApprovalResponse = z
  .strictObject({
    schemaVersion: z.literal('service-cli-device-approval-v1'),
    approved: z.literal(true),
    userCode: z.string(),
    expiresAt: DateTime,
  })
  .meta({ id: 'CliDeviceApprovalResponse' });

export const CliDeviceTokenRequest = z
  .strictObject({ deviceCode: z.string().min(1).max(200) })
  .meta({ id: 'CliDeviceTokenRequest' });

export const CliDeviceTokenPendingResponse = z
  .strictObject({
    schemaVersion: z.literal('service-cli-device-token-v1'),
    status: z.literal('pending'),
    expiresAt: DateTime,
    intervalSeconds: z.int().min(0),
  })
  .meta({ id: 'CliDeviceTokenPendingResponse' });

/** The CLI account object (spec: "fields not shown"): the same two fields as AuthAccount. */
export const CliAccount = AuthAccount.meta({ id: 'CliAccount' });

export const CliSessionResponse = z
  .strictObject({
    schemaVersion: z.literal('service-cli-session-v1'),
    cliSession: z.strictObject({ token: z.string(), expiresAt: DateTime }),
    account: CliAccount,
  })
  .meta({ id: 'CliSessionResponse' });

export const CliAuthStatus = z
  .strictObject({
    schemaVersion: z.literal('service-cli-auth-v1'),
    signedIn: z.boolean(),
    account: CliAccount.nullable(),
    expiresAt: DateTime.nullable(),
  })
  .meta({ id: 'CliAuthStatus' });

export const CliLogoutResponse = z
  .strictObject({ schemaVersion: z.literal('service-cli-logout-v1'), ok: z.boolean() })
  .meta({ id: 'CliLogoutResponse' });

export const PasswordChangeRequest = z
  .strictObject({
    currentPassword: z.string().min(1).max(PASSWORD_MAX),
    newPassword: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX),
  })
  .meta({ id: 'PasswordChangeRequest' });

export const PasswordChangeResponse = z
  .strictObject({
    schemaVersion: z.literal('service-password-change-v1'),
    changed: z.literal(true),
    browserSessionsEnded: z.int().describe('Other browser sessions of the account that were signed out.'),
    cliSessionsEnded: z.int().describe('CLI sessions of the account that were signed out.'),
  })
  .meta({ id: 'PasswordChangeResponse' });
