import type { EntityManager } from '@mikro-orm/postgresql';
import type Provider from 'oidc-provider';
import type { Principal } from '../auth/principal.ts';
import type { Config } from '../../platform/config.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { resolveOauthAccessToken } from './access-tokens.ts';
import { externalTokenResolver } from './external.ts';
import { builtinMetadata, externalMetadata, type MetadataSource } from './metadata.ts';
import { createOauthProvider, mcpResources } from './provider.ts';

/** Resolves a bearer value that is not an API key to a principal: an MCP OAuth access token. */
export type OauthTokenResolver = (em: EntityManager, token: string, onError: (err: unknown) => void) => Promise<Principal | null>;

/**
 * The MCP endpoint's authorization server, as the configuration chooses it: the built-in server (an
 * oidc-provider instance mounted at {PUBLIC_BASE_URL}/oauth) or an external identity provider
 * (MCP_AUTH_ISSUER). Either way the MCP endpoint gets the allowlisted metadata and a token resolver.
 */
export type OauthServer = {
  /** The built-in provider to mount on the API, or null with an external identity provider. */
  provider: Provider | null;
  metadata: MetadataSource;
  resolveToken: OauthTokenResolver;
};

export async function createOauthServer(deps: { config: Config; orm: Orm }): Promise<OauthServer> {
  const { config } = deps;
  const audiences = mcpResources(config);
  if (config.oauth.mode === 'external') {
    const metadata = externalMetadata(config.oauth.issuer);
    return {
      provider: null,
      metadata,
      resolveToken: externalTokenResolver({ issuer: config.oauth.issuer, audiences, metadata, approvalUrl: `${config.publicBaseUrl}/apps` }),
    };
  }
  const provider = await createOauthProvider(deps);
  return {
    provider,
    metadata: builtinMetadata(provider),
    resolveToken: (em, token, onError) => resolveOauthAccessToken(em, token, audiences, onError),
  };
}
