/**
 * What a plain YAML scalar means to go-yaml v2 (the YAML 1.1 library behind OPA's `yaml.*`,
 * through sigs.k8s.io/yaml), and how Go writes numbers as text. `yaml.unmarshal` types plain
 * scalars with `resolvePlain`; `yaml.marshal` quotes a string whenever `resolvePlain` would not
 * read it back as that string.
 */

export type Resolved =
  | { kind: 'null' }
  | { kind: 'bool'; value: boolean }
  /** An integer within the int64 or uint64 range. */
  | { kind: 'int'; value: bigint }
  | { kind: 'float'; value: number }
  /** A date or date-time: go-yaml gives it to an `interface{}` as the string it is. */
  | { kind: 'timestamp' }
  | { kind: 'str' };

const WORDS: ReadonlyMap<string, Resolved> = new Map([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'].map(
    (w): [string, Resolved] => [w, { kind: 'bool', value: true }],
  ),
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'].map(
    (w): [string, Resolved] => [w, { kind: 'bool', value: false }],
  ),
  ...['', '~', 'null', 'Null', 'NULL'].map((w): [string, Resolved] => [w, { kind: 'null' }]),
  ...['.nan', '.NaN', '.NAN'].map((w): [string, Resolved] => [w, { kind: 'float', value: NaN }]),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map(
    (w): [string, Resolved] => [w, { kind: 'float', value: Infinity }],
  ),
  ...['-.inf', '-.Inf', '-.INF'].map((w): [string, Resolved] => [w, { kind: 'float', value: -Infinity }]),
]);

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/** Go's `strconv.ParseInt(s, 0, 64)` digits: an optional sign, then 0x / 0o / 0b / 0 (octal) or decimal. */
const GO_INTEGER = /^([+-]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|0([0-7]+)|([0-9]+))$/;
const YAML_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const DOT_FLOAT = /^\.[0-9]+([eE][-+]?[0-9]+)?$/;
const BASE60_FLOAT = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;

/** The integer of `ParseInt`/`ParseUint(s, 0, 64)`, or undefined when both fail. */
function goInteger(s: string): bigint | undefined {
  const m = GO_INTEGER.exec(s);
  if (!m) return undefined;
  const [, sign, hex, octal, binary, oldOctal, decimal] = m;
  const magnitude =
    hex !== undefined ? BigInt(`0x${hex}`)
    : octal !== undefined ? BigInt(`0o${octal}`)
    : binary !== undefined ? BigInt(`0b${binary}`)
    : oldOctal !== undefined ? BigInt(`0o${oldOctal}`)
    : BigInt(decimal!);
  const n = sign === '-' ? -magnitude : magnitude;
  if (n >= INT64_MIN && n <= INT64_MAX) return n;
  // ParseUint takes no sign.
  return sign === '' && n <= UINT64_MAX ? n : undefined;
}

const DATE_TIME =
  /^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[+-](\d{2}):(\d{2})))|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?))?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/**
 * Whether Go's `time.Parse` takes s with one of go-yaml's timestamp layouts: `2006-1-2`,
 * `2006-1-2 15:4:5.999999999`, or `2006-1-2T15:4:5.999999999Z07:00` (also with a lower-case t),
 * with its range checks.
 */
export function isGoYamlTimestamp(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  const hour = Number(m[4] ?? m[9] ?? 0);
  const minute = Number(m[5] ?? m[10] ?? 0);
  const second = Number(m[6] ?? m[11] ?? 0);
  if (hour > 23 || minute > 59 || second > 59) return false;
  return m[7] === undefined || (Number(m[7]) <= 24 && Number(m[8]) <= 60);
}

/** go-yaml v2's `resolve("", s)`: what the plain scalar s stands for. */
export function resolvePlain(s: string): Resolved {
  const word = WORDS.get(s);
  if (word) return word;
  const first = s[0];
  if (first === '.') return DOT_FLOAT.test(s) ? { kind: 'float', value: Number(s) } : { kind: 'str' };
  if (first === undefined || !'+-0123456789'.includes(first)) return { kind: 'str' };
  if (isGoYamlTimestamp(s)) return { kind: 'timestamp' };
  const plain = s.replace(/_/g, '');
  const int = goInteger(plain);
  if (int !== undefined) return { kind: 'int', value: int };
  if (YAML_FLOAT.test(plain)) {
    const value = Number(plain);
    // Go's ParseFloat fails on overflow, and the text stays a string.
    if (Number.isFinite(value)) return { kind: 'float', value };
  }
  return { kind: 'str' };
}

/** go-yaml v2's `isBase60Float`: text YAML 1.1 readers take for a sexagesimal number. */
export function isBase60Float(s: string): boolean {
  return s.includes(':') && BASE60_FLOAT.test(s);
}

/**
 * Go's `strconv.FormatFloat(f, 'g', -1, bits)`: the shortest digits that read back as the same
 * float64 (or float32), in exponent form below 1e-4 and from 1e+06 on (`1e+06`, `1.5e-07`).
 */
export function goFormatFloat(f: number, bits: 32 | 64): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  let digits: string;
  let exp: number;
  if (bits === 64) {
    [digits, exp] = mantissaAndExponent(f.toExponential());
  } else {
    const single = Math.fround(f);
    let p = 1;
    while (p < 9 && Math.fround(Number(single.toPrecision(p))) !== single) p++;
    [digits, exp] = mantissaAndExponent(Number(single.toPrecision(p)).toExponential());
  }
  const sign = f < 0 ? '-' : '';
  if (exp < -4 || exp >= 6) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp).toString().padStart(2, '0');
    return `${sign}${mantissa}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const whole = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const fraction = digits.slice(exp + 1);
  return `${sign}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** The significant digits and decimal exponent of JavaScript's exponent form (`-1.25e+3`). */
function mantissaAndExponent(text: string): [string, number] {
  const [mantissa, exp] = text.replace(/^-/, '').split('e') as [string, string];
  return [mantissa.replace('.', ''), Number(exp)];
}
