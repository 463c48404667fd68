/**
 * The builtins marked `host` in `policies/compiler/builtins.ts`, implemented in JavaScript and
 * handed to `loadPolicy` (OPA's Wasm modules call them through the `opa_builtinN` imports, and
 * modules built by `opa build -t wasm` call theirs the same way), each under the name the module
 * imports it by (`hostImportName`: `gatehouse.yaml.marshal` for a name the SDK would answer itself).
 * Besides those: `gatehouse.time.zone_offset` (ZONE_OFFSET_BUILTIN), which the module's time
 * builtins ask for a named zone, and, for modules built by `opa build`, the builtins OPA's own
 * Wasm leaves to the host that Gatehouse's modules run themselves (runtime-builtins.ts).
 *
 * Each receives its operands as parsed JSON and returns a JSON-able value, or an ArrayBuffer of
 * JSON text for a value JavaScript cannot hold exactly (see `exactInteger`). As in OPA without
 * `strict-builtin-errors`, operands of the wrong type or invalid patterns make the call undefined
 * (the function returns `undefined`) rather than failing the evaluation.
 */
import { randomUUID } from 'node:crypto';
import { ZONE_OFFSET_BUILTIN, hostImportName } from '../compiler/builtins.ts';
import { cidrMerge } from './builtins/cidr-merge.ts';
import { PUBLIC_KEY_ALGORITHMS, isObject, jwtDecodeVerify, jwtEncodeSign, jwtVerifyPublicKey, type SignatureAlgorithm } from './builtins/crypto.ts';
import { zoneAt } from './builtins/zone-offset.ts';
import { yamlUnmarshal } from './builtins/go-yaml-decode.ts';
import { yamlMarshal } from './builtins/go-yaml-emit.ts';
import { callRuntimeBuiltin } from './runtime-builtins.ts';

export type HostBuiltin = (...args: any[]) => unknown;

const isString = (v: unknown): v is string => typeof v === 'string';

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

/** The evaluation's `time.now_ns()`: nanoseconds since the epoch, read from the millisecond wall clock at its first use. */
function evaluationNowNs(): bigint {
  const now = scope?.nowNs ?? BigInt(Date.now()) * 1_000_000n;
  if (scope) scope.nowNs = now;
  return now;
}

/** `time.now_ns()`. */
const timeNowNs = (): ArrayBuffer => exactInteger(evaluationNowNs());

/** `uuid.rfc4122(k)`: a new version 4 UUID, the same one for the same key within an evaluation. */
function uuidRfc4122(k: unknown): string {
  const key = JSON.stringify(k);
  const known = scope?.uuids.get(key);
  if (known !== undefined) return known;
  const uuid = randomUUID();
  scope?.uuids.set(key, uuid);
  return uuid;
}

/** `yaml.unmarshal(s)` as JSON text, so that integers stay exact. */
function yamlUnmarshalBuiltin(s: unknown): ArrayBuffer | undefined {
  const json = isString(s) ? yamlUnmarshal(s) : undefined;
  return json === undefined ? undefined : jsonText(json);
}

/** `io.jwt.verify_<alg>(token, certificate)` for an asymmetric algorithm. */
const jwtVerifier = (algorithm: SignatureAlgorithm) => (token: unknown, certificate: unknown) =>
  isString(token) && isString(certificate) ? jwtVerifyPublicKey(algorithm, token, certificate) : undefined;

/** `io.jwt.decode_verify(token, constraints)`, checking times against the evaluation's `time.now_ns()` unless the constraints give one. */
function jwtDecodeVerifyBuiltin(token: unknown, constraints: unknown): ArrayBuffer | undefined {
  const answer = isString(token) && isObject(constraints) ? jwtDecodeVerify(token, constraints, () => Number(evaluationNowNs())) : undefined;
  return answer === undefined ? undefined : jsonText(answer);
}

/**
 * `io.jwt.encode_sign_raw(headers, payload, key)` of three strings; `io.jwt.encode_sign` too, as
 * the module hands it the JSON text of its operands, which is what OPA marshals and signs.
 */
