// lower and upper: Go's strings.ToLower / strings.ToUpper, which OPA uses. Go maps every code
// point on its own with Unicode's simple case mapping (upper("ß") is "ß", lower("İ") is "i", no
// final-sigma rule); an invalid byte becomes U+FFFD, as strings.Map writes it.

import { Value, UNDEFINED, isString, stringData, stringLength } from "../value";
import { LOWER_RUNS, LOWER_TABLE, UPPER_RUNS, UPPER_TABLE } from "./case-tables";
import { output } from "./text-buffer";
import { decodeRune, runeSize } from "./utf8";

/** The code point `r` mapped by a table of case-tables.ts: a binary search for the run holding it. */
function mapRune(r: i32, table: usize, runs: i32): i32 {
  let lo = 0;
  let hi = runs - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const entry = table + (<usize>mid << 3);
    const first = <i32>(load<u32>(entry) >>> 11);
    if (r < first) {
      hi = mid - 1;
      continue;
    }
    const offset = r - first;
    if (offset > <i32>(load<u32>(entry) & 0x7ff)) {
      lo = mid + 1;
      continue;
    }
    const rule = load<i32>(entry, 4);
    return (rule & 1) && (offset & 1) ? r : r + (rule >> 1);
  }
  return r;
}

/** Every code point of `s` mapped, ASCII letters directly and the rest through a table. */
function mapCase(s: Value, asciiFrom: i32, table: usize, runs: i32): Value {
  if (!isString(s)) return UNDEFINED;
  const data = stringData(s);
  const end = data + <usize>stringLength(s);
  output.begin();
  for (let p = data; p < end; p += <usize>runeSize) {
    const r = decodeRune(p, end);
    if (r < 0x80) output.byte(r >= asciiFrom && r < asciiFrom + 26 ? r ^ 0x20 : r);
    else output.rune(mapRune(r, table, runs));
  }
  return output.toStringCopy();
}

export function bi_lower(s: Value): Value {
  return mapCase(s, 0x41, LOWER_TABLE, LOWER_RUNS);
}

export function bi_upper(s: Value): Value {
  return mapCase(s, 0x61, UPPER_TABLE, UPPER_RUNS);
}
