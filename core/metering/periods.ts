// Period arithmetic, all in UTC. Credits renew on the account's own monthly date (the day of month it
// was created, clamped to short months); quotas count per UTC day and per UTC calendar month.

const DAY_MS = 86_400_000;

function anchoredDate(year: number, month: number, day: number): Date {
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(Date.UTC(year, month, Math.min(day, lastDay)));
}

export function creditPeriod(anchor: Date, now: Date): { start: Date; end: Date } {
  const day = anchor.getUTCDate();
  let start = anchoredDate(now.getUTCFullYear(), now.getUTCMonth(), day);
  if (start.getTime() > now.getTime()) start = anchoredDate(now.getUTCFullYear(), now.getUTCMonth() - 1, day);
  const end = anchoredDate(start.getUTCFullYear(), start.getUTCMonth() + 1, day);
  return { start, end };
}

export function utcDay(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return { start, end: new Date(start.getTime() + DAY_MS) };
}

export function utcMonth(now: Date): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
  };
}

/** YYYY-MM-DD of a UTC date. */
export const isoDate = (d: Date) => d.toISOString().slice(0, 10);

export const secondsUntil = (d: Date, now: Date) => Math.max(1, Math.ceil((d.getTime() - now.getTime()) / 1000));
