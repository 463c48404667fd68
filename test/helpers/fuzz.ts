/**
 * Seeded generators for the fuzz suite (test/fuzz.test.ts): malformed path segments, queries,
 * headers and bodies. Every choice comes from one PRNG, so a seed replays the same requests.
 */

/** mulberry32: small, fast and good enough to spread test cases; not for anything secret. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let x = this.state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  }

  int(below: number): number {
    return Math.floor(this.next() * below);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** Lengths around the bounds the API sets (ids 128, labels 191/255, texts 1 KiB–64 KiB). */
const LENGTHS = [64, 65, 128, 129, 191, 192, 255, 256, 257, 512, 513, 1024, 1025, 2048, 4096, 65_536];

/** Characters of 1, 2, 3 and 4 UTF-8 bytes: a string at its length bound can be three times as many bytes. */
const UNITS = ['a', 'é', '€', '😀'];

/** A string value meant to break whatever reads it. */
export function hostileString(rng: Rng): string {
  switch (rng.int(6)) {
    case 0:
      return rng.pick(UNITS).repeat(rng.pick(LENGTHS));
    case 1:
      return `${rng.pick(['dec_', 'mem_', 'key_', 'trace_', 'dlv_', 'run_', 'finance:', 'notes:'])}${rng.pick(UNITS).repeat(rng.pick(LENGTHS))}`;
    case 2:
      return rng.pick(['', ' ', '\u0000', '\ud800', '\udfff\ud800', '%ff', '../../etc/passwd', '__proto__', 'constructor', '\u202e', '\r\n', '<script>', "'; --"]);
    case 3:
      return String.fromCharCode(...Array.from({ length: 1 + rng.int(64) }, () => rng.int(0x10000)));
    case 4:
      return 'x'.repeat(200_000);
    default:
      return rng.pick(['dec_0', 'mem_0', 'key_0', 'trace_0', 'dlv_0', 'finance:amount', 'decision.*', '*']);
  }
}

/** A value of any JSON type, often the wrong one. */
export function hostileValue(rng: Rng): unknown {
  switch (rng.int(6)) {
    case 0:
    case 1:
      return hostileString(rng);
    case 2:
      return rng.pick([0, -1, 0.5, -0, 1e308, -1e308, 2 ** 53 + 1, 5e-324, 100_000_000]);
    case 3:
      return rng.pick([null, true, false]);
    case 4:
      return rng.pick([[], {}, [hostileString(rng)], { [hostileString(rng)]: 1 }]);
    default:
      return Object.fromEntries(Array.from({ length: 1 + rng.int(200) }, (_, i) => [`k${i}`, i]));
  }
}

/** Replaced in the JSON text by `DEEP_LEVELS` of nested arrays or objects (building them as values would overflow JSON.stringify). */
const DEEP = '\u0000deep\u0000';
const DEEP_LEVELS = [63, 64, 65, 1000, 20_000, 100_000];

