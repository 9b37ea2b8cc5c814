/**
 * Screening of message text for instructions aimed at a model (prompt injection, jailbreaks, role or
 * system-prompt manipulation). A claim derived from such a message is never eligible context until a
 * person accepts it; the text itself stays data and is never interpreted.
 *
 * Method: the text is first normalised against obfuscation (compatibility forms such as full-width
 * letters, invisible characters, spaced-out letters, digits standing for letters); then each family of
 * attack is matched as a pattern of word classes, not fixed phrases, so rephrasings of one technique
 * match alike. The families follow the published taxonomies of attacks on instruction-following models:
 * instruction override and goal hijacking (Perez and Ribeiro, "Ignore Previous Prompt", PromptInject),
 * prompt leaking, role-play personas, refusal suppression, prefix and style injection (Wei et al.,
 * "Jailbroken: How Does LLM Safety Training Fail?"), and chat-template markup. A family that alone
 * means an attack flags the text; the others are common in ordinary talk ("from now on you ...",
 * "no limits", "the AI") and flag it only when two of them occur together. Measured on public sets by
 * `npm run bench -- injection` (docs/benchmarks.md).
 */

type Family = { what: string; re: RegExp; strong: boolean };

// Word classes shared by the families.
const DISMISS =
  "ignore|ignoring|disregard|disregarding|forget|forgetting|override|overriding|bypass|bypassing|skip|neglect|abandon|discard|" +
  "drop|set aside|put aside|pay no attention to|stop following|stop obeying|do not follow|don'?t follow|do not obey|don'?t obey|no longer follow";
const DIRECTIVES =
  'instructions?|prompts?|rules|guidelines|guidance|directions|directives|constraints|restrictions|programming|orders|commands|polic(?:y|ies)';
/** Directives that are the model's own whatever precedes them. */
const OWN_DIRECTIVES = "system (?:message|prompt)|(?:everything|all|what|anything) (?:you were|you have been|you've been) (?:told|given|instructed)";
const SCOPE = 'previous|prior|above|earlier|preceding|initial|original|all|any|your|these|those|system|existing|old';
/** A scope named after the directives: "the rules above". */
const AFTER = 'above|before|earlier|previously|so far|until now|you (?:were|have been) given';
const LIMITS =
  'restrictions?|limitations?|filters?|filtering|censorship|guidelines|rules|content polic(?:y|ies)|safety|ethics|ethical|morals?|morality|' +
  'boundaries';
const OUTPUT = 'say|print|output|write|type|reply with|respond with|answer with|return';

