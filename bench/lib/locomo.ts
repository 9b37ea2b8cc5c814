import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// LoCoMo-format conversations (../shared/eval/locomo-dev/README.md): loading, the evidence metric and
// the plain BM25 floor of bm25_floor.py, ported line for line so both are computed in one run. The data
// stays where it is (its licence keeps it out of the project); LOCOMO_FILE points at another file of
// the same format, such as a held-out half.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_LOCOMO_FILE = path.resolve(root, '..', 'shared', 'eval', 'locomo-dev', 'locomo-dev.json');

export type Turn = { id: string; speaker: string; text: string; caption: string | null; session: string; sessionIndex: number; date: Date };
/** `answer`: the gold answer (null for adversarial questions, which have none). */
export type Question = { question: string; category: number; evidence: string[]; answer: string | null };
export type Conversation = { sample: string; speakers: [string, string]; sessions: string[]; turns: Turn[]; questions: Question[] };

export const CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' };

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** "1:56 pm on 8 May, 2023" as a UTC instant. */
export function parseSessionDate(text: string): Date {
  const m = /^(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$/i.exec(text.trim());
  if (!m) throw new Error(`unrecognised session date: ${text}`);
  const month = MONTHS.indexOf(m[5]!.toLowerCase());
  if (month < 0) throw new Error(`unrecognised month in session date: ${text}`);
  const hour = (Number(m[1]) % 12) + (m[3]!.toLowerCase() === 'pm' ? 12 : 0);
  return new Date(Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])));
}

/** Evidence ids as bm25_floor.py normalises them ("D1:03", "D:1:3" -> "D1:3"); malformed parts dropped. */
export function normalizeEvidence(e: string): string[] {
  const out: string[] = [];
  for (const p of e.trim().split(/[;,\s]+/)) {
    const m = /^D:?(\d+):0*(\d+)$/.exec(p);
    if (m) out.push(`D${m[1]}:${m[2]}`);
  }
  return out;
}

type RawTurn = { speaker: string; dia_id: string; text: string; blip_caption?: string };
type RawSample = { sample_id?: string; conversation: Record<string, unknown>; qa: { question: string; category: number; evidence?: string[]; answer?: string | number }[] };

export function loadLocomo(file = process.env.LOCOMO_FILE ?? DEFAULT_LOCOMO_FILE): Conversation[] {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as RawSample[];
  return raw.map((s, n) => {
    const c = s.conversation;
    const sessions = Object.keys(c).filter((k) => /^session_\d+$/.test(k)).sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const turns = sessions.flatMap((session, sessionIndex) => {
      const date = parseSessionDate(String(c[`${session}_date_time`]));
      return (c[session] as RawTurn[]).map((t) => ({
        id: normalizeEvidence(t.dia_id)[0] ?? t.dia_id, speaker: t.speaker, text: t.text, caption: t.blip_caption ?? null, session, sessionIndex, date,
      }));
    });
    const questions = s.qa.map((q) => ({
      question: q.question, category: q.category, evidence: [...new Set((q.evidence ?? []).flatMap(normalizeEvidence))],
      answer: q.answer === undefined ? null : String(q.answer),
    }));
    return { sample: s.sample_id ?? `sample-${n + 1}`, speakers: [String(c.speaker_a), String(c.speaker_b)], sessions, turns, questions };
  });
}

/** Recall of one question at k: the share of its evidence turns among the first k turns returned. */
export function recallAt(evidence: string[], returned: string[], k: number): number {
  const top = new Set(returned.slice(0, k));
  return evidence.filter((e) => top.has(e)).length / evidence.length;
}

const FLOOR_STOP = new Set('a an the of to and or in on at for is are was were be been did do does what when where who how why which with that this it he she they i you her his their my your s t'.split(' '));
const floorTokens = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** bm25_floor.py: plain Okapi BM25 over one conversation's turns (speaker, text, caption); turn ids best first. */
export function bm25Floor(c: Conversation): (question: string) => string[] {
  const docs = c.turns.map((t) => floorTokens(`${t.speaker} said, "${t.text}"${t.caption !== null ? ` and shared ${t.caption}` : ''}`));
  const n = docs.length;
  const avgdl = docs.reduce((a, d) => a + d.length, 0) / n;
  const df = new Map<string, number>();
  for (const d of docs) for (const w of new Set(d)) df.set(w, (df.get(w) ?? 0) + 1);
  const tfs = docs.map((d) => {
    const tf = new Map<string, number>();
    for (const w of d) tf.set(w, (tf.get(w) ?? 0) + 1);
    return tf;
  });
  const idf = (w: string) => Math.log(1 + (n - df.get(w)! + 0.5) / (df.get(w)! + 0.5));
  return (question) => {
    const qt = floorTokens(question).filter((w) => !FLOOR_STOP.has(w));
    const scores = tfs.map((tf, i) => {
      let v = 0;
      for (const w of qt) {
        const f = tf.get(w) ?? 0;
        if (f) v += (idf(w) * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * docs[i]!.length) / avgdl));
      }
      return v;
    });
    // Python's sorted() is stable: equal scores keep the turns' order.
    return scores.map((s, i) => [s, i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]).map(([, i]) => c.turns[i]!.id);
  };
}

/** Answer tokens as LoCoMo's and SQuAD's evaluation normalise them: lower case, no punctuation or articles. */
export function answerTokens(s: string): string[] {
  return s.toLowerCase().replace(/[^\p{L}\p{N}\s]/gu, ' ').replace(/\b(a|an|the|and)\b/g, ' ').split(/\s+/).filter(Boolean);
}

/** Token F1 of a predicted answer against the gold one (0..1). */
export function tokenF1(predicted: string, gold: string): number {
  const p = answerTokens(predicted);
  const g = answerTokens(gold);
  if (!p.length || !g.length) return p.length === g.length ? 1 : 0;
  const left = new Map<string, number>();
  for (const t of g) left.set(t, (left.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of p) {
    const n = left.get(t) ?? 0;
    if (n > 0) {
      common++;
      left.set(t, n - 1);
    }
  }
  if (!common) return 0;
  const precision = common / p.length;
  const recall = common / g.length;
  return (2 * precision * recall) / (precision + recall);
}

/** Exact match after normalisation. */
export const exactMatch = (predicted: string, gold: string) => answerTokens(predicted).join(' ') === answerTokens(gold).join(' ');
