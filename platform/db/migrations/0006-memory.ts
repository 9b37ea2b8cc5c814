import { Migration } from '@mikro-orm/migrations';

/**
 * Native memory (spec 2.4, 3.4, 3.5): peers and sessions by label, messages, write events and claims
 * with an append-only history. Deleting a peer or session row cascades to everything derived from it;
 * events outlive what they deleted so their status stays pollable.
 */
export class Migration0006Memory extends Migration {
  override name = '0006-memory';

  override up(): void {
    this.addSql(`create table memory_peer (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      workspace text not null default 'default',
      label text not null,
      created_at timestamptz not null default now(),
      unique (account_id, workspace, label)
    );`);

    this.addSql(`create table memory_session (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      workspace text not null default 'default',
      label text not null,
      created_at timestamptz not null default now(),
      unique (account_id, workspace, label)
    );`);

    // One row per asynchronous memory event (message add, peer deletion, session deletion).
    this.addSql(`create table memory_event (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      workspace text not null default 'default',
      kind text not null check (kind in ('add_messages', 'delete_peer', 'delete_session')),
      status text not null check (status in ('queued', 'running', 'succeeded', 'failed', 'quarantined')),
      peer_id uuid,
      session_id uuid,
      peer_label text,
      session_label text,
      agent_id text,
      infer boolean not null default true,
      idempotency_key text,
      request_hash text,
      receipt jsonb,
      outcome jsonb,
      failure jsonb,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      completed_at timestamptz
    );`);
    this.addSql(`create unique index memory_event_idem_idx on memory_event(account_id, idempotency_key)
      where idempotency_key is not null;`);
    this.addSql('create index memory_event_account_status_idx on memory_event(account_id, status);');

    // Messages are stored in the write transaction (nothing lost); they become retrievable memory once
    // their add-event has succeeded (available = true).
    this.addSql(`create table memory_message (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      peer_id uuid not null references memory_peer(id) on delete cascade,
      session_id uuid not null references memory_session(id) on delete cascade,
      event_id uuid not null references memory_event(id),
      position integer not null,
      role text not null check (role in ('user', 'assistant', 'system', 'tool')),
      content text not null,
      agent_id text,
      audience text,
      metadata jsonb,
      source_ids uuid[] not null default '{}',
      available boolean not null default false,
      created_at timestamptz not null,
      content_hash text not null,
      tsv tsvector generated always as (to_tsvector('english', content)) stored,
      unique (event_id, position)
    );`);
    this.addSql('create index memory_message_session_idx on memory_message(session_id, created_at, position);');
    this.addSql('create index memory_message_peer_idx on memory_message(peer_id);');
    this.addSql('create index memory_message_tsv_idx on memory_message using gin(tsv);');
    this.addSql('create index memory_message_trgm_idx on memory_message using gin(content gin_trgm_ops);');

    // Claims: the current head of each claim; every change appends to memory_claim_history.
    this.addSql(`create table memory_claim (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      peer_id uuid not null references memory_peer(id) on delete cascade,
      session_id uuid references memory_session(id) on delete cascade,
      event_id uuid references memory_event(id),
      message_id uuid references memory_message(id) on delete cascade,
      span_start integer,
      span_end integer,
      content text not null,
      state text not null check (state in ('current', 'withdrawn', 'pending_review')),
      authority text not null,
      eligibility text not null check (eligibility in ('eligible', 'not_eligible')),
      support_status text not null,
      categories text[] not null default '{}',
      warning text,
      conflicts_with uuid[] not null default '{}',
      agent_id text,
      audience text,
      revision integer not null default 1,
      head_revision text not null,
      valid_from timestamptz not null,
      valid_to timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      tsv tsvector generated always as (to_tsvector('english', content)) stored
    );`);
    this.addSql('create index memory_claim_peer_idx on memory_claim(peer_id, state);');
    this.addSql('create index memory_claim_account_idx on memory_claim(account_id, state);');
    this.addSql('create unique index memory_claim_event_idx on memory_claim(event_id) where event_id is not null;');
    this.addSql('create index memory_claim_tsv_idx on memory_claim using gin(tsv);');
    this.addSql('create index memory_claim_trgm_idx on memory_claim using gin(content gin_trgm_ops);');

    this.addSql(`create table memory_claim_history (
      claim_id uuid not null references memory_claim(id) on delete cascade,
      seq integer not null,
      account_id uuid not null references account(id) on delete cascade,
      event text not null check (event in ('ADD', 'UPDATE', 'DELETE')),
      prior_content text,
      successor_content text,
      prior_revision text,
      successor_revision text,
      reason text,
      request_hash text,
      valid_from timestamptz,
      valid_to timestamptz,
      marker text not null,
      created_at timestamptz not null default now(),
      primary key (claim_id, seq)
    );`);
  }

  override down(): void {
    for (const t of ['memory_claim_history', 'memory_claim', 'memory_message', 'memory_event', 'memory_session', 'memory_peer']) {
      this.addSql(`drop table if exists ${t};`);
    }
  }
}
