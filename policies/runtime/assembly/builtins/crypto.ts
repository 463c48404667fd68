// crypto.md5, crypto.sha1, crypto.sha256, crypto.hmac.md5, crypto.hmac.sha1, crypto.hmac.sha256,
// crypto.hmac.sha512, crypto.hmac.equal: strings hashed as their UTF-8 bytes, digests as
// lower-case hex, as OPA gives them.

import { Value, UNDEFINED, isString, stringData, stringLength, booleanValue } from "../value";
import { Hash, MAX_DIGEST_SIZE, digestBegin, digestFinish, digestUpdate } from "./digest";
import { constantTimeEqual, hmac } from "./hmac";
import { output } from "./text-buffer";

/** The digest or MAC just computed. */
const DIGEST = memory.data(MAX_DIGEST_SIZE, 8);

function hexOf(n: i32): Value {
  output.begin();
  output.hex(DIGEST, n);
  return output.toStringCopy();
}

function hexDigest(alg: Hash, s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  digestBegin(alg);
  digestUpdate(stringData(s), stringLength(s));
  return hexOf(digestFinish(DIGEST));
}

function hexHmac(alg: Hash, s: Value, key: Value): Value {
  if (!isString(s) || !isString(key)) return UNDEFINED;
  return hexOf(hmac(alg, stringData(key), stringLength(key), stringData(s), stringLength(s), DIGEST));
}

export function bi_crypto_md5(s: Value): Value {
  return hexDigest(Hash.MD5, s);
}

export function bi_crypto_sha1(s: Value): Value {
  return hexDigest(Hash.SHA1, s);
}

export function bi_crypto_sha256(s: Value): Value {
  return hexDigest(Hash.SHA256, s);
}

export function bi_crypto_hmac_md5(s: Value, key: Value): Value {
  return hexHmac(Hash.MD5, s, key);
}

export function bi_crypto_hmac_sha1(s: Value, key: Value): Value {
  return hexHmac(Hash.SHA1, s, key);
}

export function bi_crypto_hmac_sha256(s: Value, key: Value): Value {
  return hexHmac(Hash.SHA256, s, key);
}

export function bi_crypto_hmac_sha512(s: Value, key: Value): Value {
  return hexHmac(Hash.SHA512, s, key);
}

/** Whether two MACs are the same bytes, compared in constant time. */
export function bi_crypto_hmac_equal(a: Value, b: Value): Value {
  if (!isString(a) || !isString(b)) return UNDEFINED;
  return booleanValue(constantTimeEqual(stringData(a), stringLength(a), stringData(b), stringLength(b)));
}
