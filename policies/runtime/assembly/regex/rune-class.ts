// Sets of code points as sorted ranges: the character classes of a regular expression while it
// is parsed, then the matcher's test for one code point.

import { MAX_RUNE } from "./unicode";

/** Whether r is within one of `count` sorted [lo, hi] pairs of i32 at `base`. */
export function rangesContain(base: usize, count: i32, r: i32): bool {
  let lo = 0;
  let hi = count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const range = base + (<usize>mid << 3);
    if (r < load<i32>(range)) hi = mid - 1;
    else if (r > load<i32>(range, 4)) lo = mid + 1;
    else return true;
  }
  return false;
}

function compareI64(a: i64, b: i64): i32 {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts `n` [lo, hi] pairs by lo (then hi), packed into one i64 each. */
function sortRanges(r: Array<i32>, n: i32): void {
  const packed = new Array<i64>(n);
  for (let i = 0; i < n; i++) unchecked((packed[i] = (<i64>unchecked(r[2 * i]) << 32) | <i64>unchecked(r[2 * i + 1])));
  packed.sort(compareI64);
  for (let i = 0; i < n; i++) {
    const p = unchecked(packed[i]);
    unchecked((r[2 * i] = <i32>(p >> 32)));
    unchecked((r[2 * i + 1] = <i32>p));
  }
}

/**
 * Code points as inclusive [lo, hi] ranges in a flat array. Ranges are appended in any order and
 * may overlap until `clean()` sorts and merges them; `negate()` and `contains()` need a clean
 * class.
 */
export class RuneClass {
  ranges: Array<i32> = new Array<i32>();

  addRange(lo: i32, hi: i32): void {
    this.ranges.push(lo);
    this.ranges.push(hi);
  }

  addClass(other: RuneClass): void {
    const r = other.ranges;
    for (let i = 0; i < r.length; i += 2) this.addRange(unchecked(r[i]), unchecked(r[i + 1]));
  }

  /** Sorts the ranges and merges those that overlap or touch (Go's `cleanClass`). */
  clean(): void {
    const r = this.ranges;
    const n = r.length >> 1;
    if (n < 2) return;
    let sorted = true;
    for (let i = 1; i < n && sorted; i++) sorted = unchecked(r[2 * i - 2]) <= unchecked(r[2 * i]);
    if (!sorted) sortRanges(r, n);
    let w = 0;
    for (let i = 0; i < n; i++) {
      const lo = unchecked(r[2 * i]);
      const hi = unchecked(r[2 * i + 1]);
      if (w > 0 && lo <= unchecked(r[w - 1]) + 1) {
        if (hi > unchecked(r[w - 1])) unchecked((r[w - 1] = hi));
        continue;
      }
      unchecked((r[w] = lo));
      unchecked((r[w + 1] = hi));
      w += 2;
    }
    r.length = w;
  }

  /** Whether r is in the (clean) class. */
  contains(r: i32): bool {
    return rangesContain(this.ranges.dataStart, this.ranges.length >> 1, r);
  }

  /** The complement within [0, MAX_RUNE]. */
  negate(): void {
    const r = this.ranges;
    const out = new Array<i32>();
    let next = 0;
    for (let i = 0; i < r.length; i += 2) {
      const lo = unchecked(r[i]);
      if (lo > next) {
        out.push(next);
        out.push(lo - 1);
      }
      next = unchecked(r[i + 1]) + 1;
    }
    if (next <= MAX_RUNE) {
      out.push(next);
      out.push(MAX_RUNE);
    }
    this.ranges = out;
  }
}
