import { createHash, randomUUID } from 'node:crypto';
import type { Orm } from '../../platform/db/orm.ts';
import { bound, sql } from '../../platform/db/sql.ts';

// Native-memory rows written with SQL, for retrieval tests that need memory but not the write path. A
// message is retrievable once `available`; a claim when `state = 'current'` and `eligibility =
// 'eligible'`. The database gives each message its search vector and version stamp (its triggers,
// platform/db/triggers).

const hash = (t: string) => createHash('sha256').update(t.replace(/\s+/g, ' ').trim()).digest('hex');

export function memoryRows(orm: Orm) {
  const em = () => orm.em.fork();
  const label = async (table: 'memory_peer' | 'memory_session', accountId: string, name: string) => {
    const id = randomUUID();
    await bound(em(), sql`insert into ${sql.raw(table)} (id, account_id, label) values (${id}, ${accountId}, ${name}) on conflict do nothing`);
    const [row] = await bound<{ id: string }>(em(), sql`select id from ${sql.raw(table)} where account_id = ${accountId} and label = ${name}`);
    return row!.id;
  };
  return {
    peer: (accountId: string, name: string) => label('memory_peer', accountId, name),
    session: (accountId: string, name: string) => label('memory_session', accountId, name),
    async message(
      accountId: string,
      m: { peerId: string; sessionId: string; content: string; available?: boolean; agentId?: string; audience?: string; createdAt?: Date },
    ) {
      const eventId = randomUUID();
      await bound(em(), sql`insert into memory_event (id, account_id, kind, status) values (${eventId}, ${accountId}, 'add_messages', 'succeeded')`);
      const id = randomUUID();
      await bound(
        em(),
        sql`insert into memory_message (id, account_id, peer_id, session_id, event_id, position, role, content, agent_id, audience, available, created_at, content_hash)
         values (${id}, ${accountId}, ${m.peerId}, ${m.sessionId}, ${eventId}, 0, 'user', ${m.content}, ${m.agentId ?? null}, ${m.audience ?? null}, ${m.available ?? true}, ${m.createdAt ?? new Date()}, ${hash(m.content)})`,
      );
      return { id, eventId };
    },
    async claim(
      accountId: string,
      c: {
        peerId: string; sessionId?: string; content: string; authority?: string; state?: string; eligibility?: string; validFrom?: Date;
        /** The message it was derived from, and the span it cites. */
        messageId?: string; span?: [number, number];
      },
    ) {
      const id = randomUUID();
      await bound(
        em(),
        sql`insert into memory_claim (id, account_id, peer_id, session_id, content, state, authority, eligibility, support_status, head_revision,
           valid_from, message_id, span_start, span_end)
         values (${id}, ${accountId}, ${c.peerId}, ${c.sessionId ?? null}, ${c.content}, ${c.state ?? 'current'}, ${c.authority ?? 'inferred'}, ${c.eligibility ?? 'eligible'}, 'supported', ${`rev-${randomUUID()}`}, ${c.validFrom ?? new Date()}, ${c.messageId ?? null}, ${c.span?.[0] ?? null}, ${c.span?.[1] ?? null})`,
      );
      return id;
    },
  };
}
