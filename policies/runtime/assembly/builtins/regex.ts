// Regular expression builtins: regex.match, regex.is_valid, regex.find_n,
// regex.find_all_string_submatch_n, regex.replace, regex.split, regex.template_match. Patterns are RE2 as Go's
// regexp compiles them (../regex/), matched in linear time; an invalid pattern makes a builtin
// undefined (regex.is_valid false). Results that are pieces of the text share its bytes.

import {
  Value, UNDEFINED, isString, stringData, stringLength, booleanValue, numberIntOf, newArray, arrayAppend,
} from "../value";
import { compiled, MatchIterator, Regexp } from "../regex/regexp";
import { Machine } from "../regex/machine";
import { isLetterOrDigit } from "../regex/unicode";
import { isIntOperand } from "./operands";
import { emptyString, substringOf } from "./string-search";
import { TextBuffer, output } from "./text-buffer";
import { decodeRune, runeSize } from "./utf8";

/** The compiled pattern of a string operand; null for any other operand or an invalid pattern. */
function regexpOf(pattern: Value): Regexp | null {
  return isString(pattern) ? compiled(stringData(pattern), stringLength(pattern)) : null;
}

/** Whether `value` contains a match of the pattern (an unanchored search). */
export function bi_regex_match(pattern: Value, value: Value): Value {
  const re = regexpOf(pattern);
  if (re === null || !isString(value)) return UNDEFINED;
  return booleanValue(re.matches(stringData(value), stringLength(value)));
}

/** Whether the operand is a string holding a pattern Go's regexp accepts. */
export function bi_regex_is_valid(pattern: Value): Value {
  return booleanValue(regexpOf(pattern) !== null);
}

/** Go's `FindAllString(value, n)`: up to n matches (all when n < 0); [] for none. */
export function bi_regex_find_n(pattern: Value, value: Value, n: Value): Value {
  return findAll(pattern, value, n, false);
}

/**
 * Go's `FindAllStringSubmatch(value, n)`: for each of up to n matches (all when n < 0), the
 * match and its groups, "" for a group that did not take part; [] for none.
 */
export function bi_regex_find_all_string_submatch_n(pattern: Value, value: Value, n: Value): Value {
  return findAll(pattern, value, n, true);
}

/** Up to n matches (all when n < 0), each a string, or with `groups` an array of the match and its groups. */
function findAll(pattern: Value, value: Value, n: Value, groups: bool): Value {
  const re = regexpOf(pattern);
  if (re === null || !isString(value) || !isIntOperand(n)) return UNDEFINED;
  const data = stringData(value);
  const len = stringLength(value);
  const requested = numberIntOf(n);
  const limit = requested < 0 ? i64.MAX_VALUE : requested;
  const result = newArray(0);
  if (limit == 0) return result;
  const slots = groups ? re.allSlots : 2;
  const matches = new MatchIterator(re, slots, data, len);
  const m = matches.m;
  for (let count: i64 = 0; count < limit && matches.next(); count++) {
    if (!groups) {
      arrayAppend(result, substringOf(value, data, len, m.slot(0), m.slot(1)));
      continue;
    }
    const match = newArray(slots >> 1);
    for (let i = 0; i < slots; i += 2) {
      const start = m.slot(i);
      arrayAppend(match, start < 0 ? emptyString() : substringOf(value, data, len, start, m.slot(i + 1)));
    }
    arrayAppend(result, match);
  }
  return result;
}

/**
 * Go's `ReplaceAllString(s, template)`: each match replaced by the template with `$1`, `${1}`,
 * `$name`, `${name}` expanded and `$$` for `$` (see `expand`).
 */
