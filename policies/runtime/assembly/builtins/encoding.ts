// json.marshal, json.marshal_with_options, json.unmarshal, json.is_valid, base64.encode, base64.decode, base64.is_valid,
// base64url.encode, base64url.encode_no_pad, base64url.decode, hex.encode, hex.decode.

import {
  Value, UNDEFINED, isString, isObject, isBoolean, booleanOf, stringData, stringLength, parseJSON,
  booleanValue, objectLength, objectGetBytes, stringValue,
} from "../value";
import { decodeBase64, encodeBase64 } from "./base64";
import { emptyString } from "./string-search";
import { hexDigitValue } from "./uuid";
import { appendGoJSON, appendIndentedJSON } from "./go-json";
import { TextBuffer, output, scratch, rewrittenString } from "./text-buffer";

export function bi_json_marshal(v: Value): Value {
  if (!v) return UNDEFINED;
  output.begin();
  appendGoJSON(output, v);
  return output.toStringCopy();
}

// The option names of json.marshal_with_options, and the default indent, a tab.
const PRETTY = memory.data<u8>([0x70, 0x72, 0x65, 0x74, 0x74, 0x79]);
const INDENT = memory.data<u8>([0x69, 0x6e, 0x64, 0x65, 0x6e, 0x74]);
const PREFIX = memory.data<u8>([0x70, 0x72, 0x65, 0x66, 0x69, 0x78]);
const TAB = memory.data<u8>([0x09]);

/**
 * json.marshal's text, indented as Go's json.MarshalIndent does when the options ask for it:
 * `indent` (a tab by default) and `prefix` (a string that starts every line, the first too)
 * imply indenting unless `pretty` (a boolean) says otherwise. Undefined for any other option or
 * an option of the wrong type, as OPA fails then.
 */
export function bi_json_marshal_with_options(v: Value, options: Value): Value {
  if (!v || !isObject(options)) return UNDEFINED;
  const pretty = objectGetBytes(options, PRETTY, 6);
  const indent = objectGetBytes(options, INDENT, 6);
  const prefix = objectGetBytes(options, PREFIX, 6);
  const known = <i32>(pretty != UNDEFINED) + <i32>(indent != UNDEFINED) + <i32>(prefix != UNDEFINED);
  if (known != objectLength(options)) return UNDEFINED;
  if ((pretty && !isBoolean(pretty)) || (indent && !isString(indent)) || (prefix && !isString(prefix))) return UNDEFINED;
  const indented = pretty ? booleanOf(pretty) : indent != UNDEFINED || prefix != UNDEFINED;
  output.begin();
  if (!indented) {
    appendGoJSON(output, v);
    return output.toStringCopy();
  }
  scratch.begin();
  appendGoJSON(scratch, v);
  const linePrefix = prefix ? prefix : emptyString();
  output.bytes(stringData(linePrefix), stringLength(linePrefix));
  appendIndentedJSON(output, scratch.data, scratch.len, linePrefix, indent ? indent : stringValue(TAB, 1));
  return output.toStringCopy();
}

/** The value the JSON text holds; undefined when it is not exactly one valid JSON value. */
export function bi_json_unmarshal(text: Value): Value {
  if (!isString(text)) return UNDEFINED;
  // Strings without escapes point into the text, whose bytes are immutable.
  return parseJSON(stringData(text), stringLength(text));
}

/** Whether the operand is a string holding exactly one valid JSON value; false for any other operand. */
export function bi_json_is_valid(text: Value): Value {
  return booleanValue(isString(text) && parseJSON(stringData(text), stringLength(text)) != UNDEFINED);
}

export function bi_base64_encode(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  output.begin();
  encodeBase64(output, stringData(s), stringLength(s));
  return output.toStringCopy();
}

/** The decoded bytes as a string (which need not be valid UTF-8); undefined for invalid input. */
export function bi_base64_decode(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  output.begin();
  if (!decodeBase64(output, stringData(s), stringLength(s))) return UNDEFINED;
  return output.toStringCopy();
}

/** Whether the operand is a string `base64.decode` accepts; false for any other operand. */
export function bi_base64_is_valid(s: Value): Value {
  if (!isString(s)) return booleanValue(false);
  output.begin();
  return booleanValue(decodeBase64(output, stringData(s), stringLength(s)));
}

export function bi_base64url_encode(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  output.begin();
  encodeBase64(output, stringData(s), stringLength(s), true);
  return output.toStringCopy();
}

export function bi_base64url_encode_no_pad(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  output.begin();
  encodeBase64(output, stringData(s), stringLength(s), true, false);
  return output.toStringCopy();
}

/** The bytes of base64url text as a string; see `base64UrlDecoded`. */
export function bi_base64url_decode(s: Value): Value {
  return isString(s) ? base64UrlDecoded(stringData(s), stringLength(s)) : UNDEFINED;
}

/**
 * The `len` bytes of base64url text at `data` decoded, as a string on the heap; undefined for
 * invalid text. As OPA decodes it: text not ending in `=` is padded first when its length leaves
 * two or three characters over (RFC 7515, appendix C), so padded and unpadded text both decode.
 */
export function base64UrlDecoded(data: usize, len: i32): Value {
  const rest = len % 4;
  const padded = len > 0 && load<u8>(data + <usize>(len - 1)) == 0x3d;
  if (!padded && rest == 1) return UNDEFINED;
  scratch.begin();
  scratch.bytes(data, len);
  if (!padded && rest != 0) scratch.repeat(0x3d, 4 - rest);
  output.begin();
  if (!decodeBase64(output, scratch.data, scratch.len, true)) return UNDEFINED;
  return output.toStringCopy();
}

/** The string's bytes in lower-case hexadecimal. */
export function bi_hex_encode(s: Value): Value {
  return rewrittenString(s, encodeHex);
}

function encodeHex(out: TextBuffer, p: usize, len: i32): bool {
  out.hex(p, len);
  return true;
}

/**
 * The bytes hexadecimal text of either case stands for, as a string (which need not be valid
 * UTF-8); undefined for an odd length or a byte that is not a digit, as Go's hex.DecodeString.
 */
export function bi_hex_decode(s: Value): Value {
  return rewrittenString(s, decodeHex);
}

function decodeHex(out: TextBuffer, p: usize, len: i32): bool {
  if (len & 1) return false;
  for (let i = 0; i < len; i += 2) {
    const high = hexDigitValue(load<u8>(p + <usize>i));
    const low = hexDigitValue(load<u8>(p + <usize>i, 1));
    if (high < 0 || low < 0) return false;
    out.byte((high << 4) | low);
  }
  return true;
}
