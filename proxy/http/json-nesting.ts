import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './json-text.ts';

/**
 * How deeply JSON text nests, counted on the text before it is parsed. `JSON.parse` accepts any
 * depth, but what handles a parsed body afterwards (schema checks, canonical JSON, msgpack,
 * compiling a tool's inputSchema) recurses, and 100,000 levels overflow the stack: a request that
 * deep is refused before any of it runs. Brackets inside strings do not count; text that is not
 * JSON may be miscounted, and `JSON.parse` refuses it anyway.
 */
export const MAX_JSON_DEPTH = 64;

export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}
