/** Character codes of JSON's structure, for the scanners that read JSON text without parsing it. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COLON = 0x3a;
export const COMMA = 0x2c;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;

/**
 * How deeply JSON text nests, counted on the text before it is parsed. `JSON.parse` accepts any
 * depth, but what handles a parsed body afterwards (schema checks, canonical JSON, msgpack,
 * compiling a tool's inputSchema) recurses, and 100,000 levels overflow the stack: a request that
 * deep is refused before any of it runs. Brackets inside strings do not count; text that is not
 * JSON may be miscounted, and `JSON.parse` refuses it anyway.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * One pass over JSON text: whether it nests deeper than `limit` (the pass stops there) and how
 * many object members it names (one `:` outside strings each), which json-members.ts compares
 * with the parsed value.
 */
export function scanJsonText(text: string, limit: number): { tooDeep: boolean; members: number } {
  let depth = 0;
  let members = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === COLON) members++;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return { tooDeep: true, members };
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return { tooDeep: false, members };
}
