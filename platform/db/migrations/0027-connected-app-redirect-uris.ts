import { Migration } from '@mikro-orm/migrations';

/**
 * A connected application is shown as one application however often its client registered again
 * (MCP clients register anew whenever they lose their stored client id): registrations with the same
 * client name and redirect URIs are grouped (core/oauth/connected-apps.ts), so each row keeps its
 * registration's redirect URIs, sorted. Existing rows take them from their stored client registration.
 */
export class Migration0027ConnectedAppRedirectUris extends Migration {
  override name = '0027-connected-app-redirect-uris';

  override up(): void {
    this.addSql(`alter table oauth_connected_app add column redirect_uris text[] not null default '{}';`);
    // Client rows are keyed by the hex SHA-256 of the client id (core/oauth/adapter.ts).
    this.addSql(`update oauth_connected_app c
      set redirect_uris = array(select jsonb_array_elements_text(p.payload->'redirect_uris') order by 1)
      from oauth_payload p
      where p.kind = 'Client' and p.id_digest = encode(sha256(convert_to(c.client_id, 'UTF8')), 'hex')
        and jsonb_typeof(p.payload->'redirect_uris') = 'array';`);
  }

  override down(): void {
    this.addSql('alter table oauth_connected_app drop column if exists redirect_uris;');
  }
}
