import { createPrivateKey, createSecretKey, randomBytes, type JsonWebKey, type KeyObject } from 'node:crypto';
import { serializeDictionary, type InnerList, type Parameters } from 'structured-headers';
import { signBase, type SignatureAlgorithm } from './algorithms.ts';
import { contentDigest, type DigestAlgorithm } from './content-digest.ts';
import { buildSignatureBase, type RequestView } from './signature-base.ts';

/**
 * The client side of RFC 9421: signs an outgoing request the way Gatehouse verifies it. Used by
 * the typed client (proxy/client), the tests and the benchmark, so there is one signer.
 *
 * By default a signature covers `@method`, `@target-uri` and, with a body, `content-digest`
 * (added to the request here), with `created`, a random `nonce`, `keyid` and `alg`.
 */
export interface SigningKey {
  /** The `keyid`: the `kid` the key was registered under. */
  kid: string;
  alg: SignatureAlgorithm;
  /** The private key (or, for hmac-sha256, the shared secret). */
  key: KeyObject;
}

export interface OutgoingRequest {
  method: string;
  url: string | URL;
  /** Any case; the signer reads covered fields by lower-case name. */
  headers?: Record<string, string>;
  body?: string | Uint8Array | null;
}

export interface SignOptions {
  label?: string;
  /** Extra components to cover after the defaults, e.g. `content-type`. */
  components?: string[];
  /** Seconds since the epoch (default now). */
  created?: number;
  /** Seconds since the epoch; omitted by default. */
  expires?: number;
  /** `null` sends no nonce; default 16 random bytes. */
  nonce?: string | null;
  digest?: DigestAlgorithm;
}

/** A signing key from a private JWK (`d` present) or an oct JWK for hmac-sha256. */
export function signingKeyFromJwk(kid: string, alg: SignatureAlgorithm, jwk: JsonWebKey): SigningKey {
  const key = alg === 'hmac-sha256' ? createSecretKey(Buffer.from(String(jwk.k), 'base64url')) : createPrivateKey({ key: jwk, format: 'jwk' });
  return { kid, alg, key };
}

/** The view of an outgoing request that the signature base is built from. */
export function viewOf(url: URL, method: string, headers: Record<string, string>): RequestView {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return { method, scheme: url.protocol.slice(0, -1), authority: url.host, path: url.pathname, query: url.search.slice(1), headers: lower };
}

/**
 * The headers to add to `request`: `Signature-Input`, `Signature` and, when it has a body,
 * `Content-Digest`.
 */
export function signRequest(request: OutgoingRequest, signingKey: SigningKey, options: SignOptions = {}): Record<string, string> {
  const url = typeof request.url === 'string' ? new URL(request.url) : request.url;
  const added: Record<string, string> = {};
  const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
  const components = ['@method', '@target-uri'];
  if (body && body.length > 0) {
    added['content-digest'] = contentDigest(body, options.digest);
    components.push('content-digest');
  }
  components.push(...(options.components ?? []));
  const params: Parameters = new Map();
  params.set('created', options.created ?? Math.floor(Date.now() / 1000));
  if (options.expires !== undefined) params.set('expires', options.expires);
  const nonce = options.nonce === undefined ? randomBytes(16).toString('base64url') : options.nonce;
  if (nonce !== null) params.set('nonce', nonce);
  params.set('keyid', signingKey.kid);
  params.set('alg', signingKey.alg);
  const input: InnerList = [components.map((name) => [name, new Map()]), params];
  const view = viewOf(url, request.method, { ...request.headers, ...added });
  const { base } = buildSignatureBase(input, view);
  const signature = signBase(signingKey.alg, signingKey.key, Buffer.from(base));
  const label = options.label ?? 'sig1';
  added['signature-input'] = serializeDictionary(new Map([[label, input]]));
  added['signature'] = serializeDictionary(new Map([[label, [new Uint8Array(signature), new Map()]]]));
  return added;
}
