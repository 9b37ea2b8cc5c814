/**
 * Relative time in a statement ("yesterday", "last weekend", "next Friday", "three weeks ago"), resolved
 * against the date the message was written (UTC calendar days). The result names the resolved period in
 * words ("6-7 January 2024", "December 2023"), so a claim saying "last weekend" on 12 Jan 2024 is found
 * by "January 2024", and gives the period's first instant for the claim's validity.
 */

export type When = { phrase: string; start: Date; end: Date; label: string; past: boolean };

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const NUMBERS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, couple: 2 };

const DAY = 86_400_000;
const day = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
const addDays = (d: Date, n: number) => new Date(d.getTime() + n * DAY);
const monthStart = (y: number, m: number) => new Date(Date.UTC(y, m, 1));
const dayLabel = (d: Date) => `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
const monthLabel = (d: Date) => `${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;

/** Two days as one label: "6-7 January 2024", or across months "30 December 2023 - 1 January 2024". */
function spanLabel(a: Date, b: Date): string {
  if (a.getUTCMonth() === b.getUTCMonth() && a.getUTCFullYear() === b.getUTCFullYear()) return `${a.getUTCDate()}-${dayLabel(b)}`;
  return `${dayLabel(a)} - ${dayLabel(b)}`;
}

const oneDay = (phrase: string, d: Date, at: Date): When => ({ phrase, start: d, end: addDays(d, 1), label: dayLabel(d), past: d <= at });

// The first expression found wins; each alternative is a fixed phrase or a short bounded one, so the
// scan is linear in the text.
export const WHEN_PATTERN = new RegExp(
  [
    'the day before yesterday', 'the day after tomorrow', 'yesterday', 'last night', 'today', 'tonight', 'this (?:morning|afternoon|evening)',
    'tomorrow', '(?:last|this|next|past) weekend', '(?:last|this|next|past) (?:week|month|year)',
    `(?:last|this|next) (?:${WEEKDAYS.join('|')})`,
    // "a few" is no number: "a few years ago" is left as said.
    '(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\\d{1,2}|a couple of) (?:days?|weeks?|months?|years?) ago',
    'in (?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\\d{1,2}|a couple of) (?:days?|weeks?|months?)',
  ].map((p) => `\\b${p}\\b`).join('|'),
  'i',
);

/** The first relative time expression of `text` resolved against `at`, or null. */
export function resolveWhen(text: string, at: Date): When | null {
  const m = WHEN_PATTERN.exec(text);
  if (!m) return null;
  const phrase = m[0];
  const p = phrase.toLowerCase();
  const today = day(at);
  if (p === 'yesterday' || p === 'last night') return oneDay(phrase, addDays(today, -1), at);
  if (p === 'the day before yesterday') return oneDay(phrase, addDays(today, -2), at);
  if (p === 'tomorrow') return oneDay(phrase, addDays(today, 1), at);
  if (p === 'the day after tomorrow') return oneDay(phrase, addDays(today, 2), at);
  if (p === 'today' || p === 'tonight' || p.startsWith('this ') && /morning|afternoon|evening/.test(p)) return oneDay(phrase, today, at);
  const dow = today.getUTCDay();
  if (p.endsWith('weekend')) {
    // The weekend before (last, past), the coming or current one (this), the one after that (next).
    const saturdayBefore = addDays(today, -(((dow + 1) % 7) || 7));
    const upcoming = addDays(today, (6 - dow + 7) % 7);
    const start = p.startsWith('last') || p.startsWith('past') ? saturdayBefore
      : p.startsWith('this') ? (dow === 0 ? addDays(today, -1) : upcoming)
      : addDays(upcoming, 7);
    return { phrase, start, end: addDays(start, 2), label: `the weekend of ${spanLabel(start, addDays(start, 1))}`, past: start <= at };
  }
  const unit = /(week|month|year)$/.exec(p)?.[1];
  if (unit && /^(last|this|next|past) /.test(p)) {
    const shift = p.startsWith('last') || p.startsWith('past') ? -1 : p.startsWith('next') ? 1 : 0;
    if (unit === 'week') {
      const monday = addDays(today, -((dow + 6) % 7) + 7 * shift);
      return { phrase, start: monday, end: addDays(monday, 7), label: `the week of ${dayLabel(monday)}`, past: monday <= at };
    }
    if (unit === 'month') {
      const start = monthStart(today.getUTCFullYear(), today.getUTCMonth() + shift);
      return { phrase, start, end: monthStart(start.getUTCFullYear(), start.getUTCMonth() + 1), label: monthLabel(start), past: start <= at };
    }
    const year = today.getUTCFullYear() + shift;
    return { phrase, start: monthStart(year, 0), end: monthStart(year + 1, 0), label: String(year), past: monthStart(year, 0) <= at };
  }
  const weekday = WEEKDAYS.findIndex((w) => p.endsWith(w));
  if (weekday >= 0) {
    const back = ((dow - weekday + 7) % 7) || 7;
    const ahead = ((weekday - dow + 7) % 7) || 7;
    // "next Friday" and "this Friday" are the coming one: the reading most people mean.
    return oneDay(phrase, p.startsWith('last') ? addDays(today, -back) : addDays(today, ahead), at);
  }
  const counted = /^(?:in )?(a couple of|\w+) (day|week|month|year)s?( ago)?$/.exec(p);
  if (counted) {
    const n = NUMBERS[counted[1]!.replace(/^a couple of$/, 'couple')] ?? Number(counted[1]);
    if (!Number.isFinite(n)) return null;
    const sign = counted[3] ? -1 : 1;
    const u = counted[2]!;
    if (u === 'day') return oneDay(phrase, addDays(today, sign * n), at);
    if (u === 'week') {
      const d = addDays(today, sign * 7 * n);
      const monday = addDays(d, -((d.getUTCDay() + 6) % 7));
      return { phrase, start: monday, end: addDays(monday, 7), label: `the week of ${dayLabel(monday)}`, past: monday <= at };
    }
    if (u === 'month') {
      const start = monthStart(today.getUTCFullYear(), today.getUTCMonth() + sign * n);
      return { phrase, start, end: monthStart(start.getUTCFullYear(), start.getUTCMonth() + 1), label: monthLabel(start), past: start <= at };
    }
    const year = today.getUTCFullYear() + sign * n;
    return { phrase, start: monthStart(year, 0), end: monthStart(year + 1, 0), label: String(year), past: sign < 0 };
  }
  return null;
}
