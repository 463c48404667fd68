import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE, scanJsonText } from './json-text.ts';

/**
 * A JSON object that names a member twice: `{"amount": 900000, "amount": 5}`. `JSON.parse` keeps
 * the last and drops the first without a word, so what a policy judges, what is stored and what a
 * tool is sent would all lack a value the client sent and signed, and a reader that keeps the
 * first (some parsers do) would see another request. RFC 8259 §4 leaves such text's meaning
 * undefined; a body holding it is refused instead (docs/security.md).
 *
 * The check costs one pass over the parsed value: an object's members are counted in the text
 * (by the pass that also measures its nesting, `scanJsonText`) and in the parsed value, and only
 * when the counts differ is the text walked again to name the member.
 */
export interface RepeatedMember {
  /** JSON Pointer to the member (RFC 6901), e.g. `/input/amount`. */
  pointer: string;
  name: string;
}

/**
 * The first member named twice in one object of `text`, which `JSON.parse` read as `parsed`; or
 * null. `membersInText` is what `scanJsonText` counted in `text`.
 */
export function repeatedMember(text: string, parsed: unknown, membersInText = scanJsonText(text, Infinity).members): RepeatedMember | null {
  return membersInText === membersOf(parsed) ? null : findRepeated(text);
}

function membersOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let members = 0;
  if (Array.isArray(value)) {
    for (const item of value) members += membersOf(item);
    return members;
  }
  for (const key in value) members += 1 + membersOf((value as Record<string, unknown>)[key]);
  return members;
}

/** The index of the quote closing the string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (text.charCodeAt(i) !== QUOTE) i += text.charCodeAt(i) === BACKSLASH ? 2 : 1;
  return i;
}

/** Where the walk is: in an object (the names seen, the member being read) or an array (the item's index). */
interface Level {
  names: Set<string> | null;
  at: string;
  index: number;
}

/** Walks text that is valid JSON, comparing names as decoded (`"a"` and `"\u0061"` are one name). */
function findRepeated(text: string): RepeatedMember | null {
  const levels: Level[] = [];
  let expectName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const level = levels[levels.length - 1];
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (expectName && level?.names) {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        if (level.names.has(name)) return { pointer: pointerTo(levels, name), name };
        level.names.add(name);
        level.at = name;
        expectName = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT) {
      levels.push({ names: new Set(), at: '', index: 0 });
      expectName = true;
    } else if (c === OPEN_ARRAY) {
      levels.push({ names: null, at: '', index: 0 });
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      levels.pop();
    } else if (c === COMMA && level) {
      if (level.names) expectName = true;
      else level.index++;
    }
  }
  return null;
}

function pointerTo(levels: Level[], name: string): string {
  const path = levels.slice(0, -1).map((level) => (level.names ? level.at : String(level.index)));
  return [...path, name].map((segment) => `/${segment.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}
