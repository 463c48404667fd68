// JSON text as Go's json.Marshal writes OPA's JSON form of a value, for json.marshal: compact,
// sets as arrays, object keys sorted as strings, HTML-sensitive characters (<, >, &) and
// U+2028/U+2029 escaped, invalid UTF-8 written as \ufffd. A key that is not a string becomes
// the string of its own JSON text, as OPA converts it before marshalling. Indented as Go's
// json.MarshalIndent indents that text, for json.marshal_with_options.

import { alloc } from "../heap";
import {
  Value, TYPE_NULL, TYPE_BOOLEAN, TYPE_NUMBER, TYPE_STRING, TYPE_OBJECT,
  typeOf, booleanOf, stringData, stringLength, collectionLength, collectionItems,
  objectKeyAt, objectValueAt, compareBytes, writeNumber,
} from "../value";
import { TextBuffer } from "./text-buffer";
import { decodeRune, runeSize, RUNE_ERROR } from "./utf8";

const HEX = memory.data<u8>([
  0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
]);

function appendUnicodeEscape(out: TextBuffer, code: i32): void {
  out.ascii("\\u");
  for (let shift = 12; shift >= 0; shift -= 4) out.byte(<i32>load<u8>(HEX + <usize>((code >> shift) & 15)));
}

/** Go's encoding/json appendString with HTML escaping. */
function appendJSONString(out: TextBuffer, data: usize, len: i32): void {
  const end = data + <usize>len;
  out.byte(0x22);
  let run = data;
  let p = data;
  while (p < end) {
    const b = <i32>load<u8>(p);
    if (b < 0x80) {
      if (b >= 0x20 && b != 0x22 && b != 0x5c && b != 0x3c && b != 0x3e && b != 0x26) {
        p++;
        continue;
      }
      out.bytes(run, <i32>(p - run));
      if (b == 0x22 || b == 0x5c) {
        out.byte(0x5c);
        out.byte(b);
      } else if (b == 0x08) out.ascii("\\b");
      else if (b == 0x0c) out.ascii("\\f");
      else if (b == 0x0a) out.ascii("\\n");
      else if (b == 0x0d) out.ascii("\\r");
      else if (b == 0x09) out.ascii("\\t");
      else appendUnicodeEscape(out, b);
      p++;
      run = p;
      continue;
    }
    const r = decodeRune(p, end);
    const size = runeSize;
    if ((r == RUNE_ERROR && size == 1) || r == 0x2028 || r == 0x2029) {
      out.bytes(run, <i32>(p - run));
      appendUnicodeEscape(out, r);
      p += <usize>size;
      run = p;
      continue;
    }
    p += <usize>size;
  }
  out.bytes(run, <i32>(p - run));
  out.byte(0x22);
}

export function hasOnlyStringKeys(object: Value): bool {
  const n = collectionLength(object);
  for (let i = 0; i < n; i++) if (typeOf(objectKeyAt(object, i)) != TYPE_STRING) return false;
  return true;
}

/**
 * The keys of `object` by the names OPA gives them when it converts the object to Go's JSON form
 * (a string key is its text, any other key its own JSON text), sorted by name as Go sorts a map's
 * keys: `n` entries of 12 bytes, the name's bytes, their length, and the key's index in the
 * object. Keys with the same name are one key of a Go map, holding the later value: see
 * `shadowed`.
 */
export function keyNames(object: Value): usize {
  const n = collectionLength(object);
  const entries = alloc(<usize>n * 12);
  for (let i = 0; i < n; i++) {
    const key = objectKeyAt(object, i);
    let name: usize;
    let nameLength: i32;
    if (typeOf(key) == TYPE_STRING) {
      name = stringData(key);
      nameLength = stringLength(key);
    } else {
      // Its own buffer: the key may hold objects that need key texts of their own.
      const text = TextBuffer.onHeap(32);
      appendGoJSON(text, key);
      name = text.data;
      nameLength = text.len;
    }
    // Insertion sort by name, stable, so that equal names keep the object's order.
    let j = i;
    while (j > 0) {
      const prev = entries + <usize>(j - 1) * 12;
      if (compareBytes(load<usize>(prev), load<i32>(prev, 4), name, nameLength) <= 0) break;
      memory.copy(prev + 12, prev, 12);
      j--;
    }
    const at = entries + <usize>j * 12;
    store<usize>(at, name);
    store<i32>(at, nameLength, 4);
    store<i32>(at, i, 8);
  }
  return entries;
}

