import type { IncomingMessage } from 'node:http';
import { confirmAcrossCluster, judgeCallerSignature } from '../../core/signatures/caller-signature.ts';
import { coversContentDigest } from '../../core/signatures/request-verifier.ts';
import type { Services } from '../services.ts';
import type { ProxyExchange } from './exchange.ts';
import { combinedHeaders } from './headers.ts';
import { readBody } from './request-body.ts';

/**
 * The verify-signature step of the gateway: RFC 9421 signatures of proxied requests and WebSocket
 * upgrades, judged by the same core rules as /v1 (core/signatures/caller-signature.ts), after
 * authentication and before the rate limit. Requests of routes without authentication have no
 * caller whose keys could verify a signature, and are treated as unsigned.
 *
 * `@target-uri` is the URI the client addressed on the gateway: the scheme is `http` (this
 * listener's), or the configured public URL's when one is set (TLS terminated in front); the
 * authority is always the Host field, since the gateway serves many hosts and the public URL
 * names the API's.
 *
 * Bodies stay streamed unless a signature covers `content-digest`: then the body is read whole
 * (bounded by the body limit, 413 beyond), its digest checked against the bytes received, and
 * those bytes forwarded. A body no signature covers fails the signature (`missing_component`)
 * without being read.
 */
const NO_FIELDS: Readonly<Record<string, string>> = Object.freeze({});

export async function verifySignature(services: Services, ex: ProxyExchange, req: IncomingMessage): Promise<void> {
  const principal = ex.principal;
  if (!principal) return;
  // Unsigned requests, the common case, are judged without copying their fields: the verifier
  // reads nothing else when there is no signature.
  const signed = req.headers['signature-input'] !== undefined || req.headers['signature'] !== undefined;
  const headers = signed ? combinedHeaders(req.headers) : NO_FIELDS;
  if (ex.hasBody && signed && coversContentDigest(headers)) {
    await readBody(ex, req, services.limits.bodyBytes, 'a body whose Content-Digest is signed is read whole to check it');
  }
  const { signatures } = services;
  const publicUrl = signatures.publicUrl;
  const view = {
    method: ex.method,
    scheme: publicUrl ? publicUrl.protocol.slice(0, -1) : 'http',
    authority: (req.headers.host ?? '').toLowerCase(),
    path: ex.path,
    query: ex.rawQuery,
    headers,
  };
  const judged = await confirmAcrossCluster(signatures, judgeCallerSignature(signatures, principal, { view, body: ex.body, unreadBody: ex.hasBody && ex.body === null }));
  ex.signature = judged.facts;
  ex.signatureSummary = judged.summary;
  if (judged.refusal) throw judged.refusal;
}
