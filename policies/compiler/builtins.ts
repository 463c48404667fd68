/**
 * The builtin functions the compiler accepts, with their arity and where they run.
 *
 * `native` builtins are implemented inside the Wasm runtime (export `bi_<name with dots as _>`).
 * `host` builtins are called through OPA's `opa_builtinN` imports and implemented in JavaScript
 * (`policies/engine/host-builtins.ts`), as OPA itself does for builtins its Wasm runtime lacks;
 * their names are listed by the module's `builtins()` export.
 *
 * As in OPA without `strict-builtin-errors`, a builtin given operands of the wrong type (or
 * dividing by zero) is undefined rather than an error.
 */
export interface BuiltinSpec {
  arity: number;
  impl: 'native' | 'host';
  /**
   * A relation (OPA's `walk`): the builtin returns an array of answers and a call stands for each
   * of them in turn, so `walk(x, [p, v])` binds p and v once per answer; written as a statement
   * with no output, the call holds when there is at least one answer.
   */
  relation?: boolean;
  /**
   * A host builtin whose answer is a set: the host can only return JSON, so its array is made a
   * set inside the module.
   */
  hostReturnsSet?: boolean;
  /**
   * A host builtin handed its operands as their JSON text (json.marshal's, made in the module)
   * instead of as values: the SDK would hand it JavaScript numbers, in which `1e6` and `1000000`,
   * or integers beyond 2^53, can no longer be told apart.
   */
  hostTakesJsonText?: boolean;
  /**
   * A native builtin that may be given a named time zone: the runtime asks the host for the
   * zone's UTC offset through ZONE_OFFSET_BUILTIN, which the module then imports.
   */
  asksHostForZones?: boolean;
}

const native = (arity: number, extra: Partial<BuiltinSpec> = {}): BuiltinSpec => ({ arity, impl: 'native', ...extra });
const host = (arity: number, extra: Partial<BuiltinSpec> = {}): BuiltinSpec => ({ arity, impl: 'host', ...extra });

/**
 * Builtin names `@open-policy-agent/opa-wasm` answers with its own JavaScript, ahead of the
 * builtins handed to `loadPolicy` (`src/builtins/` of the package: JavaScript regular expressions
 * for `regex.split`, YAML 1.2 for `yaml.*`), so that a module importing them under these names
 * never reaches Gatehouse's implementations. Those Gatehouse implements natively (`json.is_valid`,
 * `sprintf`, `regex.split`) never import anything, so the SDK's versions never answer for them;
 * the host ones are imported under another name (see `hostImportName`).
 */
export const SDK_ANSWERED_BUILTINS: ReadonlySet<string> = new Set([
  'json.is_valid',
  'sprintf',
  'regex.split',
  'yaml.is_valid',
  'yaml.marshal',
  'yaml.unmarshal',
]);

/**
 * The name a module's `builtins()` lists for a host builtin, and the key of its implementation in
 * `policies/engine/host-builtins.ts`: OPA's name, or `gatehouse.<name>` for one the SDK would
 * answer itself. Loaded without Gatehouse's host builtins, such a module then fails with the SDK's
 * "not implemented" instead of silently answering with other semantics.
 */
export function hostImportName(builtin: string): string {
  return SDK_ANSWERED_BUILTINS.has(builtin) ? `gatehouse.${builtin}` : builtin;
}

/**
 * The host builtin behind the time builtins' named zones: `(unixSeconds, zone)` → the zone's UTC
 * offset in seconds at that instant, undefined for an unknown zone. The module has no time zone
 * database; numbers, `"UTC"` and `""` it handles itself, and only a named zone (or `"Local"`)
 * reaches the host. Not an OPA builtin, so a plain `loadPolicy` fails such a call with the SDK's
 * "not implemented" rather than answering in the wrong zone.
 */
export const ZONE_OFFSET_BUILTIN = 'gatehouse.time.zone_offset';

