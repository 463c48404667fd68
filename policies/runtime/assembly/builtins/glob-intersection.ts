// regex.globs_match, as OPA answers it with yashtewari/glob-intersection (v0.2.0): whether some
// non-empty string matches both globs. Its globs are not glob.match's (glob.ts) but a small
// regular language:
//
//   .        any code point
//   [abc]    one of the listed code points; [a-z] a range (ranges and single code points mix;
//            `[]` is the empty class); `.` and `[` are themselves inside a class
//   x+ x*    a flag on the token before it: one or more, zero or more
//   \x       x itself, anywhere
//
// and any other code point itself. A flag with no token before it (`*a`, `a**`), a `]` outside a
// class, an unclosed class, a range with no start, a missing or special end (`[a-]`, `[a-]]`),
// or reversed ends, and a trailing backslash are errors, which make the call undefined.
//
// The decision takes the library's steps, so that it answers as OPA does whatever the globs: after
// trimming the plain tokens both globs share at their ends, it walks the two token lists
// together, and at a flagged token lets it swallow the other glob's tokens, trying the rest of
// both at each point where the token after the flag matches.

import { abortWithMessage } from "../abort";
import { alloc } from "../heap";
import { Value, UNDEFINED, isString, stringData, stringLength, booleanValue } from "../value";
import { decodeRune, runeCount, runeSize } from "./utf8";

// A token is four i32 words: kind, flag, and for a character its code point, for a class the
// index of its first range and the number of ranges (two i32 words each: first, last).
// @ts-ignore: decorator
@inline const TOKEN_SIZE: usize = 16;
// @ts-ignore: decorator
@inline const KIND_CHARACTER: i32 = 0;
// @ts-ignore: decorator
@inline const KIND_DOT: i32 = 1;
// @ts-ignore: decorator
@inline const KIND_CLASS: i32 = 2;
// @ts-ignore: decorator
@inline const FLAG_NONE: i32 = 0;
// @ts-ignore: decorator
@inline const FLAG_PLUS: i32 = 1;
// @ts-ignore: decorator
@inline const FLAG_STAR: i32 = 2;

// What nextRune returns past the end of the input, and for a trailing backslash.
// @ts-ignore: decorator
@inline const END: i32 = -1;
// @ts-ignore: decorator
@inline const BAD: i32 = -2;

/** The code points of the glob being read, and where the rune nextRune read ends. */
let runes: usize = 0;
let runeTotal: i32 = 0;
let nextIndex: i32 = 0;
let escaped: bool = false;

/** The class ranges of both globs: pairs of code points, appended as classes are read. */
let ranges: usize = 0;
let rangeTop: i32 = 0;

// @ts-ignore: decorator
@inline
function word(token: usize, i: i32): i32 {
  return load<i32>(token + (<usize>i << 2));
}

// @ts-ignore: decorator
@inline
function kindOf(token: usize): i32 {
  return word(token, 0);
}

// @ts-ignore: decorator
@inline
function flagOf(token: usize): i32 {
  return word(token, 1);
}

// @ts-ignore: decorator
@inline
function tokenAt(glob: usize, i: i32): usize {
  return glob + <usize>i * TOKEN_SIZE;
}

// @ts-ignore: decorator
@inline
function rangeFirst(i: i32): i32 {
  return load<i32>(ranges + (<usize>i << 3));
}

// @ts-ignore: decorator
@inline
function rangeLast(i: i32): i32 {
  return load<i32>(ranges + (<usize>i << 3), 4);
}

/**
 * The code point at `index`, a backslash taking the next one as it is (`escaped`); END past the
 * input, BAD for a trailing backslash. `nextIndex` is where the next one starts.
 */
function nextRune(index: i32): i32 {
  if (index >= runeTotal) return END;
  const r = load<i32>(runes + (<usize>index << 2));
  if (r != 0x5c) {
    escaped = false;
    nextIndex = index + 1;
    return r;
  }
  if (index == runeTotal - 1) return BAD;
  escaped = true;
  nextIndex = index + 2;
  return load<i32>(runes + (<usize>(index + 1) << 2));
}

/** Appends the range [first, last] to the class being read. */
function addRange(first: i32, last: i32): void {
  store<i32>(ranges + (<usize>rangeTop << 3), first);
  store<i32>(ranges + (<usize>rangeTop << 3), last, 4);
  rangeTop++;
}

