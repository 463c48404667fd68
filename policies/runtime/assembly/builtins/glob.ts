// glob.match, as OPA matches globs with gobwas/glob (v0.2), and glob.quote_meta:
//
//   *        any run of code points that are not delimiters
//   **       any run of code points, delimiters included
//   ?        one code point that is not a delimiter
//   [abc]    one of the listed code points; [a-z] one in the range; [!…] negates either (a
//            class is a list *or* a single range, and matches delimiters too)
//   {a,b*}   any of the comma-separated alternatives, each a glob itself (nesting allowed; a
//            group still open at the end of the pattern ends there)
//   \x       x itself; a trailing backslash is dropped
//
// and everything else matches itself. A malformed class (unclosed, empty, or a range whose ends
// are reversed) makes the call undefined, as gobwas refuses to compile it.
//
// The glob is compiled to a small automaton (instructions below) and run over the subject's code
// points with every live state at once, so the cost is bounded by pattern length × subject
// length whatever the pattern (`*a*a*a*a*b` cannot backtrack exponentially).

import { alloc, heapReset, heapTop } from "../heap";
import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_NULL, typeOf, isString, stringData, stringLength,
  booleanValue, arrayLength, arrayGet,
} from "../value";
import { TextBuffer, rewrittenString } from "./text-buffer";
import { decodeRune, runeSize } from "./utf8";

// Instructions are three i32 words: op, a, b.
// @ts-ignore: decorator
@inline const OP_CHAR: i32 = 0; // the code point a
// @ts-ignore: decorator
@inline const OP_ANY: i32 = 1; // any code point
// @ts-ignore: decorator
@inline const OP_OTHER: i32 = 2; // any code point that is not a delimiter
// @ts-ignore: decorator
@inline const OP_RANGE: i32 = 3; // a code point in [a, b]; OP_RANGE + 1 outside it
// @ts-ignore: decorator
@inline const OP_LIST: i32 = 5; // one of the b code points from index a of the class list; OP_LIST + 1 none of them
// @ts-ignore: decorator
@inline const OP_SPLIT: i32 = 7; // continue at a and at b
// @ts-ignore: decorator
@inline const OP_JUMP: i32 = 8; // continue at a
// @ts-ignore: decorator
@inline const OP_MATCH: i32 = 9;

// @ts-ignore: decorator
@inline const BACKSLASH: i32 = 0x5c;

/** The glob being compiled or run: its code points, instructions and class lists, on the heap. */
let chars: usize = 0;
let charCount: i32 = 0;
let program: usize = 0;
let size: i32 = 0;
let classes: usize = 0;
let classSize: i32 = 0;

// @ts-ignore: decorator
@inline
function charAt(i: i32): i32 {
  return i < charCount ? load<i32>(chars + (<usize>i << 2)) : -1;
}

// @ts-ignore: decorator
@inline
function instruction(pc: i32): usize {
  return program + <usize>pc * 12;
}

function emit(op: i32, a: i32, b: i32): i32 {
  const at = instruction(size);
  store<i32>(at, op);
  store<i32>(at, a, 4);
  store<i32>(at, b, 8);
  return size++;
}

/**
 * Compiles the class starting after `[` at `i` (`[!]`, then `lo-hi` or a list with escapes, then
 * `]`); returns the index after it, or -1 for a class gobwas refuses.
 */
function compileClass(i: i32): i32 {
  const negated = charAt(i) == 0x21;
  if (negated) i++;
  const first = charAt(i);
  if (first < 0) return -1;
  const flip = negated ? 1 : 0;
  if (charAt(i + 1) == 0x2d) {
    const hi = charAt(i + 2);
    if (hi < first) return -1;
    emit(OP_RANGE + flip, first, hi);
    i += 3;
  } else {
    const start = classSize;
    while (i < charCount && charAt(i) != 0x5d) {
      let c = charAt(i++);
      if (c == BACKSLASH && i < charCount) c = charAt(i++);
      store<i32>(classes + (<usize>(classSize++) << 2), c);
    }
    if (classSize == start) return -1;
    emit(OP_LIST + flip, start, classSize - start);
  }
  return charAt(i) == 0x5d ? i + 1 : -1;
}

/**
 * Closes the innermost `{…}` group, whose last alternative's SPLIT is at `split` and whose
 * alternatives' JUMPs to the end are chained through their a words from `jumps`: the last
 * alternative needs no SPLIT, so it becomes a JUMP into that alternative.
 */
