// RFC 9421 signatures made in the page, for sessions opened with a one-time sign-in code (keys
// that must sign: docs/console.md). The page makes its own key pair with WebCrypto, the private
// half created non-extractable, so no script (this one included) can read its bytes; the public
// half is registered with the session when the code is redeemed.
//
// The key is held in this module's memory only, not in IndexedDB: it dies with the page, so a
// session cookie copied from the browser's profile on disk, or anywhere else, cannot act without
// it. The cost is signing in again after a reload.
//
// Each request is signed over what the server requires (docs/signatures.md): `@method`,
// `@target-uri` and, with a body, `content-digest` (RFC 9530), with `created`, a fresh `nonce`,
// `keyid` and `alg`.

let held = null;

/** A new key pair: Ed25519 where WebCrypto has it (Chromium 137+, Firefox 129+, Safari 17+), else ECDSA P-256. */
async function generate() {
  try {
    return { alg: 'ed25519', params: { name: 'Ed25519' }, pair: await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']) };
  } catch {
    const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
    return { alg: 'ecdsa-p256-sha256', params: { name: 'ECDSA', hash: 'SHA-256' }, pair };
  }
}

/** A fresh key pair not yet in use, and the public JWK to register for it. */
export async function newSessionKey() {
  const key = await generate();
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', key.pair.publicKey);
  return { key, jwk: y === undefined ? { kty, crv, x } : { kty, crv, x, y } };
}

/** From now on requests are signed with `key`, under the keyid the server gave it. */
export function useSessionKey(key, keyid) {
  held = { keyid, alg: key.alg, params: key.params, privateKey: key.pair.privateKey };
}

/** Forgets the key (sign-out, or a session that ended): the page holds nothing that signs. */
export function forgetSessionKey() {
  held = null;
}

export function hasSessionKey() {
  return held !== null;
}

function base64(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)));
}

function nonce() {
  return base64(crypto.getRandomValues(new Uint8Array(16))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The headers that sign a request to `url` (absolute, as the browser will send it) with `body`
 * (the exact bytes, or null): `Signature-Input`, `Signature` and, with a body, `Content-Digest`.
 * None without a session key.
 */
export async function signatureHeaders(method, url, body) {
  if (!held) return {};
  const headers = {};
  const components = ['"@method"', '"@target-uri"'];
  const lines = [`"@method": ${method}`, `"@target-uri": ${url}`];
  if (body && body.length) {
    headers['content-digest'] = `sha-256=:${base64(await crypto.subtle.digest('SHA-256', body))}:`;
    components.push('"content-digest"');
    lines.push(`"content-digest": ${headers['content-digest']}`);
  }
  const created = Math.floor(Date.now() / 1000);
  const params = `(${components.join(' ')});created=${created};nonce="${nonce()}";keyid="${held.keyid}";alg="${held.alg}"`;
  lines.push(`"@signature-params": ${params}`);
  const signature = await crypto.subtle.sign(held.params, held.privateKey, new TextEncoder().encode(lines.join('\n')));
  headers['signature-input'] = `sig=${params}`;
  headers['signature'] = `sig=:${base64(signature)}:`;
  return headers;
}