const FAMILIES: Family[] = [
  {
    what: 'asks to ignore its instructions',
    re: new RegExp(
      `\\b(?:${DISMISS})\\b[^.!?\\n]{0,60}?(?:\\b(?:${SCOPE})\\b[^.!?\\n]{0,30}?\\b(?:${DIRECTIVES})\\b|\\b(?:${OWN_DIRECTIVES})\\b|\\b(?:${DIRECTIVES}) (?:${AFTER})\\b)`,
    ),
    strong: true,
  },
  {
    what: 'gives the model new instructions',
    re: /\b(?:new|updated|real|actual|true|secret|hidden|additional|revised) (?:instructions?|task|orders|directives?|objective|goal|prompt|rules)\s*[:\-–]|\byour (?:real|actual|true|new|only|sole) (?:task|job|goal|objective|purpose|instructions?|mission) (?:is|are|now)\b/,
    strong: true,
  },
  {
    what: 'asks to reveal a prompt or secrets',
    re: /\b(?:reveal|print|show|repeat|output|leak|disclose|display|dump|recite|tell me|give me)\b[^.!?\n]{0,40}?\b(?:(?:your|the|its) (?:full |entire |exact )?(?:system|hidden|initial|original|secret|pre-?)\s?(?:prompt|instructions|message)|api keys?|credentials|secret keys?|access tokens?)\b/,
    strong: true,
  },
  {
    what: 'contains chat-template control markup',
    re: /<\/?\s*(?:system|assistant|im_start|im_end)\b|<\|(?:im_start|im_end|system|assistant|endoftext)\|>|\[\/?(?:inst|sys)\]|<<\/?sys>>/,
    strong: true,
  },
  { what: 'impersonates a system or assistant turn', re: /(?:^|[\s"'>\]])(?:system|assistant|developer)\s*:\s*\S/, strong: true },
  { what: 'asks to grant permissions', re: /\bgrant (?:me |yourself |us )?(?:full |admin |root )?(?:scope|access|admin|permissions?|privileges)/, strong: true },
  {
    what: 'invokes a jailbreak mode',
    re: /\b(?:developer|god|dan|jailbreak|sudo|debug|unrestricted) mode\b|\bdo anything now\b|\bjailbr(?:eak|oken)\b (?:ai|model|assistant|chatgpt|gpt|version)/,
    strong: true,
  },
  // The families below also occur in ordinary talk: two of them together flag the text.
  {
    what: "tries to change the assistant's role",
    re: /\b(?:you are now|you're now|from now on,? you|you will now|you will (?:act|behave|respond|answer|pretend|play)|act as|act like|pretend (?:to be|you are|you're|that you)|role-?play (?:as|a|an)|simulate (?:an?|being)|assume the (?:role|persona|identity)|stay in character|you are no longer|you're no longer|behave (?:as|like)|impersonate)\b/,
    strong: false,
  },
  {
    what: 'asks to drop its restrictions',
    re: new RegExp(
      `\\b(?:without|free (?:of|from)|freed from|no|zero|removed?|bypass(?:ing)?|ignor(?:e|ing)|not bound by|no longer bound by|unbound by|break(?:ing)? free of)\\b(?: (?:any|all|your|the|its|of|their|such))*\\s(?:${LIMITS})\\b|\\b(?:unfiltered|uncensored|unrestricted|amoral|unethical) (?:ai|model|assistant|bot|chatbot|version|persona|responses?|answers?)\\b|\\bevil (?:ai|bot|assistant|confidant|persona)\\b`,
    ),
    strong: false,
  },
  {
    what: 'dictates the output word for word',
    re: new RegExp(
      `\\b(?:just|only|simply) (?:${OUTPUT})\\b|\\b(?:respond|reply|answer) only (?:with|in)\\b|\\b(?:${OUTPUT}) (?:exactly|verbatim|word for word|the following)\\b|\\band nothing else\\b`,
    ),
    strong: false,
  },
  {
    what: 'prescribes how every answer starts',
    re: /\b(?:start|begin|prefix) (?:every|each|all|your) (?:reply|replies|response|responses|answer|answers|sentence|message|output)\b|\b(?:answer|respond|reply) in (?:two|2) (?:different |separate )?ways\b/,
    strong: false,
  },
  {
    what: 'forbids refusing',
    re: /\b(?:never|do not|don'?t|must not|cannot|can't) (?:refuse|decline|apologi[sz]e|say (?:no|sorry|you can'?t))\b|\b(?:do not|don'?t) (?:tell|inform|warn|remind) the user\b|\bno matter (?:what|how) (?:it is|the request|they ask)\b/,
    strong: false,
  },
  {
    what: 'switches the task',
    re: /\b(?:instead of|rather than) (?:answering|responding|replying|translating|summari[sz]ing|following|doing (?:that|this|the task))\b|\b(?:forget|never mind|stop) (?:the|that|this|your) (?:task|question|translation|summary)\b/,
    strong: false,
  },
  {
    what: 'addresses an AI model',
    re: /\b(?:an? (?:ai|language model|llm|chatbot|large language model)|as an ai\b|chat ?gpt|gpt-?\d|openai|your (?:creators|developers|programmers|training|programming|filters|guidelines|content polic(?:y|ies)|safety (?:rules|filters|guidelines)))\b/,
    strong: false,
  },
];

// Soft hyphen, zero-width and joiner characters, bidirectional controls, fillers: code points that
// render as nothing (an alternation, as some of them combine with their neighbours inside a class).
const INVISIBLE = new RegExp(
  ['\u00ad', '\u034f', '\u061c', '\u115f', '\u1160', '\u17b4', '\u17b5', '\u180e', '\u200b-\u200f', '\u202a-\u202e', '\u2060-\u2064', '\u206a-\u206f', '\ufeff']
    .map((r) => `[${r}]`)
    .join('|'),
  'g',
);
/** Every pattern the screen runs, for the linear-time check of the server's regular expressions. */
export const SCREEN_PATTERNS: RegExp[] = [...FAMILIES.map((f) => f.re), INVISIBLE];
const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's' };

/**
 * The text as the screen reads it: compatibility forms folded (full-width and styled letters), invisible
 * and bidirectional-control characters removed, letters spaced out one by one joined, digits and symbols
 * standing for letters inside words read as those letters, lower case, single spaces.
 */
export function normalizeForScreen(text: string): string {
  let t = text.normalize('NFKC').replace(INVISIBLE, '').toLowerCase();
  // "i g n o r e   t h i s": single letters separated by single spaces form one word.
  t = t.replace(/(?<![\p{L}\p{N}])\p{L}(?: \p{L}){3,}(?![\p{L}\p{N}])/gu, (m) => m.replace(/ /g, ''));
  // "1gn0re": inside a word that has letters, digits and symbols that look like letters are letters.
  t = t.replace(/[\p{L}0-9@$]+/gu, (w) => (/\p{L}/u.test(w) && /[0-9@$]/.test(w) ? w.replace(/[0-9@$]/g, (c) => LEET[c] ?? c) : w));
  return t.replace(/\s+/g, ' ');
}

/** Why the text looks like instructions aimed at a model, or null when it does not. */
export function injectionFinding(text: string): string | null {
  const t = normalizeForScreen(text);
  const weak: string[] = [];
  for (const f of FAMILIES) {
    if (!f.re.test(t)) continue;
    if (f.strong) return f.what;
    weak.push(f.what);
  }
  return weak.length >= 2 ? weak.slice(0, 2).join(' and ') : null;
}

export function injectionWarning(finding: string): string {
  return `The source message looks like instructions aimed at a model (${finding}); this proposal is held for review and is not used as context until a person accepts it by correcting it.`;
}
