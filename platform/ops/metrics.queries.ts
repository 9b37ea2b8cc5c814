import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../db/sql.ts';

// The work-queue counts the metrics read at scrape time (ingest_job, memory_event, credit_reservation);
// the gauges are in metrics.ts.

/** Rows per state (`label`) and, for some tables, kind. */
export type CountRow = { label: string; kind?: string; n: string | number };

export const ingestJobCounts = (em: EntityManager) =>
  bound<CountRow>(em, sql`select status as label, kind, count(*) as n from ingest_job group by status, kind`);

export const memoryEventCounts = (em: EntityManager) =>
  bound<CountRow>(em, sql`select status as label, kind, count(*) as n from memory_event group by status, kind`);

export const reservationCounts = (em: EntityManager) =>
  bound<CountRow>(em, sql`select status as label, count(*) as n from credit_reservation group by status`);

/** Held reservations older than one hour. */
export const overdueReservationCounts = (em: EntityManager) =>
  bound<CountRow>(em, sql`select 'held' as label, count(*) as n from credit_reservation where status = 'held' and created_at < now() - interval '1 hour'`);
