/**
 * Go's `strings.ToLower` / `strings.ToUpper`, which OPA's `lower` and `upper` use.
 *
 * Go maps every code point on its own with Unicode's *simple* case mapping. JavaScript's
 * `toLowerCase`/`toUpperCase` apply the *full* mapping (`ß` → `SS`, `İ` → `i̇`) and lowercase a
 * final `Σ` to `ς` depending on context. Strings free of those few code points take the native
 * (fast) path; the others are mapped one code point at a time the way Go does.
 */

/** Code points whose full uppercase mapping has several code points (Unicode SpecialCasing). */
const MULTI_UPPER =
  /[\u00DF\u0149\u01F0\u0390\u03B0\u0587\u1E96-\u1E9A\u1F50\u1F52\u1F54\u1F56\u1F80-\u1FAF\u1FB2-\u1FB4\u1FB6\u1FB7\u1FBC\u1FC2-\u1FC4\u1FC6\u1FC7\u1FCC\u1FD2\u1FD3\u1FD6\u1FD7\u1FE2-\u1FE4\u1FE6\u1FE7\u1FF2-\u1FF4\u1FF6\u1FF7\u1FFC\uFB00-\uFB06\uFB13-\uFB17]/;

/** `İ` (full lowercase `i̇`) and `Σ` (context-dependent final sigma). */
const SPECIAL_LOWER = /[\u0130\u03A3]/;

/**
 * Simple uppercase mappings of the code points in MULTI_UPPER that have one; the rest map to
 * themselves in Go. (The Greek letters with ypogegrammeni uppercase to their prosgegrammeni forms.)
 */
function simpleUpper(cp: number): number {
  if ((cp >= 0x1f80 && cp <= 0x1f87) || (cp >= 0x1f90 && cp <= 0x1f97) || (cp >= 0x1fa0 && cp <= 0x1fa7)) {
    return cp + 8;
  }
  if (cp === 0x1fb3 || cp === 0x1fc3 || cp === 0x1ff3) return cp + 9;
  return cp;
}

function mapCodePoints(s: string, map: (ch: string) => string): string {
  let out = '';
  for (const ch of s) out += map(ch);
  return out;
}

/** `strings.ToUpper`: simple uppercase mapping of every code point. */
export function goToUpper(s: string): string {
  if (!MULTI_UPPER.test(s)) return s.toUpperCase();
  return mapCodePoints(s, (ch) => {
    const full = ch.toUpperCase();
    if ([...full].length === 1) return full;
    return String.fromCodePoint(simpleUpper(ch.codePointAt(0)!));
  });
}

/** `strings.ToLower`: simple lowercase mapping of every code point. */
export function goToLower(s: string): string {
  if (!SPECIAL_LOWER.test(s)) return s.toLowerCase();
  return mapCodePoints(s, (ch) => {
    if (ch === '\u0130') return 'i';
    // On its own a `Σ` has no word before it, so JavaScript gives `σ` as Go does.
    return ch.toLowerCase();
  });
}
