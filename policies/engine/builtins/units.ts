/**
 * OPA's `units.parse_bytes` and `units.parse`: a decimal amount followed by an SI (powers of
 * 1000) or IEC (powers of 1024) unit, computed exactly as OPA does with big numbers, then
 * truncated to an integer (`parse_bytes`) or kept exact when whole (`parse`).
 */

/** An exact decimal: `digits / 10^scale`. */
interface Decimal {
  digits: bigint;
  scale: number;
}

/** OPA's amount: everything before the first character that is neither a digit nor `.`. */
function splitAmount(s: string): { amount: string; unit: string } {
  const at = s.search(/[^\d.]/);
  return at < 0 ? { amount: s, unit: '' } : { amount: s.slice(0, at), unit: s.slice(at) };
}

/** `12`, `1.5`, `.5` or `5.`, as Go's big number parsers read a decimal. */
function parseDecimal(s: string): Decimal | undefined {
  const m = /^(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m || (m[1] === '' && !m[2])) return undefined;
  const fraction = m[2] ?? '';
  return { digits: BigInt(m[1]! + fraction || '0'), scale: fraction.length };
}

const SI = (power: number): bigint => 1000n ** BigInt(power);
const IEC = (power: number): bigint => 1024n ** BigInt(power);
const PREFIXES = ['k', 'm', 'g', 't', 'p', 'e'];

/** `units.parse_bytes` units, lower-cased: `k`/`kb` are 1000, `ki`/`kib` 1024, up to exa. */
const BYTE_UNITS: Record<string, bigint> = { '': 1n };
PREFIXES.forEach((p, i) => {
  BYTE_UNITS[p] = BYTE_UNITS[`${p}b`] = SI(i + 1);
  BYTE_UNITS[`${p}i`] = BYTE_UNITS[`${p}ib`] = IEC(i + 1);
});

/** Quotes are dropped and spaces refused, as OPA does before reading the amount. */
function amountAndUnit(raw: string): { amount: Decimal; unit: string } | undefined {
  const s = raw.replaceAll('"', '');
  if (s.includes(' ')) return undefined;
  const { amount, unit } = splitAmount(s);
  const decimal = parseDecimal(amount);
  return decimal && { amount: decimal, unit };
}

/** `units.parse_bytes(s)`: bytes, truncated towards zero; units are case-insensitive. */
export function parseBytes(raw: string): bigint | undefined {
  const parsed = amountAndUnit(raw.toLowerCase());
  const multiplier = parsed && BYTE_UNITS[parsed.unit];
  if (!parsed || multiplier === undefined) return undefined;
  return (parsed.amount.digits * multiplier) / 10n ** BigInt(parsed.amount.scale);
}

/**
 * `units.parse(s)`: as OPA reads the unit, its first letter keeps its case (`m` is milli, `M`
 * mega), the rest is lower-cased; `k`, `K`, `Ki`, `ki`, …, `E`, `Ei` (not `b`/`B`).
 */
export function parseUnits(raw: string): bigint | number | undefined {
  const parsed = amountAndUnit(raw);
  if (!parsed) return undefined;
  const unit = parsed.unit.length > 1 ? parsed.unit[0] + parsed.unit.slice(1).toLowerCase() : parsed.unit;
  let numerator = parsed.amount.digits;
  let denominator = 10n ** BigInt(parsed.amount.scale);
  if (unit === 'm') {
    denominator *= 1000n;
  } else if (unit !== '') {
    const iec = unit.endsWith('i') && unit.length === 2;
    const power = PREFIXES.indexOf(unit[0]!.toLowerCase()) + 1;
    // Only `M` (not `m`) is mega; every other prefix takes either case.
    if (power === 0 || unit.length > (iec ? 2 : 1) || (unit[0] === 'm' && !iec)) return undefined;
    numerator *= iec ? IEC(power) : SI(power);
  }
  if (numerator % denominator === 0n) return numerator / denominator;
  // OPA gives the rest as `big.Rat.FloatString(10)`: ten decimals, rounded half away from zero.
  const scaled = (numerator * 2n * 10n ** 10n + denominator) / (2n * denominator);
  return Number(`${scaled / 10n ** 10n}.${String(scaled % 10n ** 10n).padStart(10, '0')}`);
}
