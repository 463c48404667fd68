// json.marshal, json.unmarshal, base64.encode, base64.decode.

import { Value, UNDEFINED, isString, stringData, stringLength, parseJSON } from "../value";
import { decodeBase64, encodeBase64 } from "./base64";
import { appendGoJSON } from "./go-json";
import { output } from "./text-buffer";

export function bi_json_marshal(v: Value): Value {
  if (!v) return UNDEFINED;
  output.begin();
  appendGoJSON(output, v);
  return output.toStringCopy();
}

/** The value the JSON text holds; undefined when it is not exactly one valid JSON value. */
export function bi_json_unmarshal(text: Value): Value {
  if (!isString(text)) return UNDEFINED;
  // Strings without escapes point into the text, whose bytes are immutable.
  return parseJSON(stringData(text), stringLength(text));
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