export function bi_regex_replace(s: Value, pattern: Value, template: Value): Value {
  const re = regexpOf(pattern);
  if (re === null || !isString(s) || !isString(template)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const matches = new MatchIterator(re, re.allSlots, data, len);
  if (!matches.next()) return s;
  output.begin();
  let last = 0;
  do {
    output.bytes(data + <usize>last, matches.m.slot(0) - last);
    expand(re, matches.m, data, stringData(template), stringLength(template));
    last = matches.m.slot(1);
  } while (matches.next());
  output.bytes(data + <usize>last, len - last);
  return output.toStringCopy();
}

/**
 * Writes the template for one match (Go's `Regexp.Expand`): a name is the longest run of
 * letters, digits and `_`; a number without leading zeros is a group index, anything else a
 * group name (the first group of that name that took part). A group that does not exist or did
 * not take part expands to nothing; a `$` starting no valid reference stands for itself.
 */
function expand(re: Regexp, m: Machine, text: usize, template: usize, len: i32): void {
  const end = template + <usize>len;
  let p = template;
  while (p < end) {
    const c = load<u8>(p);
    if (c != 0x24 || p + 1 >= end) {
      output.byte(c);
      p++;
      continue;
    }
    if (load<u8>(p, 1) == 0x24) { // $$
      output.byte(0x24);
      p += 2;
      continue;
    }
    const braced = load<u8>(p, 1) == 0x7b;
    const name = p + (braced ? 2 : 1);
    let nameEnd = name;
    while (nameEnd < end) {
      const r = decodeRune(nameEnd, end);
      if (r != 0x5f && !isLetterOrDigit(r)) break;
      nameEnd += <usize>runeSize;
    }
    if (nameEnd == name || (braced && (nameEnd >= end || load<u8>(nameEnd) != 0x7d))) {
      output.byte(0x24);
      p++;
      continue;
    }
    p = braced ? nameEnd + 1 : nameEnd;
    const group = groupIndex(re, m, name, <i32>(nameEnd - name));
    if (group < 0 || group > re.syntax.groups) continue;
    const start = m.slot(2 * group);
    if (start >= 0) output.bytes(text + <usize>start, m.slot(2 * group + 1) - start);
  }
}

/** The group a template reference names: its number, or the group of that name; -1 if none. */
function groupIndex(re: Regexp, m: Machine, name: usize, len: i32): i32 {
  let num = 0;
  for (let i = 0; i < len && num >= 0; i++) {
    const d = <i32>load<u8>(name + <usize>i) - 0x30;
    num = d < 0 || d > 9 || num >= 100_000_000 ? -1 : num * 10 + d;
  }
  if (len > 1 && load<u8>(name) == 0x30) num = -1; // no leading zeros
  return num >= 0 ? num : re.namedGroup(m, name, len);
}

/**
 * Go's `Split(value, -1)`: the text between matches. An empty match at the very start adds no
 * empty first piece, and the text after the last match is kept unless that match began at the
 * end; an empty text gives [""], except for the empty pattern, which gives [].
 */
export function bi_regex_split(pattern: Value, value: Value): Value {
  const re = regexpOf(pattern);
  if (re === null || !isString(value)) return UNDEFINED;
  const data = stringData(value);
  const len = stringLength(value);
  const result = newArray(0);
  if (len == 0 && re.patternLength > 0) {
    arrayAppend(result, value);
    return result;
  }
  const matches = new MatchIterator(re, 2, data, len);
  let begin = 0;
  let end = 0;
  while (matches.next()) {
    end = matches.m.slot(0);
    if (matches.m.slot(1) != 0) arrayAppend(result, substringOf(value, data, len, begin, end));
    begin = matches.m.slot(1);
  }
  if (end != len) arrayAppend(result, substringOf(value, data, len, begin, len));
  return result;
}

/** Whether Go's `regexp.QuoteMeta` puts a backslash before the byte. */
function isRegexMeta(c: i32): bool {
  switch (c) {
    case 0x5c: case 0x2e: case 0x2b: case 0x2a: case 0x3f: case 0x28: case 0x29: case 0x7c:
    case 0x5b: case 0x5d: case 0x7b: case 0x7d: case 0x5e: case 0x24:
      return true;
  }
  return false;
}

/** Writes the `len` bytes at `p` as Go's `regexp.QuoteMeta` quotes them. */
function writeQuotedMeta(out: TextBuffer, p: usize, len: i32): void {
  for (let i = 0; i < len; i++) {
    const c = <i32>load<u8>(p + <usize>i);
    if (isRegexMeta(c)) out.byte(0x5c);
    out.byte(c);
  }
}

/** Whether `^pattern$` of the `len` bytes at `p` compiles, as OPA requires of each template variable. */
function compilesAnchored(p: usize, len: i32): bool {
  // On the heap: the compiled pattern keeps pointing at its text for the rest of the evaluation.
  const text = TextBuffer.onHeap(len + 2);
  text.byte(0x5e);
  text.bytes(p, len);
  text.byte(0x24);
  return compiled(text.data, text.len) !== null;
}

/**
 * The anchored pattern OPA's compileRegexTemplate (after gorilla/mux) builds from a template: the
 * text outside delimiters quoted, each outermost delimited part a group of its own. Null when the
 * delimiters are unbalanced or a part does not compile on its own.
 */
function templatePattern(p: usize, len: i32, open: u8, close: u8): Regexp | null {
  const out = TextBuffer.onHeap(len * 2 + 2);
  out.byte(0x5e);
  let level = 0;
  let partStart = 0;
  let literalStart = 0;
  for (let i = 0; i < len; i++) {
    const c = load<u8>(p + <usize>i);
    // An opening delimiter is looked for first, so with equal delimiters the levels only rise.
    if (c == open) {
      if (++level == 1) partStart = i;
    } else if (c == close) {
      if (--level < 0) return null;
      if (level > 0) continue;
      const part = p + <usize>partStart + 1;
      const partLength = i - partStart - 1;
      if (!compilesAnchored(part, partLength)) return null;
      writeQuotedMeta(out, p + <usize>literalStart, partStart - literalStart);
      out.byte(0x28);
      out.bytes(part, partLength);
      out.byte(0x29);
      literalStart = i + 1;
    }
  }
  if (level != 0) return null;
  writeQuotedMeta(out, p + <usize>literalStart, len - literalStart);
  out.byte(0x24);
  return compiled(out.data, out.len);
}

/**
 * Whether `value` matches the template: text matched literally around regular expressions set
 * off by the one-byte delimiters (`"urn:foo:{.*}"` with `"{"` and `"}"`), the whole value
 * matched. Undefined, as OPA's errors are, for delimiters that are not one byte each, unbalanced
 * delimiters, or a part that is not a valid pattern.
 */
export function bi_regex_template_match(template: Value, value: Value, delimiterStart: Value, delimiterEnd: Value): Value {
  if (!isString(template) || !isString(value) || !isString(delimiterStart) || !isString(delimiterEnd)) return UNDEFINED;
  if (stringLength(delimiterStart) != 1 || stringLength(delimiterEnd) != 1) return UNDEFINED;
  const open = load<u8>(stringData(delimiterStart));
  const close = load<u8>(stringData(delimiterEnd));
  const re = templatePattern(stringData(template), stringLength(template), open, close);
  if (re === null) return UNDEFINED;
  return booleanValue(re.matches(stringData(value), stringLength(value)));
}
