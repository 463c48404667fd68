/**
 * Go's `regexp` operations that OPA's `regex.find_n` and `regex.replace` call
 * (`FindAllString(s, n)`, `ReplaceAllString(s, repl)`), for modules built by `opa build`, whose
 * Wasm imports them (Gatehouse's own modules run them inside: runtime/assembly/regex/), over
 * patterns compiled by re2js, whose matcher follows Java's rules. The difference that matters is Go's: an empty match
 * right where the previous match ended is skipped.
 */
import type { RE2JS } from 're2js';

interface Match {
  start: number;
  end: number;
  /** Capture groups by index (0 is the whole match); undefined for a group that did not take part. */
  groups: Array<string | undefined>;
}

/** Go's `allMatches`: up to `n` matches (all when `n` is negative), left to right. */
function allMatches(re: RE2JS, s: string, n: number): Match[] {
  const m = re.matcher(s);
  const matches: Match[] = [];
  let prevEnd = -1;
  let pos = 0;
  while ((n < 0 || matches.length < n) && pos <= s.length && m.find(pos)) {
    const start = m.start();
    const end = m.end();
    const empty = start === end;
    if (!(empty && start === prevEnd)) {
      const groups: Array<string | undefined> = [];
      for (let g = 0; g <= m.groupCount(); g++) groups.push(m.group(g) ?? undefined);
      matches.push({ start, end, groups });
    }
    // An empty match moves on by one code point (two UTF-16 units for an astral one).
    pos = empty ? end + (s.codePointAt(end)! > 0xffff ? 2 : 1) : end;
    prevEnd = end;
  }
  return matches;
}

/** `regexp.FindAllString(s, n)`, with an empty array where Go gives nil. */
export function regexFindN(re: RE2JS, s: string, n: number): string[] {
  return allMatches(re, s, n).map((m) => m.groups[0]!);
}

/**
 * Go's `Regexp.Expand` of a template for one match: `$1`, `${1}`, `$name`, `${name}` (a name is
 * the longest run of letters, digits and `_`), `$$` for `$`; a group that does not exist or did
 * not take part is empty, and a `$` not followed by a name stands for itself.
 */
function expand(template: string, match: Match, names: Record<string, number>): string {
  return template.replace(/\$(?:\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g, (_match, braced?: string, bare?: string) => {
    const name = braced ?? bare;
    if (name === undefined) return '$';
    const index = /^\d+$/.test(name) ? Number(name) : names[name];
    return (index === undefined ? undefined : match.groups[index]) ?? '';
  });
}

/** `regexp.ReplaceAllString(s, template)`. */
export function regexReplace(re: RE2JS, s: string, template: string): string {
  const names = re.namedGroups() as Record<string, number>;
  let out = '';
  let last = 0;
  for (const match of allMatches(re, s, -1)) {
    out += s.slice(last, match.start) + expand(template, match, names);
    last = match.end;
  }
  return out + s.slice(last);
}