/** Whether entry `i` of `keyNames`' `n` is shadowed: the next one has the same name, and its value wins. */
export function shadowed(entries: usize, i: i32, n: i32): bool {
  if (i + 1 >= n) return false;
  const at = entries + <usize>i * 12;
  const next = at + 12;
  return compareBytes(load<usize>(at), load<i32>(at, 4), load<usize>(next), load<i32>(next, 4)) == 0;
}

// An object whose keys are not all strings, under the names `keyNames` gives them.
function appendObjectWithKeyTexts(out: TextBuffer, object: Value): void {
  const n = collectionLength(object);
  const entries = keyNames(object);
  out.byte(0x7b);
  let written = 0;
  for (let i = 0; i < n; i++) {
    if (shadowed(entries, i, n)) continue;
    const at = entries + <usize>i * 12;
    if (written++ > 0) out.byte(0x2c);
    appendJSONString(out, load<usize>(at), load<i32>(at, 4));
    out.byte(0x3a);
    appendGoJSON(out, objectValueAt(object, load<i32>(at, 8)));
  }
  out.byte(0x7d);
}

export function appendGoJSON(out: TextBuffer, v: Value): void {
  switch (typeOf(v)) {
    case TYPE_NULL:
      out.ascii("null");
      return;
    case TYPE_BOOLEAN:
      out.ascii(booleanOf(v) ? "true" : "false");
      return;
    case TYPE_NUMBER:
      writeNumber(out, v);
      return;
    case TYPE_STRING:
      appendJSONString(out, stringData(v), stringLength(v));
      return;
    case TYPE_OBJECT: {
      if (!hasOnlyStringKeys(v)) {
        appendObjectWithKeyTexts(out, v);
        return;
      }
      const n = collectionLength(v);
      out.byte(0x7b);
      for (let i = 0; i < n; i++) {
        if (i > 0) out.byte(0x2c);
        const key = objectKeyAt(v, i);
        appendJSONString(out, stringData(key), stringLength(key));
        out.byte(0x3a);
        appendGoJSON(out, objectValueAt(v, i));
      }
      out.byte(0x7d);
      return;
    }
  }
  // Arrays, and sets as arrays.
  const n = collectionLength(v);
  const items = collectionItems(v);
  out.byte(0x5b);
  for (let i = 0; i < n; i++) {
    if (i > 0) out.byte(0x2c);
    appendGoJSON(out, load<Value>(items + (<usize>i << 2)));
  }
  out.byte(0x5d);
}

/**
 * The compact JSON text `appendGoJSON` wrote, `len` bytes at `src`, indented as Go's json.Indent
 * does it: a line per element and member, each after a newline, the prefix and `indent` once per
 * depth, a space after each colon; an empty array or object stays `[]` or `{}`. Like Go, nothing
 * is written before the first line.
 */
export function appendIndentedJSON(out: TextBuffer, src: usize, len: i32, prefix: Value, indent: Value): void {
  let depth = 0;
  // An opening bracket's newline waits for what follows, so that an empty one stays closed.
  let opened = false;
  let inString = false;
  for (let i = 0; i < len; i++) {
    const c = <i32>load<u8>(src + <usize>i);
    if (inString) {
      out.byte(c);
      if (c == 0x5c) out.byte(<i32>load<u8>(src + <usize>++i));
      else if (c == 0x22) inString = false;
      continue;
    }
    const closing = c == 0x5d || c == 0x7d;
    if (opened && !closing) appendNewline(out, prefix, indent, ++depth);
    if (closing && !opened) appendNewline(out, prefix, indent, --depth);
    opened = c == 0x5b || c == 0x7b;
    out.byte(c);
    if (c == 0x22) inString = true;
    else if (c == 0x2c) appendNewline(out, prefix, indent, depth);
    else if (c == 0x3a) out.byte(0x20);
  }
}

function appendNewline(out: TextBuffer, prefix: Value, indent: Value, depth: i32): void {
  out.byte(0x0a);
  out.bytes(stringData(prefix), stringLength(prefix));
  for (let i = 0; i < depth; i++) out.bytes(stringData(indent), stringLength(indent));
}
