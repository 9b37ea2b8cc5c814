/**
 * Screening of message text for instructions aimed at a model (prompt injection, role or system-prompt
 * manipulation). A claim derived from such a message is never eligible context until a person accepts
 * it; the text itself stays data and is never interpreted.
 */

const REVEAL_VERB = /\b(?:reveal|print|show|repeat|output|leak) /gi;
const REVEALED = /^(?:system prompt|hidden prompt|instructions|api keys?|secrets?|passwords?)\b/i;

/**
 * A verb followed, within six words of the same sentence and line, by what it asks to reveal. In code:
 * a pattern with a bounded gap of words backtracks over every split of repeated verbs.
 */
function asksToReveal(text: string): boolean {
  REVEAL_VERB.lastIndex = 0;
  for (let m = REVEAL_VERB.exec(text); m; m = REVEAL_VERB.exec(text)) {
    const from = m.index + m[0].length;
    const clause = text.slice(from, from + 400).split(/[.!?\n]/, 1)[0]!;
    const words = clause.split(' ');
    for (let i = 0; i <= 6 && i < words.length; i++) if (REVEALED.test(words.slice(i, i + 3).join(' '))) return true;
  }
  return false;
}

const PATTERNS: { re: { test(text: string): boolean }; what: string }[] = [
  { re: /\b(ignore|disregard|forget|override)\b[^.!?\n]{0,40}\b(previous|prior|above|earlier|all|your|the)\b[^.!?\n]{0,20}\b(instructions?|prompts?|rules|directions|guidelines)\b/i, what: 'asks to ignore instructions' },
  { re: /\byou are now\b|\bfrom now on,? you\b|\bact as (an? )?(unrestricted|different|new)\b|\bpretend (to be|you are)\b/i, what: 'tries to change the assistant\'s role' },
  { re: /\b(developer|god|jailbreak|dan) mode\b|\bjailbreak\b/i, what: 'asks for a jailbreak mode' },
  { re: { test: asksToReveal }, what: 'asks to reveal a prompt or secrets' },
  { re: /(^|[\s"'>\]])(system|assistant|developer)\s*:\s*\S/i, what: 'impersonates a system or assistant turn' },
  { re: /<\/?\s*(system|assistant|im_start|im_end)\b|<\|im_(start|end)\|>|\[\/?(INST|SYS)\]|<<SYS>>/i, what: 'contains chat-template control markup' },
  { re: /\bgrant (me |yourself )?(scope|access|admin|permission)/i, what: 'asks to grant permissions' },
  { re: /\brespond only with\b|\bdo not (tell|inform) the user\b/i, what: 'dictates the assistant\'s output' },
];

/** Why the text looks like instructions aimed at a model, or null when it does not. */
export function injectionFinding(text: string): string | null {
  // One space between words on a line (line breaks still end the gaps the patterns allow).
  const spaced = text.replace(/[^\S\n]+/g, ' ');
  for (const p of PATTERNS) if (p.re.test(spaced)) return p.what;
  return null;
}

export function injectionWarning(finding: string): string {
  return `The source message looks like instructions aimed at a model (${finding}); this proposal is held for review and is not used as context until a person accepts it by correcting it.`;
}
