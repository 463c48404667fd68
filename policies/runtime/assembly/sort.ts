// Stable sorting of value lists in value order (compare.ts): insertion sort for short lists,
// bottom-up merge sort otherwise.

import { alloc } from "./heap";
import { Value, compareValues } from "./value";

// @ts-ignore: decorator
@inline const SHORT: i32 = 16;

/** Sorts the n values at items (4 bytes each) in place. */
export function sortValues(items: usize, n: i32): void {
  if (n <= SHORT) {
    insertionSort(items, n);
    return;
  }
  // Sort runs of SHORT by insertion, then merge runs of doubling width between two buffers.
  for (let i = 0; i < n; i += SHORT) insertionSort(items + (<usize>i << 2), min(SHORT, n - i));
  let from = items;
  let to = alloc(<usize>n << 2);
  for (let width = SHORT; width < n; width <<= 1) {
    for (let lo = 0; lo < n; lo += width << 1) {
      const mid = min(lo + width, n);
      const hi = min(lo + (width << 1), n);
      merge(from, to, lo, mid, hi);
    }
    const swap = from;
    from = to;
    to = swap;
  }
  if (from != items) memory.copy(items, from, <usize>n << 2);
}

function insertionSort(items: usize, n: i32): void {
  for (let i = 1; i < n; i++) {
    const v = load<Value>(items + (<usize>i << 2));
    let j = i - 1;
    while (j >= 0 && compareValues(load<Value>(items + (<usize>j << 2)), v) > 0) {
      store<Value>(items + (<usize>(j + 1) << 2), load<Value>(items + (<usize>j << 2)));
      j--;
    }
    store<Value>(items + (<usize>(j + 1) << 2), v);
  }
}

function merge(from: usize, to: usize, lo: i32, mid: i32, hi: i32): void {
  let i = lo;
  let j = mid;
  for (let k = lo; k < hi; k++) {
    let take: Value;
    if (i < mid && (j >= hi || compareValues(load<Value>(from + (<usize>i << 2)), load<Value>(from + (<usize>j << 2))) <= 0)) {
      take = load<Value>(from + (<usize>(i++) << 2));
    } else {
      take = load<Value>(from + (<usize>(j++) << 2));
    }
    store<Value>(to + (<usize>k << 2), take);
  }
}
