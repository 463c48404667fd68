/**
 * The builtins marked `host` in `policies/compiler/builtins.ts`, implemented in JavaScript and
 * handed to `loadPolicy` (OPA's Wasm modules call them through the `opa_builtinN` imports, and
 * modules built by `opa build -t wasm` call theirs the same way), each under the name the module
 * imports it by (`hostImportName`: `gatehouse.yaml.marshal` for a name the SDK would answer itself).
 * Besides those: `gatehouse.time.zone_offset` (ZONE_OFFSET_BUILTIN), which the module's time
 * builtins ask for a named zone, and the time builtins OPA's own Wasm leaves to the host, for
 * modules built by `opa build`.
 *
 * Each receives its operands as parsed JSON and returns a JSON-able value, or an ArrayBuffer of
 * JSON text for a value JavaScript cannot hold exactly (see `exactInteger`). As in OPA without
 * `strict-builtin-errors`, operands of the wrong type or invalid patterns make the call undefined
 * (the function returns `undefined`) rather than failing the evaluation.
 */
import { RE2JS } from 're2js';
import { ZONE_OFFSET_BUILTIN, hostImportName } from '../compiler/builtins.ts';
import { BoundedCache } from './builtins/bounded-cache.ts';
import { cidrMerge } from './builtins/cidr-merge.ts';
import { digestHex, hmacHex, jwtDecode, jwtVerifyHmac, jwtVerifyPublicKey, macsEqual, type SignatureAlgorithm } from './builtins/crypto.ts';
import { regexFindN, regexReplace } from './builtins/go-regexp.ts';
import { addDate, calendarFields, parseDurationNs, timeDiff, zonedTime, zoneOffsetSeconds } from './builtins/go-time.ts';
import { yamlUnmarshal } from './builtins/go-yaml-decode.ts';
import { yamlMarshal } from './builtins/go-yaml-emit.ts';
import { parseRfc3339Ns } from './builtins/rfc3339.ts';
import { semverCompare, semverIsValid } from './builtins/semver.ts';
import { parseBytes, parseUnits } from './builtins/units.ts';
import { newUuid, uuidParse } from './builtins/uuid.ts';

export type HostBuiltin = (...args: any[]) => unknown;

/** OPA keeps 100 compiled regular expressions; so do we. */
const PATTERN_CACHE_SIZE = 100;

/** A compiled pattern, or null for one that does not compile (remembered so it is not retried). */
const regexCache = new BoundedCache<string, RE2JS | null>(PATTERN_CACHE_SIZE);

const isString = (v: unknown): v is string => typeof v === 'string';

/**
 * The compiled RE2 pattern, or undefined for an operand that is not a string or not a valid
 * pattern. re2js is a port of RE2 itself, so the syntax and refusals are Go's, and it matches in
 * linear time.
 */
function compiledRegex(pattern: unknown): RE2JS | undefined {
  if (!isString(pattern)) return undefined;
  const re = regexCache.getOrCreate(pattern, () => {
    try {
      return RE2JS.compile(pattern);
    } catch {
      return null;
    }
  });
  return re ?? undefined;
}

/** `regex.find_n(pattern, value, n)` and `regex.replace(s, pattern, value)`, as Go's regexp does them. */
function regexFindNBuiltin(pattern: unknown, value: unknown, n: unknown): string[] | undefined {
  const re = compiledRegex(pattern);
  return re && isString(value) && Number.isInteger(n) ? regexFindN(re, value, n as number) : undefined;
}

function regexReplaceBuiltin(s: unknown, pattern: unknown, value: unknown): string | undefined {
  const re = compiledRegex(pattern);
  return re && isString(s) && isString(value) ? regexReplace(re, s, value) : undefined;
}

/**
 * JSON text as a host builtin's result. The SDK JSON-stringifies a returned value (`_loadJSON` in
 * opa-wasm), and a JavaScript number holds integers exactly only up to 2^53, while nanosecond
 * timestamps are around 2^60; an ArrayBuffer it passes through as raw JSON text instead, which
 * the module parses into exact integers as OPA holds them.
 */
