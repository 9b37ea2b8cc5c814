import type { AccountState } from '../../platform/db/entities/index.ts';
import type { Preset, Scope } from '../contracts/account.ts';

/** `oauth`: an MCP OAuth access token, accepted by the MCP endpoint only (spec 5). */
export type CredentialKind = 'browser' | 'cli' | 'apiKey' | 'oauth';

/** Who is calling, resolved once per request by the auth plugin (or per MCP call). */
export type Principal = {
  kind: CredentialKind;
  accountId: string;
  email: string;
  displayName: string | null;
  accountState: AccountState;
  /** Browser session id, CLI session id, API key id or connected application id. */
  credentialId: string;
  /**
   * API keys carry their scopes, OAuth tokens their connected application's current scopes; account
   * credentials (browser, CLI) act with the account's authority.
   */
  scopes: readonly Scope[];
  maxPreset: Preset;
  /**
   * Audience labels an API key is limited to (null = the whole account). Sources such a key ingests
   * carry its first label; query sees only content labelled with one of them (docs/api.md, Audiences).
   */
  audiences: readonly string[] | null;
  issuedAt: Date;
  expiresAt: Date | null;
};

/** What a credential may reach of its account: the account, and the audience labels it is limited to. */
export type Reach = Pick<Principal, 'accountId' | 'audiences'>;

/** Whether content labelled `audience` is inside the reach (unlabelled content is outside a limited key). */
export const withinReach = (reach: Reach, audience: string | null | undefined): boolean =>
  !reach.audiences || (audience != null && reach.audiences.includes(audience));
