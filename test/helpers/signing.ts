import { createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { SignatureAlgorithm } from '../../core/signatures/algorithms.ts';
import { signRequest, type SignOptions, type SigningKey } from '../../core/signatures/signer.ts';
import type { Answer } from './gatehouse.ts';

/**
 * Signing keys of every algorithm, and raw requests whose headers a test may change after
 * signing (the tamper tests).
 */
export function keyPair(alg: SignatureAlgorithm, kid = `${alg}-${randomBytes(4).toString('hex')}`): { signer: SigningKey; jwk: Record<string, unknown> } {
  if (alg === 'hmac-sha256') {
    const secret = randomBytes(32);
    return { signer: { kid, alg, key: createSecretKey(secret) }, jwk: { kty: 'oct', k: secret.toString('base64url'), kid } };
  }
  const pair =
    alg === 'ed25519'
      ? generateKeyPairSync('ed25519')
      : alg === 'ecdsa-p256-sha256'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { signer: { kid, alg, key: pair.privateKey as KeyObject }, jwk: { ...pair.publicKey.export({ format: 'jwk' }), kid } };
}

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A request signed by `signer` for the API key `apiKey`, not yet sent. */
export function signed(url: string, apiKey: string, signer: SigningKey, request: Omit<RawRequest, 'headers'> & { headers?: Record<string, string> }, options: SignOptions = {}): RawRequest {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, ...request.headers };
  if (request.body !== undefined) headers['content-type'] ??= 'application/json';
  Object.assign(headers, signRequest({ method: request.method, url: url + request.path, headers, body: request.body ?? null }, signer, options));
  return { ...request, headers };
}

export async function send(url: string, request: RawRequest): Promise<Answer> {
  const response = await fetch(url + request.path, {
    method: request.method,
    headers: request.headers,
    ...(request.body !== undefined ? { body: request.body } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}