/**
 * Sorts the class's ranges from `start` and joins those that overlap or touch, so that equal
 * classes have equal ranges; returns how many remain.
 */
function normalizeRanges(start: i32): i32 {
  for (let i = start + 1; i < rangeTop; i++) {
    const first = rangeFirst(i);
    const last = rangeLast(i);
    let j = i - 1;
    while (j >= start && rangeFirst(j) > first) {
      store<i64>(ranges + (<usize>(j + 1) << 3), load<i64>(ranges + (<usize>j << 3)));
      j--;
    }
    store<i32>(ranges + (<usize>(j + 1) << 3), first);
    store<i32>(ranges + (<usize>(j + 1) << 3), last, 4);
  }
  let kept = start;
  for (let i = start; i < rangeTop; i++) {
    if (kept > start && rangeFirst(i) <= rangeLast(kept - 1) + 1) {
      if (rangeLast(i) > rangeLast(kept - 1)) store<i32>(ranges + (<usize>(kept - 1) << 3), rangeLast(i), 4);
      continue;
    }
    store<i64>(ranges + (<usize>kept << 3), load<i64>(ranges + (<usize>i << 3)));
    kept++;
  }
  rangeTop = kept;
  return kept - start;
}

/**
 * Reads the class whose `[` ends before `index` into `token`, as the library's nextTokenSet does;
 * returns where the next token starts, or -1 when the class is malformed.
 */
function readClass(index: i32, token: usize): i32 {
  const start = rangeTop;
  let previous = 0;
  let hasPrevious = false;
  let r = nextRune(index);
  while (r != END) {
    if (r == BAD) return -1;
    if (!escaped && r == 0x5d) {
      store<i32>(token, KIND_CLASS);
      store<i32>(token, start, 8);
      store<i32>(token, normalizeRanges(start), 12);
      return nextIndex;
    }
    if (!escaped && r == 0x2d) {
      // A range needs a start before the `-` and room for its end and a `]` after it.
      if (!hasPrevious || nextIndex >= runeTotal - 1) return -1;
      const last = nextRune(nextIndex);
      if (last == BAD || (!escaped && (last == 0x5d || last == 0x2d)) || last < previous) return -1;
      addRange(previous, last);
      hasPrevious = false;
    } else {
      addRange(r, r);
      previous = r;
      hasPrevious = true;
    }
    r = nextRune(nextIndex);
  }
  return -1;
}

/**
 * Reads the glob's code points into tokens at `glob`, as the library's Tokenize does; returns
 * the number of tokens, or -1 when the glob is malformed.
 */
function tokenize(glob: usize): i32 {
  let count = 0;
  let index = 0;
  while (index < runeTotal) {
    const token = tokenAt(glob, count);
    const r = nextRune(index);
    if (r == BAD) return -1;
    index = nextIndex;
    store<i32>(token, KIND_CHARACTER);
    store<i32>(token, r, 8);
    if (!escaped) {
      if (r == 0x2e) store<i32>(token, KIND_DOT);
      else if (r == 0x5b) index = readClass(index, token);
      else if (r == 0x5d || r == 0x2b || r == 0x2a) return -1;
      if (index < 0) return -1;
    }
    const f = nextRune(index);
    if (f == BAD) return -1;
    let flag = FLAG_NONE;
    if (f != END && !escaped && (f == 0x2b || f == 0x2a)) {
      flag = f == 0x2b ? FLAG_PLUS : FLAG_STAR;
      index = nextIndex;
    }
    store<i32>(token, flag, 4);
    count++;
  }
  return count;
}

/** Whether the two tokens stand for the same code points, flags aside (the library's Equal). */
function sameToken(a: usize, b: usize): bool {
  const kind = kindOf(a);
  if (kind != kindOf(b)) return false;
  if (kind == KIND_DOT) return true;
  if (kind == KIND_CHARACTER) return word(a, 2) == word(b, 2);
  const n = word(a, 3);
  if (n != word(b, 3)) return false;
  for (let i = 0; i < n; i++) {
    const x = word(a, 2) + i;
    const y = word(b, 2) + i;
    if (rangeFirst(x) != rangeFirst(y) || rangeLast(x) != rangeLast(y)) return false;
  }
  return true;
}

