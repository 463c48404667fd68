/**
 * The builtins marked `host` in `policies/compiler/builtins.ts`, implemented in JavaScript and
 * handed to `loadPolicy` (OPA's Wasm modules call them through the `opa_builtinN` imports, and
 * modules built by `opa build -t wasm` call theirs the same way).
 *
 * Each receives its operands as parsed JSON and returns a JSON-able value, or an ArrayBuffer of
 * JSON text for a value JavaScript cannot hold exactly (see `exactInteger`). As in OPA without
 * `strict-builtin-errors`, operands of the wrong type or invalid patterns make the call undefined
 * (the function returns `undefined`) rather than failing the evaluation.
 */
import { RE2JS } from 're2js';
import { BoundedCache } from './builtins/bounded-cache.ts';
import { cidrContains } from './builtins/cidr.ts';
import { compileGlob } from './builtins/glob.ts';
import { goToLower, goToUpper } from './builtins/go-case.ts';
import { parseRfc3339Ns } from './builtins/rfc3339.ts';

export type HostBuiltin = (...args: any[]) => unknown;

/** OPA keeps 100 compiled patterns of each kind; so do we. */
const PATTERN_CACHE_SIZE = 100;

/** A compiled pattern, or null for one that does not compile (remembered so it is not retried). */
const regexCache = new BoundedCache<string, RE2JS | null>(PATTERN_CACHE_SIZE);
const globCache = new BoundedCache<string, RegExp | null>(PATTERN_CACHE_SIZE);

const isString = (v: unknown): v is string => typeof v === 'string';

/**
 * `regex.match(pattern, value)`: whether `value` contains a match of the RE2 pattern.
 *
 * Patterns are compiled by re2js, a port of RE2 itself, so the syntax is exactly Go's: flag
 * groups such as `(?i)`, `(?s)`, `(?m)` (leading or scoped), `\pL`, `[[:alpha:]]`, `\Q…\E`; and
 * what RE2 refuses (lookaround, backreferences) is refused here too — the call is undefined.
 * RE2 matches in linear time, so no pattern or input can stall the request path.
 */
function regexMatch(pattern: unknown, value: unknown): boolean | undefined {
  if (!isString(pattern) || !isString(value)) return undefined;
  const re = regexCache.getOrCreate(pattern, () => {
    try {
      return RE2JS.compile(pattern);
    } catch {
      return null;
    }
  });
  return re ? re.test(value) : undefined;
}

/**
 * `glob.match(pattern, delimiters, match)`. `delimiters` null means none; an empty array means
 * the default `["."]`; every element must be a one-character string.
 */
function globMatch(pattern: unknown, delimiters: unknown, match: unknown): boolean | undefined {
  if (!isString(pattern) || !isString(match)) return undefined;
  let delims: string[];
  if (delimiters === null) {
    delims = [];
  } else if (Array.isArray(delimiters)) {
    if (!delimiters.every((d) => isString(d) && [...d].length === 1)) return undefined;
    delims = delimiters.length === 0 ? ['.'] : delimiters;
  } else {
    return undefined;
  }
  const key = `${pattern}-${delims.join('')}`;
  const glob = globCache.getOrCreate(key, () => {
    try {
      return compileGlob(pattern, delims);
    } catch {
      return null;
    }
  });
  return glob ? glob.test(match) : undefined;
}

/**
 * An integer as the JSON text of a host builtin's result. The SDK JSON-stringifies a returned
 * value (`_loadJSON` in opa-wasm), and a JavaScript number holds integers exactly only up to
 * 2^53, while nanosecond timestamps are around 2^60; an ArrayBuffer it passes through as raw JSON
 * text instead, which the module parses into an exact integer as OPA holds it.
 */
function exactInteger(n: bigint): ArrayBuffer {
  const bytes = new TextEncoder().encode(n.toString());
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/**
 * The clock of the evaluation under way. OPA answers `time.now_ns` with one value for a whole
 * evaluation, so that two calls in one policy agree; `withEvaluationClock` fixes it for the
 * duration of one synchronous evaluation.
 */
let evaluationNowNs: bigint | undefined;
let clockFixed = false;

/**
 * Runs `evaluate` with `time.now_ns` frozen at its first use. Evaluations are synchronous, so
 * they cannot interleave.
 */
export function withEvaluationClock<T>(evaluate: () => T): T {
  clockFixed = true;
  evaluationNowNs = undefined;
  try {
    return evaluate();
  } finally {
    clockFixed = false;
    evaluationNowNs = undefined;
  }
}

/** `time.now_ns()`: nanoseconds since the epoch, read from the millisecond wall clock. */
function timeNowNs(): ArrayBuffer {
  if (clockFixed && evaluationNowNs !== undefined) return exactInteger(evaluationNowNs);
  const now = BigInt(Date.now()) * 1_000_000n;
  if (clockFixed) evaluationNowNs = now;
  return exactInteger(now);
}

/** `time.parse_rfc3339_ns(s)`. */
function timeParseRfc3339Ns(s: unknown): ArrayBuffer | undefined {
  if (!isString(s)) return undefined;
  const ns = parseRfc3339Ns(s);
  return ns === undefined ? undefined : exactInteger(ns);
}

/** `net.cidr_contains(cidr, cidrOrIp)` for IPv4 and IPv6. */
function netCidrContains(cidr: unknown, cidrOrIp: unknown): boolean | undefined {
  if (!isString(cidr) || !isString(cidrOrIp)) return undefined;
  return cidrContains(cidr, cidrOrIp);
}

/** The host builtins by OPA name, as `loadPolicy` takes them. */
export const hostBuiltins: Record<string, HostBuiltin> = {
  lower: (s: unknown) => (isString(s) ? goToLower(s) : undefined),
  upper: (s: unknown) => (isString(s) ? goToUpper(s) : undefined),
  'regex.match': regexMatch,
  'glob.match': globMatch,
  'time.now_ns': timeNowNs,
  'time.parse_rfc3339_ns': timeParseRfc3339Ns,
  'net.cidr_contains': netCidrContains,
};
