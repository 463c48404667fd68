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
 * 2^53 has 16 digits: an integer written with fewer is one JavaScript's numbers hold exactly, so
 * only a longer run of digits needs a closer look (`inexactInteger`).
 */
const EXACT_DIGITS = 15;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const MINUS = 0x2d;

/**
 * One pass over JSON text: whether it nests deeper than `limit` (the pass stops there), how many
 * object members it names (one `:` outside strings each), which json-members.ts compares with the
 * parsed value, and whether a number outside strings runs to more than 15 digits.
 */
export function scanJsonText(text: string, limit: number): { tooDeep: boolean; members: number; longDigits: boolean } {
  let depth = 0;
  let members = 0;
  let inString = false;
  let digits = 0;
  let longDigits = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c >= DIGIT_0 && c <= DIGIT_9) {
      if (++digits > EXACT_DIGITS) longDigits = true;
      continue;
    } else if (c === QUOTE) inString = true;
    else if (c === COLON) members++;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return { tooDeep: true, members, longDigits };
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
    digits = 0;
  }
  return { tooDeep: false, members, longDigits };
}

const NUMBER_OR_STRING = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * The first integer in JSON text (one written without a fraction or an exponent) that
 * `JSON.parse` cannot hold exactly, or null. Beyond ±2^53 a JavaScript number rounds:
 * `12345678901234567890` would be read as 12345678901234567168 and, say, compared in a policy as
 * that. RFC 7493 (I-JSON) §2.2 leaves such integers to the sender to avoid; the API refuses them
 * rather than store another number than the one sent. Floats are approximations in every reader
 * and are left alone.
 */
export function inexactInteger(text: string): string | null {
  for (const [token] of text.matchAll(NUMBER_OR_STRING)) {
    const digits = token.charCodeAt(0) === MINUS ? token.length - 1 : token.length;
    if (digits <= EXACT_DIGITS || token.charCodeAt(0) === QUOTE || /[.eE]/.test(token)) continue;
    if (BigInt(token) !== BigInt(Number(token))) return token;
  }
  return null;
}