function closeGroup(split: i32, jumps: i32): void {
  store<i32>(instruction(split), OP_JUMP);
  for (let j = emit(OP_JUMP, jumps, 0); j >= 0; ) {
    const next = load<i32>(instruction(j), 4);
    store<i32>(instruction(j), size, 4);
    j = next;
  }
}

/** Compiles the glob in `chars` into `program`; false for a pattern gobwas refuses. */
function compile(): bool {
  // Open groups, innermost last: the pc of the current alternative's SPLIT and the chain of JUMPs.
  const groups = alloc(<usize>charCount << 3);
  let depth = 0;
  let i = 0;
  while (i < charCount) {
    const c = charAt(i++);
    const group = groups + (<usize>(depth - 1) << 3);
    if (depth > 0 && c == 0x2c) {
      store<i32>(group, emit(OP_JUMP, load<i32>(group, 4), 0), 4);
      store<i32>(instruction(load<i32>(group)), size, 8);
      store<i32>(group, emit(OP_SPLIT, size + 1, 0));
    } else if (depth > 0 && c == 0x7d) {
      closeGroup(load<i32>(group), load<i32>(group, 4));
      depth--;
    } else if (c == 0x7b) {
      const opened = groups + (<usize>(depth++) << 3);
      store<i32>(opened, emit(OP_SPLIT, size + 1, 0));
      store<i32>(opened, -1, 4);
    } else if (c == 0x2a) {
      const across = charAt(i) == 0x2a;
      if (across) i++;
      emit(OP_SPLIT, size + 1, size + 3);
      emit(across ? OP_ANY : OP_OTHER, 0, 0);
      emit(OP_JUMP, size - 2, 0);
    } else if (c == 0x3f) {
      emit(OP_OTHER, 0, 0);
    } else if (c == 0x5b) {
      i = compileClass(i);
      if (i < 0) return false;
    } else if (c == BACKSLASH) {
      if (i < charCount) emit(OP_CHAR, charAt(i++), 0);
    } else {
      emit(OP_CHAR, c, 0);
    }
  }
  for (; depth > 0; depth--) {
    const group = groups + (<usize>(depth - 1) << 3);
    closeGroup(load<i32>(group), load<i32>(group, 4));
  }
  emit(OP_MATCH, 0, 0);
  return true;
}

/** Whether the code point is one of the delimiters (an array of one-code-point strings). */
function isDelimiter(r: i32, delimiters: usize, count: i32): bool {
  for (let i = 0; i < count; i++) {
    if (load<i32>(delimiters + (<usize>i << 2)) == r) return true;
  }
  return false;
}

/** Whether instruction pc's code point test holds for r. */
function accepts(pc: i32, r: i32, delimiters: usize, delimiterCount: i32): bool {
  const at = instruction(pc);
  const op = load<i32>(at);
  const a = load<i32>(at, 4);
  const b = load<i32>(at, 8);
  switch (op) {
    case OP_CHAR: return r == a;
    case OP_ANY: return true;
    case OP_OTHER: return !isDelimiter(r, delimiters, delimiterCount);
    case OP_RANGE: return r >= a && r <= b;
    case OP_RANGE + 1: return r < a || r > b;
  }
  let listed = false;
  for (let i = 0; i < b && !listed; i++) listed = load<i32>(classes + (<usize>(a + i) << 2)) == r;
  return listed == (op == OP_LIST);
}

/**
 * Adds pc to the state list at `states` (of `count` entries, returned grown), following JUMPs and
 * SPLITs; `seen` marks the pcs added for step `step` so that each is added once.
 */
function addState(states: usize, count: i32, pc: i32, seen: usize, step: i32, stack: usize): i32 {
  store<i32>(stack, pc);
  store<i32>(seen + (<usize>pc << 2), step);
  let top = 1;
  while (top > 0) {
    const at = load<i32>(stack + (<usize>(--top) << 2));
    const op = load<i32>(instruction(at));
    if (op == OP_JUMP || op == OP_SPLIT) {
      for (let k = op == OP_SPLIT ? 2 : 1; k > 0; k--) {
        const next = load<i32>(instruction(at) + (<usize>k << 2));
        if (load<i32>(seen + (<usize>next << 2)) == step) continue;
        store<i32>(seen + (<usize>next << 2), step);
        store<i32>(stack + (<usize>(top++) << 2), next);
      }
    } else {
      store<i32>(states + (<usize>(count++) << 2), at);
    }
  }
  return count;
}