function jsonText(text: string): ArrayBuffer {
  const bytes = new TextEncoder().encode(text);
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

const exactInteger = (n: bigint): ArrayBuffer => jsonText(n.toString());

/** What a policy says while it is evaluated: a `print` statement's line, or a `trace` note. */
export interface PolicyOutput {
  kind: 'print' | 'note';
  text: string;
}

/**
 * What one evaluation answers the same every time it asks: OPA fixes `time.now_ns` for a whole
 * evaluation, so that two calls in one policy agree, and gives `uuid.rfc4122(k)` one UUID per key.
 * `withEvaluationScope` holds them for the duration of one synchronous evaluation, with where its
 * output goes.
 */
interface EvaluationScope {
  nowNs?: bigint;
  uuids: Map<string, string>;
  output?: (output: PolicyOutput) => void;
}

let scope: EvaluationScope | undefined;

/**
 * Runs `evaluate` as one evaluation: `time.now_ns` frozen at its first use, `uuid.rfc4122`
 * remembered per key, `print` lines and `trace` notes handed to `output` (dropped without one).
 * Evaluations are synchronous, so they cannot interleave.
 */
export function withEvaluationScope<T>(evaluate: () => T, output?: (output: PolicyOutput) => void): T {
  scope = output ? { uuids: new Map(), output } : { uuids: new Map() };
  try {
    return evaluate();
  } finally {
    scope = undefined;
  }
}

/** A value as Rego prints it: strings inside collections quoted, `, ` and `: ` between members. */
function regoText(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(regoText).join(', ')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${regoText(v)}`).join(', ')}}`;
  return JSON.stringify(value);
}

/**
 * `internal.print([xs, ys, …])`, what `print(x, y, …)` compiles to (policies/compiler/check/
 * print-calls.ts): each argument is the set of its values. As OPA does, one line per combination
 * of values, the arguments separated by spaces, a string as it is and anything else as Rego
 * prints it, an undefined argument (no values) as `<undefined>`. Always true.
 */
function internalPrint(operands: unknown): true {
  if (!scope?.output || !Array.isArray(operands)) return true;
  const output = scope.output;
  const lines = (i: number, done: string[]): void => {
    if (i === operands.length) return output({ kind: 'print', text: done.join(' ') });
    const values = operands[i];
    if (!Array.isArray(values) || values.length === 0) return lines(i + 1, [...done, '<undefined>']);
    for (const value of values) lines(i + 1, [...done, typeof value === 'string' ? value : regoText(value)]);
  };
  lines(0, []);
  return true;
}

/** `trace(note)`: a note for `policies test --explain notes`; true for a string, undefined otherwise, as in OPA. */
function trace(note: unknown): true | undefined {
  if (!isString(note)) return undefined;
  scope?.output?.({ kind: 'note', text: note });
  return true;
}

/** `time.now_ns()`: nanoseconds since the epoch, read from the millisecond wall clock. */
function timeNowNs(): ArrayBuffer {
  const now = scope?.nowNs ?? BigInt(Date.now()) * 1_000_000n;
  if (scope) scope.nowNs = now;
  return exactInteger(now);
}

/** `uuid.rfc4122(k)`: a new version 4 UUID, the same one for the same key within an evaluation. */
function uuidRfc4122(k: unknown): string {
  const key = JSON.stringify(k);
  const known = scope?.uuids.get(key);
  if (known !== undefined) return known;
  const uuid = newUuid();
  scope?.uuids.set(key, uuid);
  return uuid;
}

/** `yaml.unmarshal(s)` as JSON text, so that integers stay exact. */
function yamlUnmarshalBuiltin(s: unknown): ArrayBuffer | undefined {
  const json = isString(s) ? yamlUnmarshal(s) : undefined;
  return json === undefined ? undefined : jsonText(json);
}

/** `time.parse_rfc3339_ns(s)`. */
function timeParseRfc3339Ns(s: unknown): ArrayBuffer | undefined {
  if (!isString(s)) return undefined;
  const ns = parseRfc3339Ns(s);
  return ns === undefined ? undefined : exactInteger(ns);
}

/** `time.parse_duration_ns(s)`. */
function timeParseDurationNs(s: unknown): ArrayBuffer | undefined {
  const ns = isString(s) ? parseDurationNs(s) : undefined;
  return ns === undefined ? undefined : exactInteger(ns);
}

/** `time.add_date(ns, years, months, days)`, in UTC. */
function timeAddDate(ns: unknown, years: unknown, months: unknown, days: unknown): ArrayBuffer | undefined {
  const t = zonedTime(ns);
  if (!t || Array.isArray(ns) || ![years, months, days].every(Number.isInteger)) return undefined;
  const result = addDate(t.ns, years as number, months as number, days as number);
  return result === undefined ? undefined : exactInteger(result);
}

/** `time.date(x)`: `[year, month, day]`; `time.clock(x)`: `[hour, minute, second]`; x is ns or [ns, zone]. */
function timeDate(x: unknown): number[] | undefined {
  const t = zonedTime(x);
  const f = t && calendarFields(t);
  return f && [f.year, f.month, f.day];
}

function timeClock(x: unknown): number[] | undefined {
  const t = zonedTime(x);
  const f = t && calendarFields(t);
  return f && [f.hour, f.minute, f.second];
}

function timeDiffBuiltin(a: unknown, b: unknown): number[] | undefined {
  const x = zonedTime(a);
  const y = zonedTime(b);
  return x && y ? timeDiff(x, y) : undefined;
}

/** `io.jwt.verify_<alg>(token, certificate)` for an asymmetric algorithm. */
const jwtVerifier = (algorithm: SignatureAlgorithm) => (token: unknown, certificate: unknown) =>
  isString(token) && isString(certificate) ? jwtVerifyPublicKey(algorithm, token, certificate) : undefined;

const digestBuiltin = (algorithm: 'md5' | 'sha1' | 'sha256') => (x: unknown) => (isString(x) ? digestHex(algorithm, x) : undefined);

/** `io.jwt.verify_hs<bits>(token, secret)`. */
const jwtHmacVerifier = (hash: 'sha256' | 'sha384' | 'sha512') => (token: unknown, secret: unknown) =>
  isString(token) && isString(secret) ? jwtVerifyHmac(hash, token, secret) : undefined;

const hmacBuiltin = (algorithm: 'md5' | 'sha1' | 'sha256' | 'sha512') => (x: unknown, key: unknown) =>
  isString(x) && isString(key) ? hmacHex(algorithm, x, key) : undefined;

/** The host builtins by OPA name. */
const byOpaName: Record<string, HostBuiltin> = {
  'internal.print': internalPrint,
  trace,
  'time.now_ns': timeNowNs,
  'io.jwt.verify_rs256': jwtVerifier('RS256'),
  'io.jwt.verify_es256': jwtVerifier('ES256'),
  'io.jwt.verify_eddsa': jwtVerifier('EdDSA'),
  'net.cidr_merge': (addrs: unknown) => (Array.isArray(addrs) ? cidrMerge(addrs) : undefined),
  'yaml.marshal': yamlMarshal,
  'yaml.unmarshal': yamlUnmarshalBuiltin,
  'yaml.is_valid': (s: unknown) => isString(s) && yamlUnmarshal(s) !== undefined,
  'uuid.rfc4122': uuidRfc4122,
};

/**
 * Builtins Gatehouse's modules run inside the module but OPA's own Wasm leaves to the host: a
 * module built by `opa build -t wasm` imports them, so the host still answers them, by OPA name.
 */
const forOpaBuiltModules: Record<string, HostBuiltin> = {
  'regex.find_n': regexFindNBuiltin,
  'regex.replace': regexReplaceBuiltin,
  'time.parse_rfc3339_ns': timeParseRfc3339Ns,
  'time.parse_duration_ns': timeParseDurationNs,
  'time.add_date': timeAddDate,
  'time.date': timeDate,
  'time.clock': timeClock,
  'time.diff': timeDiffBuiltin,
  'crypto.md5': digestBuiltin('md5'),
  'crypto.sha1': digestBuiltin('sha1'),
  'crypto.sha256': digestBuiltin('sha256'),
  'crypto.hmac.md5': hmacBuiltin('md5'),
  'crypto.hmac.sha1': hmacBuiltin('sha1'),
  'crypto.hmac.sha256': hmacBuiltin('sha256'),
  'crypto.hmac.sha512': hmacBuiltin('sha512'),
  'crypto.hmac.equal': (a: unknown, b: unknown) => (isString(a) && isString(b) ? macsEqual(a, b) : undefined),
  'io.jwt.decode': (token: unknown) => (isString(token) ? jwtDecode(token) : undefined),
  'io.jwt.verify_hs256': jwtHmacVerifier('sha256'),
  'io.jwt.verify_hs384': jwtHmacVerifier('sha384'),
  'io.jwt.verify_hs512': jwtHmacVerifier('sha512'),
  'semver.is_valid': semverIsValid,
  'semver.compare': (a: unknown, b: unknown) => (isString(a) && isString(b) ? semverCompare(a, b) : undefined),
  'units.parse_bytes': (s: unknown) => {
    const n = isString(s) ? parseBytes(s) : undefined;
    return n === undefined ? undefined : exactInteger(n);
  },
  'units.parse': (s: unknown) => {
    const n = isString(s) ? parseUnits(s) : undefined;
    return typeof n === 'bigint' ? exactInteger(n) : n;
  },
  'uuid.parse': (s: unknown) => {
    const json = isString(s) ? uuidParse(s) : undefined;
    return json === undefined ? undefined : jsonText(json);
  },
};

/** The names of the builtins the host answers only for modules built by `opa build`. */
export const OPA_BUILT_MODULE_BUILTINS: ReadonlySet<string> = new Set(Object.keys(forOpaBuiltModules));

/** `ZONE_OFFSET_BUILTIN(unixSeconds, zone)`: what the module's time builtins ask for a named zone. */
function zoneOffset(unixSeconds: unknown, zone: unknown): number | undefined {
  return Number.isInteger(unixSeconds) && isString(zone) ? zoneOffsetSeconds(unixSeconds as number, zone) : undefined;
}

/** The host builtins by the names modules import them by, as `loadPolicy` takes them. */
export const hostBuiltins: Record<string, HostBuiltin> = {
  ...Object.fromEntries(Object.entries(byOpaName).map(([name, builtin]) => [hostImportName(name), builtin])),
  ...forOpaBuiltModules,
  [ZONE_OFFSET_BUILTIN]: zoneOffset,
};
