/**
 * A `perRequest` module for bench/lib/load.ts: signs every request afresh (RFC 9421, a new
 * `created` and `nonce` each time, as a real client must since replays are refused) with the
 * project's signer. Loaded in the load generator's process, so signing costs the generator, not
 * the server under test.
 */
import type { JsonWebKey } from 'node:crypto';
import type { SignatureAlgorithm } from '../../core/signatures/algorithms.ts';
import { signingKeyFromJwk, signRequest } from '../../core/signatures/signer.ts';
import type { PerRequestFactory } from './load.ts';

export interface SignRequestsOptions {
  kid: string;
  alg: SignatureAlgorithm;
  /** The private JWK (JSON crosses into the generator process). */
  jwk: JsonWebKey;
  method: string;
  body: string;
}

const signRequests: PerRequestFactory = (raw) => {
  const options = raw as SignRequestsOptions;
  const key = signingKeyFromJwk(options.kid, options.alg, options.jwk);
  return (_seq, url) => ({
    headers: signRequest({ method: options.method, url, headers: { 'content-type': 'application/json' }, body: options.body }, key),
    body: options.body,
  });
};

export default signRequests;