/** Runs the compiled glob over the subject's code points: whether it matches all of it. */
function run(subject: usize, len: i32, delimiters: usize, delimiterCount: i32): bool {
  const bytes = <usize>size << 2;
  let current = alloc(bytes);
  let next = alloc(bytes);
  const seen = alloc(bytes);
  const stack = alloc(bytes);
  memory.fill(seen, 0xff, bytes);
  let step = 0;
  let count = addState(current, 0, 0, seen, step, stack);
  const end = subject + <usize>len;
  for (let p = subject; p < end && count > 0; p += <usize>runeSize) {
    const r = decodeRune(p, end);
    step++;
    let nextCount = 0;
    for (let i = 0; i < count; i++) {
      const pc = load<i32>(current + (<usize>i << 2));
      if (load<i32>(instruction(pc)) != OP_MATCH && accepts(pc, r, delimiters, delimiterCount)) {
        nextCount = addState(next, nextCount, pc + 1, seen, step, stack);
      }
    }
    const swap = current;
    current = next;
    next = swap;
    count = nextCount;
  }
  for (let i = 0; i < count; i++) {
    if (load<i32>(instruction(load<i32>(current + (<usize>i << 2)))) == OP_MATCH) return true;
  }
  return false;
}

/** The number of delimiters `delimiterList` found. */
let delimiterCount: i32 = 0;

/**
 * The delimiters as code points in a new heap array, their count in `delimiterCount`; 0 when the
 * operand is neither null (no delimiters) nor an array of one-code-point strings. An empty
 * array means the default, ".".
 */
function delimiterList(delimiters: Value): usize {
  const tag = typeOf(delimiters);
  const list = alloc(<usize>max(1, tag == TYPE_ARRAY ? arrayLength(delimiters) : 0) << 2);
  delimiterCount = 0;
  if (tag == TYPE_NULL) return list;
  if (tag != TYPE_ARRAY) return 0;
  const n = arrayLength(delimiters);
  if (n == 0) {
    store<i32>(list, 0x2e);
    delimiterCount = 1;
    return list;
  }
  for (let i = 0; i < n; i++) {
    const d = arrayGet(delimiters, i);
    if (!isString(d) || stringLength(d) == 0) return 0;
    const data = stringData(d);
    const r = decodeRune(data, data + <usize>stringLength(d));
    if (runeSize != stringLength(d)) return 0;
    store<i32>(list + (<usize>i << 2), r);
  }
  delimiterCount = n;
  return list;
}

/** `glob.match(pattern, delimiters, match)`; its working memory is released before it returns. */
export function bi_glob_match(pattern: Value, delimiters: Value, match: Value): Value {
  if (!isString(pattern) || !isString(match)) return UNDEFINED;
  const mark = heapTop();
  const delimiterArray = delimiterList(delimiters);
  let matched = -1;
  if (delimiterArray) {
    const data = stringData(pattern);
    const len = stringLength(pattern);
    const end = data + <usize>len;
    chars = alloc(<usize>len << 2);
    charCount = 0;
    for (let p = data; p < end; p += <usize>runeSize) store<i32>(chars + (<usize>(charCount++) << 2), decodeRune(p, end));
    // At most three instructions per code point (`*`), plus MATCH.
    program = alloc((<usize>charCount * 3 + 1) * 12);
    size = 0;
    classes = alloc(<usize>charCount << 2);
    classSize = 0;
    if (compile()) matched = run(stringData(match), stringLength(match), delimiterArray, delimiterCount) ? 1 : 0;
  }
  heapReset(mark);
  return matched < 0 ? UNDEFINED : booleanValue(matched == 1);
}

/**
 * The text with a backslash before each `*`, `?`, `\`, `[`, `]`, `{` and `}` (gobwas/glob's
 * QuoteMeta), so that as a pattern it matches itself.
 */
export function bi_glob_quote_meta(s: Value): Value {
  return rewrittenString(s, quoteGlobMeta);
}

function quoteGlobMeta(out: TextBuffer, p: usize, len: i32): bool {
  for (let i = 0; i < len; i++) {
    const c = <i32>load<u8>(p + <usize>i);
    if (c == 0x2a || c == 0x3f || c == 0x5c || c == 0x5b || c == 0x5d || c == 0x7b || c == 0x7d) out.byte(0x5c);
    out.byte(c);
  }
  return true;
}
