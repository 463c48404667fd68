// Values as JSON text. Sets are written as arrays (in value order), objects with their keys in
// value order; a non-string key is written as the string of its JSON text, as OPA does.

import { ByteBuffer } from "./buffer";
import { stringStops } from "./json-parse";
import { writeNumber } from "./number-format";
import {
  Value, TYPE_NULL, TYPE_BOOLEAN, TYPE_NUMBER, TYPE_STRING, TYPE_OBJECT,
  StringValue, CollectionValue, typeOf,
} from "./value";

// What each byte needs inside a JSON string: 0 nothing, 1 an escape, 2 an escape when escaping
// for HTML (<, >, &), 3 a check for U+2028/U+2029 when escaping for HTML (lead byte 0xE2).
const ESCAPE_CLASS = memory.data<u8>([
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
]);

const HEX = memory.data<u8>([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);

// "null", "true", "fals" as little-endian u32 words.
// @ts-ignore: decorator
@inline const WORD_NULL: u32 = 0x6c6c756e;
// @ts-ignore: decorator
@inline const WORD_TRUE: u32 = 0x65757274;
// @ts-ignore: decorator
@inline const WORD_FALS: u32 = 0x736c6166;

/**
 * Appends the JSON text of v. With escapeHTML, <, >, &, U+2028 and U+2029 are escaped as Go's
 * json.Marshal does (what OPA's json.marshal returns); otherwise only what JSON requires is.
 */
export function dumpJSON(out: ByteBuffer, v: Value, escapeHTML: bool): void {
  switch (typeOf(v)) {
    case TYPE_STRING: {
      const s = changetype<StringValue>(v);
      writeJSONString(out, s.data, s.len, escapeHTML);
      return;
    }
    case TYPE_NUMBER:
      writeNumber(out, v);
      return;
    case TYPE_BOOLEAN:
      if (load<u8>(v, 1)) {
        store<u32>(out.reserve(4), WORD_TRUE);
        out.len += 4;
      } else {
        const at = out.reserve(5);
        store<u32>(at, WORD_FALS);
        store<u8>(at, 0x65, 4);
        out.len += 5;
      }
      return;
    case TYPE_OBJECT:
      writeObject(out, changetype<CollectionValue>(v), escapeHTML);
      return;
    case 0:
    case TYPE_NULL:
      store<u32>(out.reserve(4), WORD_NULL);
      out.len += 4;
      return;
    default: {
      // Arrays, and sets as arrays.
      const c = changetype<CollectionValue>(v);
      out.writeByte(0x5b);
      for (let i = 0; i < c.len; i++) {
        if (i) out.writeByte(0x2c);
        dumpJSON(out, load<usize>(c.items + (<usize>i << 2)), escapeHTML);
      }
      out.writeByte(0x5d);
    }
  }
}

function writeObject(out: ByteBuffer, c: CollectionValue, escapeHTML: bool): void {
  out.writeByte(0x7b);
  for (let i = 0; i < c.len; i++) {
    if (i) out.writeByte(0x2c);
    const entry = c.items + (<usize>i << 3);
    const key = load<usize>(entry);
    if (typeOf(key) == TYPE_STRING) {
      const s = changetype<StringValue>(key);
      writeJSONString(out, s.data, s.len, escapeHTML);
    } else {
      const text = ByteBuffer.create(32);
      dumpJSON(text, key, escapeHTML);
      writeJSONString(out, text.data, text.len, escapeHTML);
    }
    out.writeByte(0x3a);
    dumpJSON(out, load<usize>(entry, 4), escapeHTML);
  }
  out.writeByte(0x7d);
}

/** Appends the bytes as a quoted JSON string; non-ASCII stays UTF-8. */
export function writeJSONString(out: ByteBuffer, data: usize, len: i32, escapeHTML: bool): void {
  out.writeByte(0x22);
  const end = data + <usize>len;
  let run = data;
  let p = data;
  const limit: u8 = escapeHTML ? 3 : 1;
  if (!escapeHTML) while (p + 8 <= end && !stringStops(load<u64>(p))) p += 8;
  while (p < end) {
    const b = load<u8>(p);
    const cls = load<u8>(ESCAPE_CLASS + b);
    if (cls == 0 || cls > limit) {
      p++;
      continue;
    }
    if (cls == 3 && !(p + 2 < end && load<u8>(p, 1) == 0x80 && (load<u8>(p, 2) | 1) == 0xa9)) {
      p++;
      continue;
    }
    if (p > run) out.writeBytes(run, <i32>(p - run));
    if (cls == 3) {
      writeUnicodeEscape(out, 0x2028 | (load<u8>(p, 2) & 1));
      p += 3;
    } else {
      writeEscape(out, b);
      p++;
    }
    run = p;
  }
  if (p > run) out.writeBytes(run, <i32>(p - run));
  out.writeByte(0x22);
}

function writeEscape(out: ByteBuffer, b: u8): void {
  let short: u8 = 0;
  switch (b) {
    case 0x22: short = 0x22; break;
    case 0x5c: short = 0x5c; break;
    case 0x08: short = 0x62; break;
    case 0x0c: short = 0x66; break;
    case 0x0a: short = 0x6e; break;
    case 0x0d: short = 0x72; break;
    case 0x09: short = 0x74; break;
  }
  if (short) {
    const at = out.reserve(2);
    store<u8>(at, 0x5c);
    store<u8>(at, short, 1);
    out.len += 2;
  } else {
    writeUnicodeEscape(out, b);
  }
}

function writeUnicodeEscape(out: ByteBuffer, code: u32): void {
  const at = out.reserve(6);
  store<u8>(at, 0x5c);
  store<u8>(at, 0x75, 1);
  store<u8>(at, load<u8>(HEX + ((code >> 12) & 15)), 2);
  store<u8>(at, load<u8>(HEX + ((code >> 8) & 15)), 3);
  store<u8>(at, load<u8>(HEX + ((code >> 4) & 15)), 4);
  store<u8>(at, load<u8>(HEX + (code & 15)), 5);
  out.len += 6;
}
