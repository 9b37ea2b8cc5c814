import { Migration } from '@mikro-orm/migrations';

/**
 * Operator links of an external identity provider's subjects to accounts (`admin account
 * link-external`): with MCP_AUTH_ISSUER, a token whose (issuer, sub) is linked is that account's, whether
 * or not the provider asserts a verified email (core/oauth/external.ts).
 */
export class Migration0025ExternalIdentities extends Migration {
  override name = '0025-external-identities';

  override up(): void {
    this.addSql(`create table external_identity (
      issuer text not null,
      subject text not null,
      account_id uuid not null references account(id) on delete cascade,
      created_at timestamptz not null default now(),
      primary key (issuer, subject)
    );`);
    this.addSql('create index external_identity_account_idx on external_identity(account_id);');
  }

  override down(): void {
    this.addSql('drop table if exists external_identity;');
  }
}
