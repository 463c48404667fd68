import { randomBytes } from 'node:crypto';
import type { SignatureAlgorithm } from '../../core/signatures/algorithms.ts';
import { signRequest, type SignOptions, type SigningKey } from '../../core/signatures/signer.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../bench/lib/signing-key-pairs.ts';
import { call, type Answer } from './gatehouse.ts';

/**
 * Signing keys of every algorithm, and raw requests whose headers a test may change after
 * signing (the tamper tests).
 */
export function keyPair(alg: SignatureAlgorithm, kid = `${alg}-${randomBytes(4).toString('hex')}`): SigningKeyPair {
  return generateSigningKeyPair(alg, kid);
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

/** Sends `request` exactly as it stands: no signing and no headers added. */
export function send(url: string, request: RawRequest): Promise<Answer> {
  return call(url, request.method, request.path, { headers: request.headers, raw: request.body, signer: null });
}