/**
 * The library's Simplify: a flagged token right after an equal flagged token merges into it,
 * `+` winning over `*`. Returns the new token count.
 */
function simplify(glob: usize, count: i32): i32 {
  if (count == 0) return 0;
  let kept = 1;
  for (let i = 1; i < count; i++) {
    const token = tokenAt(glob, i);
    const latest = tokenAt(glob, kept - 1);
    if (flagOf(token) != FLAG_NONE && flagOf(latest) != FLAG_NONE && sameToken(token, latest)) {
      if (flagOf(token) == FLAG_PLUS) store<i32>(latest, FLAG_PLUS, 4);
      continue;
    }
    memory.copy(tokenAt(glob, kept), token, TOKEN_SIZE);
    kept++;
  }
  return kept;
}

/** Whether the class holds the code point. */
function classHas(token: usize, r: i32): bool {
  const end = word(token, 2) + word(token, 3);
  for (let i = word(token, 2); i < end; i++) {
    if (r >= rangeFirst(i) && r <= rangeLast(i)) return true;
  }
  return false;
}

/** Whether the two classes share a code point. */
function classesMeet(a: usize, b: usize): bool {
  const end = word(a, 2) + word(a, 3);
  for (let i = word(a, 2); i < end; i++) {
    const bEnd = word(b, 2) + word(b, 3);
    for (let j = word(b, 2); j < bEnd; j++) {
      if (rangeFirst(i) <= rangeLast(j) && rangeFirst(j) <= rangeLast(i)) return true;
    }
  }
  return false;
}

/** The library's Match: whether one code point can stand for both tokens (a dot meets anything, an empty class too). */
function tokensMatch(a: usize, b: usize): bool {
  const ka = kindOf(a);
  const kb = kindOf(b);
  if (ka == KIND_DOT || kb == KIND_DOT) return true;
  if (ka == KIND_CHARACTER && kb == KIND_CHARACTER) return word(a, 2) == word(b, 2);
  if (ka == KIND_CHARACTER) return classHas(b, word(a, 2));
  if (kb == KIND_CHARACTER) return classHas(a, word(b, 2));
  return classesMeet(a, b);
}

/**
 * The library's steps can take time exponential in the flagged tokens (`.*a` sixteen times against
 * `a*.` sixteen times ran for over a minute), where OPA would be cancelled by its evaluation
 * deadline. Past this many token comparisons the evaluation fails, as a size budget does, so
 * globs from a request cannot hold the event loop; a few million take well under a second.
 */
// @ts-ignore: decorator
@inline const MAX_STEPS: i32 = 2000000;
let steps: i32 = 0;

function step(): void {
  if (++steps > MAX_STEPS) abortWithMessage("size budget: regex.globs_match gave up after 2000000 steps");
}

/** The library's intersectNormal: the two globs in step until a flagged token. */
function intersectNormal(g1: usize, n1: i32, g2: usize, n2: i32): bool {
  let i = 0;
  for (; i < n1 && i < n2; i++) {
    step();
    const a = tokenAt(g1, i);
    const b = tokenAt(g2, i);
    if (flagOf(a) != FLAG_NONE || flagOf(b) != FLAG_NONE) {
      return intersectSpecial(a, n1 - i, b, n2 - i);
    }
    if (!tokensMatch(a, b)) return false;
  }
  return i == n1 && i == n2;
}

/** The library's intersectSpecial: hands the glob starting with a flagged token to its rule. */
function intersectSpecial(g1: usize, n1: i32, g2: usize, n2: i32): bool {
  const flagged = flagOf(g1) != FLAG_NONE;
  const glob = flagged ? g1 : g2;
  const n = flagged ? n1 : n2;
  const other = flagged ? g2 : g1;
  const otherCount = flagged ? n2 : n1;
  return flagOf(glob) == FLAG_PLUS
    ? intersectPlus(glob, n, other, otherCount)
    : intersectStar(glob, n, other, otherCount);
}

/**
 * The library's intersectPlus: the other glob's first token must meet the flagged one, which then
 * goes on as a star, unless that token is flagged itself and swallows it whole.
 */
