/**
 * OPA's `semver.is_valid` and `semver.compare`: strict Semantic Versioning 2.0.0 (no leading `v`,
 * no leading zeros, no surrounding space), compared by precedence with build metadata ignored.
 */

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

interface Version {
  core: [bigint, bigint, bigint];
  prerelease: string[];
}

function parse(s: string): Version | undefined {
  const m = SEMVER.exec(s);
  if (!m) return undefined;
  return { core: [BigInt(m[1]!), BigInt(m[2]!), BigInt(m[3]!)], prerelease: m[4] ? m[4].split('.') : [] };
}

export function semverIsValid(s: unknown): boolean {
  return typeof s === 'string' && parse(s) !== undefined;
}

const sign = (x: bigint | number): number => (x < 0 ? -1 : x > 0 ? 1 : 0);

/** Numeric identifiers rank below alphanumeric ones and compare as numbers; others compare as ASCII. */
function compareIdentifiers(a: string, b: string): number {
  const aNumeric = /^\d+$/.test(a);
  const bNumeric = /^\d+$/.test(b);
  if (aNumeric && bNumeric) return sign(BigInt(a) - BigInt(b));
  if (aNumeric !== bNumeric) return aNumeric ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** -1, 0 or 1 as `a` ranks below, with or above `b`; undefined if either is not a version. */
export function semverCompare(a: string, b: string): number | undefined {
  const x = parse(a);
  const y = parse(b);
  if (!x || !y) return undefined;
  for (let i = 0; i < 3; i++) {
    const c = sign(x.core[i]! - y.core[i]!);
    if (c !== 0) return c;
  }
  // A pre-release ranks below its release.
  if (x.prerelease.length === 0 || y.prerelease.length === 0) return sign(y.prerelease.length - x.prerelease.length);
  for (let i = 0; i < Math.min(x.prerelease.length, y.prerelease.length); i++) {
    const c = compareIdentifiers(x.prerelease[i]!, y.prerelease[i]!);
    if (c !== 0) return c;
  }
  return sign(x.prerelease.length - y.prerelease.length);
}
