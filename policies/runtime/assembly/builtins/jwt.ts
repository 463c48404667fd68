// io.jwt.decode, io.jwt.verify_hs256, io.jwt.verify_hs384, io.jwt.verify_hs512, as OPA's
// topdown/tokens.go reads a compact JWS: three segments separated by `.`, each base64url (padded
// or not) as `base64url.decode` takes it. Verifying with a public key needs the host.

import {
  Value, UNDEFINED, isString, isObject, stringData, stringLength, stringEqualsBytes, booleanValue,
  parseJSON, newArray, arrayAppend, objectGetBytes,
} from "../value";
import { Hash, MAX_DIGEST_SIZE } from "./digest";
import { base64UrlDecoded } from "./encoding";
import { constantTimeEqual, hmac } from "./hmac";
import { output } from "./text-buffer";

const ENC = memory.data<u8>([0x65, 0x6e, 0x63]);
const CTY = memory.data<u8>([0x63, 0x74, 0x79]);
const JWT = memory.data<u8>([0x4a, 0x57, 0x54]);

/** The MAC computed over a token. */
const MAC = memory.data(MAX_DIGEST_SIZE, 8);

// Where the two dots of the token `splitToken` last accepted are, as byte offsets.
let firstDot: i32 = 0;
let secondDot: i32 = 0;

/** Whether the `len` bytes at `data` are exactly three segments; sets `firstDot` and `secondDot`. */
function splitToken(data: usize, len: i32): bool {
  let dots = 0;
  for (let i = 0; i < len; i++) {
    if (load<u8>(data + <usize>i) != 0x2e) continue;
    if (dots == 0) firstDot = i;
    else secondDot = i;
    dots++;
  }
  return dots == 2;
}

/** The JSON object a decoded segment holds, or undefined. */
function jsonObject(text: Value): Value {
  if (!text) return UNDEFINED;
  const v = parseJSON(stringData(text), stringLength(text));
  return isObject(v) ? v : UNDEFINED;
}

// @ts-ignore: decorator
@inline
function isQuote(c: u8): bool {
  return c == 0x22 || c == 0x27;
}

/**
 * `[header, payload, signature as hex]` of the token of `len` bytes at `data`. The header must be
 * a JSON object without `enc` (OPA refuses JWE). A header with `"cty": "JWT"` says the payload is
 * itself a token: it is decoded instead, after the quotes jwt.io puts around it are trimmed.
 */
function decodeToken(data: usize, len: i32): Value {
  if (!splitToken(data, len)) return UNDEFINED;
  const payloadAt = firstDot + 1;
  const signatureAt = secondDot + 1;
  const header = jsonObject(base64UrlDecoded(data, firstDot));
  if (!header || objectGetBytes(header, ENC, 3)) return UNDEFINED;
  const payloadText = base64UrlDecoded(data + <usize>payloadAt, secondDot - payloadAt);
  if (!payloadText) return UNDEFINED;
  const cty = objectGetBytes(header, CTY, 3);
  if (isString(cty) && stringEqualsBytes(cty, JWT, 3)) {
    let from = stringData(payloadText);
    let to = from + <usize>stringLength(payloadText);
    while (from < to && isQuote(load<u8>(from))) from++;
    while (to > from && isQuote(load<u8>(to - 1))) to--;
    return decodeToken(from, <i32>(to - from));
  }
  const payload = jsonObject(payloadText);
  if (!payload) return UNDEFINED;
  const signature = base64UrlDecoded(data + <usize>signatureAt, len - signatureAt);
  if (!signature) return UNDEFINED;
  output.begin();
  output.hex(stringData(signature), stringLength(signature));
  const result = newArray(3);
  arrayAppend(result, header);
  arrayAppend(result, payload);
  arrayAppend(result, output.toStringCopy());
  return result;
}

export function bi_io_jwt_decode(token: Value): Value {
  return isString(token) ? decodeToken(stringData(token), stringLength(token)) : UNDEFINED;
}

/**
 * Whether the token's signature is the HMAC-`alg` of its first two segments, as written, under
 * the secret's bytes. As in OPA, neither the header nor the payload is decoded: only the
 * signature must be base64url. Compared in constant time.
 */
function verifyHmac(alg: Hash, token: Value, secret: Value): Value {
  if (!isString(token) || !isString(secret)) return UNDEFINED;
  const data = stringData(token);
  const len = stringLength(token);
  if (!splitToken(data, len)) return UNDEFINED;
  const signatureAt = secondDot + 1;
  const signature = base64UrlDecoded(data + <usize>signatureAt, len - signatureAt);
  if (!signature) return UNDEFINED;
  const n = hmac(alg, stringData(secret), stringLength(secret), data, secondDot, MAC);
  return booleanValue(constantTimeEqual(stringData(signature), stringLength(signature), MAC, n));
}

export function bi_io_jwt_verify_hs256(token: Value, secret: Value): Value {
  return verifyHmac(Hash.SHA256, token, secret);
}

export function bi_io_jwt_verify_hs384(token: Value, secret: Value): Value {
  return verifyHmac(Hash.SHA384, token, secret);
}

export function bi_io_jwt_verify_hs512(token: Value, secret: Value): Value {
  return verifyHmac(Hash.SHA512, token, secret);
}
