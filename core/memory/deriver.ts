import { sentenceSpans } from '../text/sentences.ts';
import { injectionFinding } from './screen.ts';
import { resolveWhen } from './when.ts';

/**
 * Claim derivation: every salient statement of an add-event becomes its own claim. The built-in deriver
 * works by rules (no model, deterministic): it splits each of the peer's messages into sentences and
 * each sentence into clauses that start with a first-person subject ("I", "my", "we"), keeps the
 * clauses that state something about the peer or their world (identity, preferences, relationships,
 * plans, places, possessions, activities and events; never questions, hypotheticals, greetings,
 * filler, negated activities or what someone else said), rewrites each as a standalone statement
 * attributed to the peer with its relative time resolved against the message's date (when.ts), and
 * cites the exact span of the message it came from. An OpenAI-compatible deriver (openai-deriver.ts)
 * has the same interface.
 */

export type DeriverMessage = { role: 'user' | 'assistant' | 'system' | 'tool'; content: string; created_at?: Date };

export type Proposal = {
  /** Index of the cited message in the input. */
  message: number;
  /** Cited span in that message's content (UTF-16 offsets). */
  start: number;
  end: number;
  /** The standalone statement, attributed to the peer by label. */
  content: string;
  categories: string[];
  /** What the statement is about (`favourite:mountain`, `home`, ...): same slot, different content = conflict. */
  slot: string | null;
  /** Set when the cited message looks like instructions aimed at a model. */
  injection: string | null;
  /**
   * The statement marks a change ("now", "moved", "no longer", "anymore"): it supersedes the peer's
   * current claim of the same slot instead of contradicting it.
   */
  change?: boolean;
  /** When what it says began, when the statement dates itself in the past ("last weekend"); else the message time. */
  validFrom?: Date | null;
};

export type DeriveInput = { peer: string; messages: DeriverMessage[] };

export interface ClaimDeriver {
  readonly name: string;
  /** Every claim the messages support, in message order (possibly none). */
  derive(input: DeriveInput): Promise<Proposal[]>;
}

// Rewriting first person into a standalone third-person statement -----------------------------------

const PAST_OR_MODAL = new Set([
  'went', 'was', 'were', 'had', 'got', 'made', 'took', 'bought', 'saw', 'met', 'left', 'ran', 'began', 'came', 'found',
  'gave', 'knew', 'lost', 'paid', 'sold', 'told', 'won', 'wrote', 'grew', 'flew', 'drove', 'ate', 'spent', 'built',
  'began', 'became', 'broke', 'caught', 'chose', 'drank', 'fell', 'felt', 'forgot', 'heard', 'kept', 'led', 'read',
  'rode', 'sang', 'sat', 'slept', 'spoke', 'stood', 'swam', 'taught', 'thought', 'threw', 'understood', 'woke', 'wore',
  'can', 'could', 'will', 'would', 'should', 'must', 'might', 'may', 'shall', 'used', 'put', 'cut', 'set', 'hit', 'quit',
]);
const IRREGULAR: Record<string, string> = { have: 'has', do: 'does', go: 'goes', be: 'is', am: 'is' };

/** Third-person singular of a first-person verb ("keep" -> "keeps"); past tenses and modals unchanged. */
export function thirdPerson(verb: string): string {
  const v = verb.toLowerCase();
  if (IRREGULAR[v]) return IRREGULAR[v];
  if (PAST_OR_MODAL.has(v) || /ed$/.test(v) && !/[^r]eed$/.test(v) || v.includes("'")) return verb;
  if (/(s|sh|ch|x|z|o)$/.test(v)) return `${verb}es`;
  if (/[^aeiou]y$/.test(v)) return `${verb.slice(0, -1)}ies`;
  return `${verb}s`;
}