function intersectPlus(plussed: usize, n: i32, other: usize, otherCount: i32): bool {
  if (!tokensMatch(plussed, other)) return false;
  if (intersectStar(plussed, n, tokenAt(other, 1), otherCount - 1)) return true;
  return flagOf(other) != FLAG_NONE && intersectNormal(tokenAt(plussed, 1), n - 1, other, otherCount);
}

/**
 * The library's intersectStar: the flagged token swallows the other glob's tokens; wherever one
 * meets the token after the flag, the rest of both globs is tried in step.
 */
function intersectStar(starred: usize, n: i32, other: usize, otherCount: i32): bool {
  const following = n > 1 ? tokenAt(starred, 1) : 0;
  for (let i = 0; i < otherCount; i++) {
    step();
    const t = tokenAt(other, i);
    if (following && tokensMatch(t, following) && intersectNormal(following, n - 1, t, otherCount - i)) return true;
    if (!tokensMatch(t, starred)) return false;
  }
  return !following;
}

/** Where trimGlobs' globs start (the same index in both), and their lengths after trimming. */
let trimmedStart: i32 = 0;
let trimmedCount1: i32 = 0;
let trimmedCount2: i32 = 0;

/**
 * The library's trimGlobs: drops the plain tokens the globs share at their start and end (one
 * of each kept), false when such a token does not match.
 */
function trimGlobs(g1: usize, n1: i32, g2: usize, n2: i32): bool {
  let l = 0;
  for (; l < n1 && l < n2 && flagOf(tokenAt(g1, l)) == FLAG_NONE && flagOf(tokenAt(g2, l)) == FLAG_NONE; l++) {
    if (!tokensMatch(tokenAt(g1, l), tokenAt(g2, l))) return false;
  }
  if (l > 0) l--;
  let r1 = n1 - 1;
  let r2 = n2 - 1;
  for (; r1 >= l && r2 >= l && flagOf(tokenAt(g1, r1)) == FLAG_NONE && flagOf(tokenAt(g2, r2)) == FLAG_NONE; r1--, r2--) {
    if (!tokensMatch(tokenAt(g1, r1), tokenAt(g2, r2))) return false;
  }
  if (r1 < n1 - 1) {
    r1++;
    r2++;
  }
  trimmedStart = l;
  trimmedCount1 = r1 + 1 - l;
  trimmedCount2 = r2 + 1 - l;
  return true;
}

/** The number of tokens readGlob read last, -1 for a malformed glob. */
let globCount: i32 = 0;

/** The tokens of the glob string, simplified, at a fresh block; their count in `globCount`. */
function readGlob(s: Value): usize {
  const p = stringData(s);
  const len = stringLength(s);
  runeTotal = runeCount(p, len);
  runes = alloc(<usize>runeTotal << 2);
  const end = p + <usize>len;
  let at = p;
  for (let i = 0; i < runeTotal; i++) {
    store<i32>(runes + (<usize>i << 2), decodeRune(at, end));
    at += <usize>runeSize;
  }
  const glob = alloc(<usize>runeTotal * TOKEN_SIZE);
  const count = tokenize(glob);
  globCount = count < 0 ? -1 : simplify(glob, count);
  return glob;
}

/**
 * Whether the intersection of the two globs matches a non-empty set of non-empty strings, as
 * glob-intersection's NonEmpty decides it. Undefined for a non-string or a malformed glob, as
 * OPA reports an error for those.
 */
export function bi_regex_globs_match(glob1: Value, glob2: Value): Value {
  if (!isString(glob1) || !isString(glob2)) return UNDEFINED;
  steps = 0;
  // Each rune adds at most one range.
  ranges = alloc(<usize>(stringLength(glob1) + stringLength(glob2)) << 3);
  rangeTop = 0;
  const g1 = readGlob(glob1);
  const n1 = globCount;
  if (n1 < 0) return UNDEFINED;
  const g2 = readGlob(glob2);
  const n2 = globCount;
  if (n2 < 0) return UNDEFINED;
  if (!trimGlobs(g1, n1, g2, n2)) return booleanValue(false);
  return booleanValue(intersectNormal(tokenAt(g1, trimmedStart), trimmedCount1, tokenAt(g2, trimmedStart), trimmedCount2));
}
