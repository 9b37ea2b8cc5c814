import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';
import type { ConnectionAccount } from './access-tokens.ts';

// The accounts OAuth signs in and tokens belong to (account, external_identity); provider.ts and
// external.ts decide which account a sign-in or token gets.

/** The active, enabled account with this id. */
export async function activeAccount(em: EntityManager, id: string) {
  const [row] = await bound<{ id: string; email: string; display_name: string | null }>(em,
    sql`select id, email, display_name from account where id = ${id} and state = 'active' and disabled_at is null`);
  return row;
}

/** The enabled account an operator linked the issuer's subject to. */
export async function linkedAccount(em: EntityManager, issuer: string, subject: string): Promise<ConnectionAccount | undefined> {
  const [row] = await bound<ConnectionAccount>(em, sql`select a.id, a.email, a.display_name, a.state
    from external_identity x join account a on a.id = x.account_id
    where x.issuer = ${issuer} and x.subject = ${subject} and a.disabled_at is null`);
  return row;
}

/** The enabled account with this (normalized) email. */
export async function accountByEmail(em: EntityManager, emailNormalized: string): Promise<ConnectionAccount | undefined> {
  const [row] = await bound<ConnectionAccount>(em,
    sql`select id, email, display_name, state from account where email_normalized = ${emailNormalized} and disabled_at is null`);
  return row;
}

/** Links (or moves) the issuer's subject to the account with this (normalized) email; undefined without such an account. */
export async function linkIdentity(em: EntityManager, issuer: string, subject: string, emailNormalized: string) {
  const [row] = await bound<{ account_id: string; created_at: Date }>(em, sql`insert into external_identity (issuer, subject, account_id)
    select ${issuer}, ${subject}, id from account where email_normalized = ${emailNormalized}
    on conflict (issuer, subject) do update set account_id = excluded.account_id
    returning account_id, created_at`);
  return row;
}