const jwtEncodeSignBuiltin = (headers: unknown, payload: unknown, key: unknown) =>
  isString(headers) && isString(payload) && isString(key) ? jwtEncodeSign(headers, payload, key) : undefined;

/** The host builtins by OPA name. */
const byOpaName: Record<string, HostBuiltin> = {
  'internal.print': internalPrint,
  trace,
  'time.now_ns': timeNowNs,
  'io.jwt.decode_verify': jwtDecodeVerifyBuiltin,
  'io.jwt.encode_sign': jwtEncodeSignBuiltin,
  'io.jwt.encode_sign_raw': jwtEncodeSignBuiltin,
  ...Object.fromEntries(PUBLIC_KEY_ALGORITHMS.map((alg) => [`io.jwt.verify_${alg.toLowerCase()}`, jwtVerifier(alg)])),
  'net.cidr_merge': (addrs: unknown) => (Array.isArray(addrs) ? cidrMerge(addrs) : undefined),
  'yaml.marshal': (jsonText: unknown) => (isString(jsonText) ? yamlMarshal(jsonText) : undefined),
  'yaml.unmarshal': yamlUnmarshalBuiltin,
  'yaml.is_valid': (s: unknown) => isString(s) && yamlUnmarshal(s) !== undefined,
  'uuid.rfc4122': uuidRfc4122,
};

/**
 * Builtins Gatehouse's modules run inside the module but OPA's own Wasm leaves to the host: a
 * module built by `opa build -t wasm` imports them, so the host still answers them, by OPA name.
 */
const forOpaBuiltModules: Record<string, HostBuiltin> = Object.fromEntries(
  [
    'regex.find_n', 'regex.replace',
    'time.parse_rfc3339_ns', 'time.parse_duration_ns', 'time.parse_ns', 'time.format', 'time.add_date', 'time.date', 'time.clock',
    'time.weekday', 'time.diff',
    'crypto.md5', 'crypto.sha1', 'crypto.sha256', 'crypto.hmac.md5', 'crypto.hmac.sha1', 'crypto.hmac.sha256', 'crypto.hmac.sha512', 'crypto.hmac.equal',
    'io.jwt.decode', 'io.jwt.verify_hs256', 'io.jwt.verify_hs384', 'io.jwt.verify_hs512',
    'semver.is_valid', 'semver.compare', 'units.parse_bytes', 'units.parse', 'uuid.parse',
    'hex.encode', 'hex.decode', 'object.union_n', 'indexof_n', 'numbers.range_step', 'json.marshal_with_options',
    'urlquery.encode', 'urlquery.decode', 'urlquery.encode_object', 'urlquery.decode_object',
    'glob.quote_meta', 'net.cidr_is_valid',
    'graph.reachable_paths', 'net.cidr_contains_matches', 'net.cidr_expand', 'regex.template_match',
    'regex.globs_match',
  ].map((name) => [name, (...operands: unknown[]) => callRuntimeBuiltin(name, operands)]),
);

/** The names of the builtins the host answers only for modules built by `opa build`. */
export const OPA_BUILT_MODULE_BUILTINS: ReadonlySet<string> = new Set(Object.keys(forOpaBuiltModules));

/** `ZONE_OFFSET_BUILTIN(unixSeconds, zone)`: what the module's time builtins ask for a named zone, `[offset, abbreviation]`. */
function zoneOffset(unixSeconds: unknown, zone: unknown): [number, string | null] | undefined {
  return Number.isInteger(unixSeconds) && isString(zone) ? zoneAt(unixSeconds as number, zone) : undefined;
}

/** The host builtins by the names modules import them by, as `loadPolicy` takes them. */
export const hostBuiltins: Record<string, HostBuiltin> = {
  ...Object.fromEntries(Object.entries(byOpaName).map(([name, builtin]) => [hostImportName(name), builtin])),
  ...forOpaBuiltModules,
  [ZONE_OFFSET_BUILTIN]: zoneOffset,
};