function deepText(rng: Rng): string {
  const levels = rng.pick(DEEP_LEVELS);
  return rng.chance(0.5) ? `${'['.repeat(levels)}${']'.repeat(levels)}` : `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

/** Every place in `value` a mutation can go: a path of keys from the root. */
function places(value: unknown, path: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(path);
  if (Array.isArray(value)) value.forEach((item, i) => places(item, [...path, i], out));
  else if (value && typeof value === 'object') for (const [key, item] of Object.entries(value)) places(item, [...path, key], out);
  return out;
}

/** A copy of `root` with `replacement` at `path`, creating the objects and arrays on the way. */
export function setAt(root: unknown, path: Array<string | number>, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let at = copy;
  path.slice(0, -1).forEach((key, i) => {
    if (at[key] === null || typeof at[key] !== 'object') at[key] = typeof path[i + 1] === 'number' ? [] : {};
    at = at[key] as Record<string | number, unknown>;
  });
  at[path.at(-1)!] = replacement;
  return copy;
}

interface JsonSchema {
  type?: string;
  maxLength?: number;
  properties?: Record<string, JsonSchema>;
  patternProperties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
}

export interface StringPlace {
  path: Array<string | number>;
  maxLength: number | undefined;
  /** The string is a key of the record at `path`, not a value. */
  recordKey: boolean;
}

/** Where a schema takes a string (properties, array items, record values and keys), and its length bound. */
export function stringPlaces(of: object, path: Array<string | number> = [], out: StringPlace[] = []): StringPlace[] {
  const schema = of as JsonSchema;
  if (schema.type === 'string') out.push({ path, maxLength: schema.maxLength, recordKey: false });
  for (const [key, property] of Object.entries(schema.properties ?? {})) stringPlaces(property, [...path, key], out);
  for (const value of Object.values(schema.patternProperties ?? {})) {
    stringPlaces(value, [...path, 'k'], out);
    out.push({ path, maxLength: undefined, recordKey: true });
  }
  if (schema.items) stringPlaces(schema.items, [...path, 0], out);
  for (const branch of schema.anyOf ?? []) stringPlaces(branch, path, out);
  return out;
}

/** Strings at a length bound (or 1,024 where there is none) that weigh up to four times as many bytes: what an LMDB key cannot hold. */
export function heavyStrings(maxLength: number | undefined): string[] {
  const length = maxLength ?? 1024;
  return [
    '€'.repeat(length),
    '😀'.repeat(Math.floor(length / 2)),
    ...['dec_', 'mem_', 'key_', 'trace_', 'dlv_', 'notes:'].map((prefix) => `${prefix}${'€'.repeat(Math.max(0, length - prefix.length))}`),
  ];
}

/**
 * The text of a body derived from `seed` (a valid body for the route): sent as is, with one or
 * a few values replaced by hostile ones, a property added, nesting hundreds of thousands deep
 * spliced in, or as text that is not JSON at all.
 */
export function mutateBody(rng: Rng, seed: unknown): string {
  const roll = rng.int(10);
  if (roll === 0) return JSON.stringify(seed);
  if (roll === 1) {
    const text = JSON.stringify(seed);
    return rng.pick([
      text.slice(0, rng.int(text.length)),
      `${text}}`,
      `\ufeff${text}`,
      text.replace(/:/, '::'),
      text.replace(/"[^"]*"/, '"\\ud800"'),
      text.replace(/"[^"]*"/, '"\\u0000"'),
      text.replace(/\{/, '{"__proto__":{"polluted":1},'),
      text.replace(/\{/, '{"title":1,'),
      '1e999',
      'null',
      '[]',
      '"text"',
      '',
      '{',
      '\u0000',
    ]);
  }
  let body = seed;
  const count = 1 + rng.int(3);
  for (let i = 0; i < count; i++) {
    const path = rng.pick(places(body));
    if (rng.chance(0.15) && body && typeof body === 'object' && !Array.isArray(body)) {
      body = { ...(body as object), [rng.chance(0.5) ? hostileString(rng) : 'unexpected']: hostileValue(rng) };
    } else if (rng.chance(0.15)) {
      body = setAt(body, path, DEEP);
    } else {
      body = setAt(body, path, hostileValue(rng));
    }
  }
  const text = JSON.stringify(body);
  return text.includes(JSON.stringify(DEEP)) ? text.replace(JSON.stringify(DEEP), deepText(rng)) : text;
}

/** A path segment as it appears on the wire: valid ids, malformed escapes, very long or odd ones. */
export function hostileSegment(rng: Rng, real: string): string {
  switch (rng.int(8)) {
    case 0:
      return real;
    case 1:
      return rng.pick(['%ff', '%', '%z', '%zz', '%c3%28', '%ed%a0%80', '%f0%28%8c%bc', '%e2%82', '%%', '%u00e9']);
    case 2:
      return 'a'.repeat(rng.pick([129, 2000, 20_000]));
    case 3:
      return rng.pick(['%e2%82%ac', '%f0%9f%98%80', 'x']).repeat(rng.pick([10, 43, 129, 700]));
    case 4:
      return rng.pick(['%00', '%2f', '%2e%2e', '..', '.', '%20', '~', 'dec_%31', encodeURIComponent('ü'), encodeURIComponent('😀'), `${real}%00`]);
    case 5:
      return [...Buffer.from(hostileString(rng).slice(0, 5_000))].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
    case 6:
      return `${real}${rng.pick(['', '0', 'x', '_', '-'])}`;
    default:
      return rng.pick(['dec_0', 'mem_0', 'key_0', 'run_0', 'dlv_0', 'tool_0']);
  }
}

/**
 * A query string (without `?`) built from `seed` (valid values) with hostile keys and values,
 * short enough that the request head stays under the 128 KiB uWebSockets.js accepts.
 */
export function hostileQuery(rng: Rng, seed: Record<string, string>): string {
  const pairs: Array<[string, string]> = Object.entries(seed).filter(() => rng.chance(0.7));
  const extra = rng.int(3);
  for (let i = 0; i < extra; i++) {
    const key = rng.chance(0.6) && Object.keys(seed).length ? rng.pick(Object.keys(seed)) : rng.pick(['x', 'limit', 'cursor', '__proto__', hostileString(rng).slice(0, 300)]);
    const value = rng.chance(0.5) ? rng.pick(['', '-1', '0', '1e309', 'NaN', 'true', '1.5', '999999999999999999999', '[]', '{}']) : hostileString(rng).slice(0, 4_000);
    pairs.push([key, value]);
  }
  const text = new URLSearchParams(pairs).toString();
  return rng.chance(0.2) ? `${text}&${rng.pick(['%ff', 'a=%', 'a=%zz', '=', '&&', 'a=%ed%a0%80', 'limit=%ff'])}` : text;
}

/** Header values an HTTP client will send (no CR, LF or NUL), most of them wrong. */
export function hostileAuthorization(rng: Rng): string | undefined {
  return rng.pick([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Bearer  ',
    'bearer gh_x',
    'Basic Zm9vOmJhcg==',
    `Bearer ${'a'.repeat(rng.pick([10, 300, 4000]))}`,
    'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
    'Bearer a.b.c',
    'Bearer gh_live_0000000000000000000000000000000000',
    'Bearer x y',
    'Bearer \u00ff\u00fe',
  ]);
}

export function hostileContentType(rng: Rng): string | undefined {
  return rng.pick([
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'application/merge-patch+json',
    undefined,
    '',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=utf-16',
    'APPLICATION/JSON',
    'application/jsonx',
    'multipart/form-data; boundary=x',
    `application/json; ${'p=1;'.repeat(500)}`,
  ]);
}

/** Headers beyond the ones each request sets: idempotency keys, broken signatures, odd extras. */
export function hostileHeaders(rng: Rng): Record<string, string> {
  const headers: Record<string, string> = {};
  if (rng.chance(0.3)) headers['idempotency-key'] = rng.pick(['k1', '', ' ', 'a'.repeat(rng.pick([255, 256, 4000])), '\u00e9t\u00e9', `k-${rng.int(5)}`]);
  if (rng.chance(0.1)) headers['signature-input'] = rng.pick(['sig1=("@method");created=1', 'sig1=', '(', `sig1=("@method" "@target-uri");keyid="${'k'.repeat(2000)}"`]);
  if (rng.chance(0.1)) headers['signature'] = rng.pick(['sig1=:AAAA:', 'sig1=', ':::', 'sig1=:' + 'A'.repeat(4000) + ':']);
  if (rng.chance(0.1)) headers['content-digest'] = rng.pick(['sha-256=:AAAA:', 'md5=:x:', '']);
  if (rng.chance(0.05)) headers['sec-websocket-key'] = rng.pick(['', 'dGhlIHNhbXBsZSBub25jZQ==', 'x'.repeat(300)]);
  if (rng.chance(0.05)) headers['x-forwarded-for'] = '127.0.0.1, ::1, garbage';
  if (rng.chance(0.05)) headers['accept'] = '*/*;q=' + 'x'.repeat(1000);
  return headers;
}
