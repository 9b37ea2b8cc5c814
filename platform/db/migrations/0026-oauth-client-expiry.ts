import { Migration } from '@mikro-orm/migrations';

/**
 * Dynamically registered OAuth clients expire (core/oauth/adapter.ts): existing registrations get the
 * expiry of their longest-lived grant or refresh token, or 24 hours (OAUTH_UNUSED_CLIENT_TTL_HOURS'
 * default) when they were never authorized. Registration access tokens are no longer issued.
 */
export class Migration0026OauthClientExpiry extends Migration {
  override name = '0026-oauth-client-expiry';

  override up(): void {
    this.addSql(`update oauth_payload c set expires_at = coalesce(
        (select max(g.expires_at) from oauth_payload g where g.kind in ('Grant', 'RefreshToken') and g.client_id = c.client_id),
        now() + interval '24 hours')
      where c.kind = 'Client' and c.expires_at is null;`);
    this.addSql(`delete from oauth_payload where kind = 'RegistrationAccessToken';`);
  }

  override down(): void {
    // Expiry times set here are kept: a registration that outlived them would have been swept anyway.
  }
}
