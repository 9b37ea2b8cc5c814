import type { AccountState } from '../db/entities/index.ts';
import type { Preset, Scope } from '../contracts/account.ts';

export type CredentialKind = 'browser' | 'cli' | 'apiKey';

/** Who is calling, resolved once per request by the auth plugin (or per MCP call). */
export type Principal = {
  kind: CredentialKind;
  accountId: string;
  email: string;
  displayName: string | null;
  accountState: AccountState;
  /** Browser session id, CLI session id or API key id. */
  credentialId: string;
  /** API keys carry their scopes; account credentials (browser, CLI) act with the account's authority. */
  scopes: readonly Scope[];
  maxPreset: Preset;
  issuedAt: Date;
  expiresAt: Date | null;
};