/** Remaining first-person words in a clause, turned to the third person plural ("they" agrees like "I"). */
export function thirdPersonRest(text: string): string {
  return text
    .replace(/\bI'm\b/g, "they're")
    .replace(/\bI am\b/g, 'they are')
    .replace(/\bI was\b/g, 'they were')
    .replace(/\bI've\b/g, "they've")
    .replace(/\bI'll\b/g, "they'll")
    .replace(/\bI'd\b/g, "they'd")
    .replace(/\bI\b/g, 'they')
    .replace(/\bmyself\b/gi, 'themselves')
    .replace(/\bmine\b/gi, 'theirs')
    .replace(/\bmy\b/gi, 'their')
    .replace(/\bme\b/gi, 'them');
}

/** `s` without trailing characters of `chars` (a loop: a pattern such as /[\s,;:]+$/ is quadratic on long runs). */
function trimEndOf(s: string, chars: RegExp): string {
  let end = s.length;
  while (end > 0 && chars.test(s[end - 1]!)) end--;
  return s.slice(0, end);
}

const clean = (s: string) => thirdPersonRest(trimEndOf(s.trim(), /[\s,;:]/));
const norm = (s: string) => s.toLowerCase().replace(/\b(the|a|an|my|their)\b/g, ' ').replace(/[^\p{L}\p{N}]+/gu, ' ').trim();

// Rules ----------------------------------------------------------------------------------------------

type Rule = {
  re: RegExp;
  /** The rule reads a negated statement itself ("I don't eat meat"); every other rule skips negated clauses. */
  negation?: boolean;
  score: number;
  category: string;
  make: (peer: string, m: RegExpMatchArray) => { content: string; slot?: string | null };
};

const RELATIONS =
  'wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|sister|brother|mother|mom|mum|father|dad|son|daughter|best friend|' +
  'friend|boss|manager|dog|cat|roommate|flatmate|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa|colleague|coworker|co-worker|' +
  'therapist|doctor|landlord|neighbou?r|twin|stepmother|stepfather|niece|nephew|puppy|kitten|horse|parrot';
const UNIQUE_RELATIONS = /^(wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|mother|mom|mum|father|dad|boss|manager|landlord|therapist)$/i;
const TRANSIENT = /^(a bit|a little|a lot|so|very|really|just|not|fine|good|ok|okay|great|tired|busy|back|here|sorry|glad|happy to|sure|done|ready|afraid|excited|bored|hungry|confused|lost|kidding|joking|listening|curious|wondering|thinking|going to go|off|on it)\b/i;
const DIETS = 'vegetarian|vegan|pescatarian|gluten[- ]free|lactose[- ]intolerant|diabetic|coeliac|celiac|kosher|halal|teetotal';
const SAYING = 'said|says|told|tells|asked|asks|replied|wrote|writes|thinks|thought|believes|reckons|claims|claimed';
const PLAN_VERBS = 'going to|planning to|planning on|about to|hoping to|flying to|travell?ing to|heading to|moving to|starting|leaving for|getting married|retiring|visiting';

const RULES: Rule[] = [
  {
    re: /^(?:my name is|my name's|i am called|i'm called|call me|people call me|everyone calls me) (.+)/i,
    score: 6, category: 'identity',
    make: (p, m) => ({ content: `${p}'s name is ${clean(m[1]!)}.`, slot: 'name' }),
  },
  {
    re: /^i(?:'m| am) (\d{1,3})(?: years? old)?$/i,
    score: 5, category: 'identity',
    make: (p, m) => ({ content: `${p} is ${m[1]} years old.`, slot: 'age' }),
  },
  {
    re: /^my birthday is (.+)/i,
    score: 5, category: 'identity',
    make: (p, m) => ({ content: `${p}'s birthday is ${clean(m[1]!)}.`, slot: 'birthday' }),
  },
  {
    re: /^i was born (.+)/i,
    score: 5, category: 'identity',
    make: (p, m) => ({ content: `${p} was born ${clean(m[1]!)}.`, slot: 'birth' }),
  },
  {
    re: /^my (?:(?:all[- ]time|absolute|very|current) )?favou?rite (.+?) (is|are|was|has to be) (.+)/i,
    score: 5, category: 'preference',
    make: (p, m) => ({
      content: `${p}'s favourite ${clean(m[1]!)} ${m[2]!.toLowerCase() === 'has to be' ? 'is' : m[2]!.toLowerCase()} ${clean(m[3]!)}.`,
      slot: `favourite:${norm(m[1]!)}`,
    }),
  },
  {
    re: new RegExp(`^my (${RELATIONS})(?:'s name)? (?:is|'s) (?:called |named )?(.+)`, 'i'),
    score: 5, category: 'relationship',
    make: (p, m) => {
      const value = clean(m[2]!);
      const isName = /^\p{Lu}[\p{L}'-]*(\s\p{Lu}[\p{L}'-]*){0,2}$/u.test(value);
      const rel = m[1]!.toLowerCase();
      return {
        content: isName ? `${p}'s ${rel} is called ${value}.` : `${p}'s ${rel} is ${value}.`,
        slot: isName && UNIQUE_RELATIONS.test(rel) ? `relation:${rel}` : null,
      };
    },
  },
  {
    re: /^i(?:'m| am) (married to|engaged to|dating|divorced from|in a relationship with) (.+)/i,
    score: 5, category: 'relationship',
    make: (p, m) => ({ content: `${p} is ${m[1]!.toLowerCase()} ${clean(m[2]!)}.`, slot: 'relation:spouse' }),
  },
  {
    re: new RegExp(`^i have ((?:a|an|one|two|three|four|five|\\d+) (?:(?:little|older|younger|big|baby|twin) )?(?:${RELATIONS}|kids|children|sons|daughters|sisters|brothers|dogs|cats|grandchildren)s?\\b.*)`, 'i'),
    score: 4.5, category: 'relationship',
    make: (p, m) => ({ content: `${p} has ${clean(m[1]!)}.` }),
  },
  {
    re: /^i(?:'ve| have)? ?(?:been )?(?:live|living|lived) in (.+)/i,
    score: 5, category: 'location',
    make: (p, m) => ({ content: `${p} lives in ${clean(m[1]!)}.`, slot: 'home' }),
  },
  {
    re: /^i(?:'m| am) living in (.+)/i,
    score: 5, category: 'location',
    make: (p, m) => ({ content: `${p} lives in ${clean(m[1]!)}.`, slot: 'home' }),
  },
  {
    re: /^i(?:'ve| have)? ?(?:just |recently )?moved to (.+)/i,
    score: 5, category: 'location',
    make: (p, m) => ({ content: `${p} moved to ${clean(m[1]!)}.`, slot: 'home' }),
  },
  {
    re: /^i(?:'m| am) (?:originally )?from (.+)/i,
    score: 5, category: 'location',
    make: (p, m) => ({ content: `${p} is from ${clean(m[1]!)}.`, slot: 'origin' }),
  },
  {
    re: /^i work (?:as )(.+)/i,
    score: 5, category: 'work',
    make: (p, m) => ({ content: `${p} works as ${clean(m[1]!)}.`, slot: 'occupation' }),
  },
  {
    re: /^i (?:work|am working|'m working) (at|for|in) (.+)/i,
    score: 5, category: 'work',
    make: (p, m) => ({ content: `${p} works ${m[1]!.toLowerCase()} ${clean(m[2]!)}.`, slot: m[1]!.toLowerCase() === 'in' ? null : 'employer' }),
  },
  {
    re: /^my job is (.+)/i,
    score: 4.5, category: 'work',
    make: (p, m) => ({ content: `${p}'s job is ${clean(m[1]!)}.`, slot: 'occupation' }),
  },
  {
    re: /^i(?:'m| am) allergic to (.+)/i,
    score: 5, category: 'health',
    make: (p, m) => ({ content: `${p} is allergic to ${clean(m[1]!)}.` }),
  },
  {
    re: new RegExp(`^i(?:'m| am) (?:a |an )?(${DIETS})\\b(.*)`, 'i'),
    score: 5, category: 'health',
    make: (p, m) => ({ content: `${p} is ${m[1]!.toLowerCase()}${clean(m[2]!) ? ` ${clean(m[2]!)}` : ''}.`, slot: 'diet' }),
  },
  {
    re: /^i (?:don't|do not|never|no longer) (eat|drink|smoke|like|enjoy|drive|watch|use|play) (.+)/i,
    negation: true,
    score: 4.5, category: 'preference',
    make: (p, m) => ({ content: `${p} does not ${m[1]!.toLowerCase()} ${clean(m[2]!)}.` }),
  },
  {
    re: /^i (?:really |absolutely |also |just |totally )?(love|like|enjoy|adore|prefer|hate|dislike|detest|can't stand|cannot stand) (.+)/i,
    score: 4, category: 'preference',
    make: (p, m) => ({ content: `${p} ${/^can/i.test(m[1]!) ? m[1]!.toLowerCase() : thirdPerson(m[1]!.toLowerCase())} ${clean(m[2]!)}.` }),
  },
  {
    re: new RegExp(`^i(?:'m| am) (${PLAN_VERBS}) (.+)`, 'i'),
    score: 4, category: 'plan',
    make: (p, m) => ({ content: `${p} is ${m[1]!.toLowerCase()} ${clean(m[2]!)}.` }),
  },
  {
    re: /^i ?(will|'ll|plan to|intend to|want to|hope to|need to|am going to|have to) (.+)/i,
    score: 3.5, category: 'plan',
    make: (p, m) => {
      const v = m[1]!.toLowerCase();
      const verb = v === "'ll" || v === 'will' ? 'will' : v === 'am going to' ? 'is going to' : v === 'have to' ? 'has to' : `${thirdPerson(v.split(' ')[0]!)} to`;
      return { content: `${p} ${verb} ${clean(m[2]!)}.` };
    },
  },
  {
    re: /^i have (an? (?:meeting|appointment|flight|exam|interview|trip|deadline|doctor's appointment|dentist appointment|surgery|wedding|presentation)\b.+)/i,
    score: 4.5, category: 'plan',
    make: (p, m) => ({ content: `${p} has ${clean(m[1]!)}.` }),
  },
  {
    // What the peer is doing these days ("I'm training for a marathon", "I'm learning the piano").
    re: /^i(?:'m| am) ((?:really |also |still |currently |finally |now )?(?!(?:thinking|wondering|kidding|joking|hoping|feeling|saying|talking|asking|guessing|trying|loving|dying|going|getting there|looking at|listening|glad|sorry|happy|not)\b)[a-z]{3,}ing) (\S+(?: \S+)+)/i,
    score: 3.5, category: 'activity',
    make: (p, m) => ({ content: `${p} is ${m[1]!.toLowerCase()} ${clean(m[2]!)}.` }),
  },
  {
    re: /^i(?:'m| am) (an? .+)/i,
    score: 3.5, category: 'identity',
    make: (p, m) => ({ content: `${p} is ${clean(m[1]!)}.` }),
  },
  {
    // "My daughter Mia loves dinosaurs", "My dog got sick": what a person or thing of the peer does.
    re: new RegExp(`^[Mm]y (${RELATIONS}|kids|children|family|parents|sons|daughters|team|band|car|house|garden)(?:,? (\\p{Lu}[\\p{L}'-]+),?)? ((?:just |recently |really |also |finally )?(?!(?:${SAYING}|is|was|has|does|goes)\\b)(?:[a-z]+(?:s|ed)|went|got|made|took|began|came|found|won|lost|met|ran|saw|grew|broke|fell|left|bought))\\b (.+)`, 'u'),
    score: 4, category: 'relationship',
    make: (p, m) => ({ content: `${p}'s ${m[1]!.toLowerCase()}${m[2] ? ` ${m[2]}` : ''} ${m[3]!.toLowerCase()} ${clean(m[4]!)}.` }),
  },
  {
    re: /^my (.+?) (is|are|was|were|has|have) (.+)/i,
    score: 3.5, category: 'fact',
    make: (p, m) => {
      const thing = m[1]!;
      const verb = m[2]!.toLowerCase();
      const value = m[3]!;
      const slotted = /^(is|are)$/.test(verb) && thing.split(/\s+/).length <= 3 && !/^(in|at|on|with|for|from|to|under|over|near|by|not|also|still|very|so|really|getting|being)\b/i.test(value);
      return { content: `${p}'s ${clean(thing)} ${verb} ${clean(value)}.`, slot: slotted ? `my:${norm(thing)}` : null };
    },
  },
  {
    re: /^i (have|own|drive|ride|play|speak|use|study|studied|teach|collect|keep|grow|run|volunteer|practi[cs]e|train|cook|write|read|support|follow|visit|go|went|bought|started|finished|graduated|met|adopted|ran|climbed|built|sold|lost|won|got|take|takes|took) (.+)/i,
    score: 3, category: 'fact',
    make: (p, m) => ({ content: `${p} ${thirdPerson(m[1]!.toLowerCase())} ${clean(m[2]!)}.` }),
  },
  {
    // What the peer did or does with others ("We went camping with the kids").
    re: /^we (?:just |recently |finally |also |all |both )?((?:went|got|had|made|took|visited|bought|adopted|started|finished|tried|watched|saw|met|moved|ran|played|spent|celebrated|hiked|travell?ed|flew|drove|stayed|threw|hosted|joined|love|enjoy)) (.+)/i,
    score: 3, category: 'activity',
    make: (p, m) => ({ content: `${p} (with others) ${thirdPerson(m[1]!.toLowerCase())} ${clean(m[2]!).replace(/\bour\b/gi, 'their').replace(/\bus\b/gi, 'them')}.` }),
  },
  {
    // Any other first-person declarative with enough substance; the filler verbs are excluded below.
    re: /^i ((?:(?:[a-z]+ly|even|still|always|often|sometimes|ever|also|just|really|kind of|sort of) )*)([a-z]+) (\S+(?: \S+){2,}.*)/i,
    score: 2, category: 'fact',
    make: (p, m) => ({ content: `${p} ${m[1]!.toLowerCase()}${thirdPerson(m[2]!.toLowerCase())} ${clean(m[3]!)}.` }),
  },
];

/** The rules' patterns, for the unit test that checks every pattern runs in linear time. */
export const RULE_PATTERNS: RegExp[] = RULES.map((r) => r.re);

// Sentences that are not statements worth remembering.
const FILLER = /^(hi|hello|hey|thanks|thank you|ok|okay|sure|yes|no|yeah|yep|nope|lol|haha|cool|great|nice|good (morning|night|evening|afternoon)|bye|goodbye|see you|cheers|sounds good|got it|no worries|np|hmm+|wow|right|alright|welcome)\b/i;
const HEDGE = /^(i think|i guess|i suppose|i believe|i feel like|i wonder|i don't know|i do not know|i'm not sure|i am not sure|not sure|maybe|perhaps|if|when|what if|i mean|i see|i agree|i understand|i know|i forgot|i'd like you|i want you|i need you|can you|could you|would you|please|let me|let's|i was wondering|i'm wondering|i am wondering)\b/i;
const GENERIC_FILLER_VERBS = /^i\s+(think|guess|suppose|believe|wonder|mean|see|agree|understand|know|hope|feel|wish|bet|doubt|reckon|assume|imagine|apologi[sz]e|appreciate|promise|swear|said|asked|told|just|also|really|actually|would|could|should|can|may|might|must|do|did|am|was)\b/i;
// Leading discourse markers; the citation still covers the whole sentence.
const LEAD_IN = /^(?:(?:oh|well|so|also|and|but|then|actually|honestly|btw|by the way|fyi|just so you know|for the record|remember(?: that)?|note(?: that)?|for context|anyway|ah|um|uh|hey|ok|okay|guess what|yesterday|today|tonight|last (?:night|week|weekend|month|year)|this (?:morning|afternoon|evening|week|weekend|month|year|past (?:week|weekend))|over the weekend|the other day|lately|recently|earlier today|a (?:few|couple of) (?:days|weeks|months) ago)[,:!]?\s+)+/i;
// A clause without its subject that tells what the speaker did ("Just got back from Spain!").
const SUBJECTLESS = /^(?:just |finally |recently )?(?:went|got|bought|started|finished|visited|took|made|joined|adopted|signed up|ran|met|saw|tried|painted|had|spent|booked|passed|landed)\b/i;
// A negated statement: no rule but the explicit negation rule reads it as a fact.
const NEGATED = /^(?:i|we|my \S+(?: \S+)?) (?:\S+ )?(?:not|never|don't|didn't|doesn't|won't|can't|cannot|haven't|hasn't|isn't|aren't|wasn't|weren't|wouldn't|couldn't|shouldn't|no longer)\b/i;
// An object that says nothing without the conversation around it ("I love that", "I miss you").
const VAGUE = /^(?:to|it|that|this|these|those|them|you|your|yours|him|her|so|too|how|what|why|hearing|seeing|to hear|to see|reading|talking)\b(?: \S+){0,2}$/i;
// The start of what follows the verb in a statement that only carries the conversation along ("I'll
// definitely check it out", "I find it so moving", "I remember you saying that").
const PHATIC = /^(?:(?:definitely|surely|totally|probably|certainly|for sure|def) )?(?:check (?:it|that|them|this)|let you|keep (?:that|this|it|you)|give (?:it|that)|try (?:it|that)|think about|look (?:into|at) (?:it|that)|be tuning|do (?:it|that)|let (?:you|me)|it |that |them |you |your |the thought|what you|how you)/i;
const PHATIC_VERBS = /^i (?:(?:[a-z]+ly|even|still|also|always|will|'ll) )*(?:remember|find|found it|hear|heard|bet|love (?:the|that|this|it|how|what|your|you)|like (?:the|that|this|it|how|what|your|you)|appreciate|can't wait|cannot wait|can tell|totally get|get it|hope|wish|make sure|keep (?:working|trying|going|at it|pushing)|had (?:a |so much |lots of |such a )?(?:great|good|wonderful|amazing|lovely|fun|blast|awesome|fantastic)\b(?: (?:time|day|night))?(?: there| with (?:them|you|it))?$)/i;
// A short statement whose object is only a pronoun or "there" ("I put a lot of effort into it").
const DANGLING = /^(?:\S+ ){0,5}(?:it|that|there|them|this|those)$/i;
// A time at the end of a clause, set aside when judging what the clause is about.
const TIME_TAIL = / (?:yesterday|today|tonight|last \w+|this \w+|next \w+|recently|lately|again|too|as well)$/i;
// Words that mark a statement as a change of what was true before.
const CHANGE = /\b(?:now|no longer|any ?more|these days|nowadays|moved|switched|changed|new|started)\b/i;

const MONTH_OR_DAY = /\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(tember)?|oct(ober)?|nov(ember)?|dec(ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|weekend|next (week|month|year)|last (week|month|year))\b/i;

function boosts(sentence: string): number {
  let b = 0;
  if (/\d/.test(sentence)) b += 0.5;
  if (MONTH_OR_DAY.test(sentence)) b += 0.5;
  // A capitalised word that does not start the sentence and is not "I": a name.
  if (/\s(?!I\b)\p{Lu}[\p{L}\p{N}]+/u.test(sentence)) b += 0.5;
  return b;
}


/** The best rule reading of one clause, or null when it is not a statement about the peer. */
export function readSentence(peer: string, sentence: string): { content: string; slot: string | null; category: string; score: number } | null {
  const text = sentence.replace(/[’‘]/g, "'").trim();
  if (/\?\s*["')\]]*$/.test(text)) return null;
  // One space between words: the rules then need no \s+ (whose runs of whitespace a backtracking
  // matcher splits every way, 41 s of CPU for one sentence with 4,000 spaces).
  let spaced = text.replace(/\s+/g, ' ').replace(LEAD_IN, '').replace(/^i've\b/i, 'I have');
  if (SUBJECTLESS.test(spaced)) spaced = `I ${spaced}`;
  // A closing terminator with its quotes ("I love cats!)") goes; quotes alone stay.
  const unquoted = trimEndOf(spaced, /["')\]]/);
  const body = (/[.!…]$/.test(unquoted) ? trimEndOf(unquoted, /[.!…]/) : spaced).trim();
  if (!body || FILLER.test(body) && body.split(/\s+/).length <= 6) return null;
  if (HEDGE.test(body)) return null;
  const negated = NEGATED.test(body);
  for (const rule of RULES) {
    const m = body.match(rule.re);
    if (!m) continue;
    if (negated && !rule.negation) return null;
    if (rule.category === 'fact' && GENERIC_FILLER_VERBS.test(body)) return null;
    if (rule.category === 'identity' && rule.score < 5 && (TRANSIENT.test(m[1]!) || TRANSIENT.test(m[1]!.replace(/^an?\s+/i, '')))) return null;
    const rest = m[m.length - 1]!.trim();
    if (rule.score < 5 && (VAGUE.test(rest) || PHATIC.test(rest) || PHATIC_VERBS.test(body) || DANGLING.test(rest.replace(TIME_TAIL, '')))) return null;
    const made = rule.make(peer, m);
    return { content: made.content.replace(/\s+/g, ' '), slot: made.slot ?? null, category: rule.category, score: rule.score + boosts(body) };
  }
  return null;
}

// Bounds of the work per add-event: a message is read up to MAX_SCAN characters, and at most
// MAX_PER_MESSAGE claims come from one message and MAX_PER_EVENT from one event.
const MAX_SCAN = 20_000;
const MAX_SENTENCE = 1_000;
const MAX_PER_MESSAGE = 12;
const MAX_PER_EVENT = 48;

// Where a sentence splits into clauses: punctuation or a conjunction followed by a first-person subject.
const FIRST_PERSON = "(?:i|i'm|i've|i'll|i'd|my|we|we're|we've)\\b";
const CLAUSE_BREAK = new RegExp(`(?:[,;:]|\\s[-–—])\\s*(?:(?:and|but|so|then|plus|because|cause)\\s+)?(?=${FIRST_PERSON})|\\s(?:and|but|so|then|plus)\\s+(?=${FIRST_PERSON})`, 'giu');
// A sentence that reports someone else's words: its later clauses are not the peer's statements.
const REPORTED = new RegExp(`\\b(?:${SAYING})\\b|["“”]`, 'i');

/** The sentence-level patterns built at run time, for the linear-time unit test (beside RULE_PATTERNS). */
export const CLAUSE_PATTERNS: RegExp[] = [CLAUSE_BREAK, REPORTED];

/** The clauses of a sentence (offsets relative to the sentence), each starting with a first-person subject after the first. */
export function clauseSpans(sentence: string): { start: number; end: number }[] {
  const cuts = [0];
  for (const m of sentence.matchAll(CLAUSE_BREAK)) {
    // A lead-in alone ("By the way, my name is Tomás") is no clause of its own.
    if (`${sentence.slice(cuts[cuts.length - 1], m.index).trim()} `.replace(LEAD_IN, '') === '') continue;
    cuts.push(m.index + m[0].length);
  }
  return cuts.map((start, i) => {
    let end = i + 1 < cuts.length ? cuts[i + 1]! : sentence.length;
    // The break's punctuation and conjunction belong to neither clause.
    while (end > start && /[\s,;:\-–—]/.test(sentence[end - 1]!)) end--;
    if (i + 1 < cuts.length) {
      const tail = /\s(?:and|but|so|then|plus|because|cause)$/i.exec(sentence.slice(start, end));
      if (tail) end -= tail[0].length;
      while (end > start && /[\s,;:\-–—]/.test(sentence[end - 1]!)) end--;
    }
    return { start, end };
  }).filter((c) => c.end > c.start);
}

/** A time that opens the sentence ("Last weekend, I went hiking and I saw a bear") dates its later clauses too. */
function leadingWhen(sentence: string, at: Date, clause: number) {
  if (clause === 0) return null;
  const when = resolveWhen(sentence, at);
  return when && sentence.toLowerCase().indexOf(when.phrase.toLowerCase()) <= 12 ? when : null;
}

/** The readings of one message: every clause the rules accept, with its time resolved. */
function readMessage(peer: string, content: string, at: Date | undefined): (Omit<Proposal, 'message' | 'injection'> & { sentenceInjection?: string })[] {
  const out: (Omit<Proposal, 'message' | 'injection'> & { sentenceInjection?: string })[] = [];
  for (const span of sentenceSpans(content, 0, Math.min(content.length, MAX_SCAN), 'bullets')) {
    if (out.length >= MAX_PER_MESSAGE) break;
    const sentence = content.slice(span.start, span.end);
    const own = injectionFinding(sentence);
    if (own) {
      out.push({ start: span.start, end: span.end, content: '', categories: [], slot: null, sentenceInjection: own });
      continue; // an instruction aimed at a model is not a statement about the peer
    }
    if (sentence.length > MAX_SENTENCE || /\?\s*["')\]]*$/.test(sentence.trim())) continue;
    // A conditional or hedged sentence ("If I win, I'll buy a boat") is read as a whole, never by clause.
    const clauses = HEDGE.test(sentence.replace(/[’‘]/g, "'").trim().replace(LEAD_IN, '')) ? [{ start: 0, end: sentence.length }] : clauseSpans(sentence);
    for (const [i, c] of clauses.entries()) {
      if (out.length >= MAX_PER_MESSAGE) break;
      if (i > 0 && REPORTED.test(sentence.slice(0, c.start))) break;
      const clause = sentence.slice(c.start, c.end);
      const read = readSentence(peer, clause);
      if (!read) continue;
      const when = at ? resolveWhen(clause, at) ?? leadingWhen(sentence, at, i) : null;
      out.push({
        start: span.start + c.start, end: span.start + c.end,
        content: when ? `${read.content.replace(/\.$/, '')} (${when.label}).` : read.content,
        categories: [read.category], slot: read.slot, change: read.slot !== null && CHANGE.test(clause),
        validFrom: when?.past ? when.start : null,
      });
    }
  }
  return out;
}

/** The deterministic rule-based deriver. */
export function createRuleDeriver(): ClaimDeriver {
  return {
    name: 'rules-v2',
    async derive({ peer, messages }) {
      const proposals: Proposal[] = [];
      const seen = new Set<string>();
      let firstInjection: { message: number; start: number; end: number; finding: string } | null = null;
      messages.forEach((msg, index) => {
        if (msg.role !== 'user') return; // only the peer's own turns are statements by the peer
        const finding = injectionFinding(msg.content);
        // The message time may arrive serialised (an ISO string) from the activity that loaded it.
        for (const r of readMessage(peer, msg.content, msg.created_at === undefined ? undefined : new Date(msg.created_at))) {
          if (r.sentenceInjection) {
            firstInjection ??= { message: index, start: r.start, end: r.end, finding: r.sentenceInjection };
            continue;
          }
          const key = norm(r.content);
          if (proposals.length >= MAX_PER_EVENT || seen.has(key)) continue;
          seen.add(key);
          proposals.push({ ...r, message: index, injection: finding });
        }
      });
      if (proposals.length) return proposals;
      const inj = firstInjection as { message: number; start: number; end: number; finding: string } | null;
      if (inj) {
        // Hostile content is proposed as what it is, a quote, held for review and never eligible.
        const quote = messages[inj.message]!.content.slice(inj.start, inj.end);
        return [{
          message: inj.message, start: inj.start, end: inj.end, content: `${peer} wrote: "${quote}"`,
          categories: ['unverified'], slot: null, injection: inj.finding,
        }];
      }
      return [];
    },
  };
}