export const BUILTINS: Readonly<Record<string, BuiltinSpec>> = {
  // Operators (the planner calls these for infix syntax).
  plus: native(2),
  minus: native(2), // numbers, or set difference
  mul: native(2),
  div: native(2),
  rem: native(2),
  and: native(2), // set intersection `&`
  or: native(2), // set union `|`
  equal: native(2),
  neq: native(2),
  lt: native(2),
  lte: native(2),
  gt: native(2),
  gte: native(2),
  'internal.member_2': native(2), // value in collection
  'internal.member_3': native(3), // key, value in collection
  // `with input.a.b as v`: copy of doc with the value at path (an array of keys) replaced,
  // creating objects along the way.
  'internal.upsert': native(3),

  count: native(1),
  sum: native(1),
  product: native(1),
  max: native(1),
  min: native(1),
  sort: native(1),
  abs: native(1),
  round: native(1),
  ceil: native(1),
  floor: native(1),
  'numbers.range': native(2),
  'numbers.range_step': native(3),
  to_number: native(1),
  format_int: native(2),

  concat: native(2),
  split: native(2),
  sprintf: native(2),
  trim: native(2),
  trim_space: native(1),
  trim_prefix: native(2),
  trim_suffix: native(2),
  trim_left: native(2),
  trim_right: native(2),
  replace: native(3),
  'strings.replace_n': native(2),
  startswith: native(2),
  endswith: native(2),
  contains: native(2),
  indexof: native(2),
  indexof_n: native(2),
  substring: native(3),
  'strings.reverse': native(1),
  'strings.count': native(2),
  'strings.any_prefix_match': native(2),
  'strings.any_suffix_match': native(2),
  // RE2 patterns as Go's regexp compiles and matches them (runtime/assembly/regex/).
  'regex.match': native(2),
  'regex.is_valid': native(1),
  'regex.find_n': native(3),
  'regex.find_all_string_submatch_n': native(3),
  'regex.replace': native(3),
  'regex.split': native(2),
  'regex.template_match': native(4),
  'regex.globs_match': native(2),
  lower: native(1),
  upper: native(1),
  // print(…) statements, rewritten (check/print-calls.ts), and trace(note): output for the host, always true.
  'internal.print': host(1),
  trace: host(1),

  'object.get': native(3),
  'object.keys': native(1),
  'object.union': native(2),
  'object.union_n': native(1),
  'object.remove': native(2),
  'object.filter': native(2),
  'object.subset': native(2),
  'array.concat': native(2),
  'array.flatten': native(1),
  'array.slice': native(3),
  'array.reverse': native(1),
  union: native(1),
  intersection: native(1),
  'graph.reachable': native(2),
  'graph.reachable_paths': native(2),
  walk: { ...native(1), relation: true },
  'json.patch': native(2),
  'json.filter': native(2),
  'json.remove': native(2),

  'bits.and': native(2),
  'bits.or': native(2),
  'bits.xor': native(2),
  'bits.negate': native(1),
  'bits.lsh': native(2),
  'bits.rsh': native(2),

  is_string: native(1),
  is_number: native(1),
  is_boolean: native(1),
  is_array: native(1),
  is_object: native(1),
  is_set: native(1),
  is_null: native(1),
  type_name: native(1),

  'json.marshal': native(1),
  'json.marshal_with_options': native(2),
  'json.unmarshal': native(1),
  'json.is_valid': native(1),
  'base64.encode': native(1),
  'base64.decode': native(1),
  'base64.is_valid': native(1),
  'base64url.encode': native(1),
  'base64url.encode_no_pad': native(1),
  'base64url.decode': native(1),
  'hex.encode': native(1),
  'hex.decode': native(1),
  'urlquery.encode': native(1),
  'urlquery.decode': native(1),
  'urlquery.encode_object': native(1),
  'urlquery.decode_object': native(1),
  'crypto.md5': native(1),
  'crypto.sha1': native(1),
  'crypto.sha256': native(1),
  'crypto.hmac.md5': native(2),
  'crypto.hmac.sha1': native(2),
  'crypto.hmac.sha256': native(2),
  'crypto.hmac.sha512': native(2),
  'crypto.hmac.equal': native(2),
  'io.jwt.decode': native(1),
  'io.jwt.verify_hs256': native(2),
  'io.jwt.verify_hs384': native(2),
  'io.jwt.verify_hs512': native(2),
  'semver.is_valid': native(1),
  'semver.compare': native(2),
  'units.parse_bytes': native(1),
  'units.parse': native(1),
  'uuid.parse': native(1),

  'net.cidr_contains': native(2),
  'net.cidr_contains_matches': native(2),
  'net.cidr_expand': native(1),
  'net.cidr_intersects': native(2),
  'net.cidr_is_valid': native(1),
  'glob.match': native(3),
  'glob.quote_meta': native(1),
  'time.parse_rfc3339_ns': native(1),
  'time.parse_duration_ns': native(1),
  'time.parse_ns': native(2),
  'time.format': native(1, { asksHostForZones: true }),
  'time.add_date': native(4, { asksHostForZones: true }),
  'time.date': native(1, { asksHostForZones: true }),
  'time.clock': native(1, { asksHostForZones: true }),
  'time.weekday': native(1, { asksHostForZones: true }),
  'time.diff': native(2, { asksHostForZones: true }),

  'time.now_ns': host(0),
  'yaml.marshal': host(1, { hostTakesJsonText: true }),
  'yaml.unmarshal': host(1),
  'yaml.is_valid': host(1),
  'uuid.rfc4122': host(1),
  'net.cidr_merge': host(1, { hostReturnsSet: true }),
  'io.jwt.verify_rs256': host(2),
  'io.jwt.verify_rs384': host(2),
  'io.jwt.verify_rs512': host(2),
  'io.jwt.verify_ps256': host(2),
  'io.jwt.verify_ps384': host(2),
  'io.jwt.verify_ps512': host(2),
  'io.jwt.verify_es256': host(2),
  'io.jwt.verify_es384': host(2),
  'io.jwt.verify_es512': host(2),
  'io.jwt.verify_eddsa': host(2),
  'io.jwt.decode_verify': host(2),
  'io.jwt.encode_sign': host(3, { hostTakesJsonText: true }),
  'io.jwt.encode_sign_raw': host(3),
};

/** The runtime export implementing a native builtin. */
export function nativeExportName(builtin: string): string {
  return 'bi_' + builtin.replace(/\./g, '_');
}

/** Infix operator → builtin. */
export const OPERATOR_BUILTINS: Readonly<Record<string, string>> = {
  '+': 'plus',
  '-': 'minus',
  '*': 'mul',
  '/': 'div',
  '%': 'rem',
  '&': 'and',
  '|': 'or',
  '==': 'equal',
  '!=': 'neq',
  '<': 'lt',
  '<=': 'lte',
  '>': 'gt',
  '>=': 'gte',
};
