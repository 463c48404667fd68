import type { IncomingHttpHeaders } from 'node:http';
import { randomHex } from '../../core/ids.ts';
import { TRACEPARENT } from '../tracing.ts';

/**
 * Header hygiene for proxied requests and responses (docs/proxy.md, "Headers").
 *
 * - Hop-by-hop headers (RFC 9110 §7.6.1: Connection and every header it names, plus
 *   Proxy-Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade) describe one
 *   connection and are never passed on; the proxy-authentication pair is for this hop too.
 * - The sidecar's own credentials (the Authorization header carrying the Gatehouse key or JWT,
 *   and the RFC 9421 Signature and Signature-Input) stay here: the upstream is not trusted with them.
 * - `X-Forwarded-For` gains the client's address; `X-Forwarded-Proto` and `-Host` are set from
 *   this connection, replacing whatever the client claimed.
 * - `traceparent` (W3C Trace Context) is passed on, or generated when absent or malformed, so
 *   every proxied request can be followed into the upstream's logs. When tracing is on, the
 *   gateway's own span takes the caller's place (proxy/tracing.ts), and each exchange with the
 *   upstream its client span's.
 */
const HOP_BY_HOP = ['connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authorization', 'proxy-authenticate'];

const SIGNATURE_HEADERS = ['signature', 'signature-input'];

/** What a route policy sees of a request's headers: nothing that carries a credential. */
// Sorted, so the headers a policy sees are too (core/canonical-json.ts writes such values natively).
const POLICY_HEADERS = ['accept', 'accept-language', 'content-digest', 'content-length', 'content-type', 'origin', 'user-agent', 'x-request-id'];

/** What a held request keeps to send later; anything else (cookies, credentials) is not stored. */
const HELD_HEADERS = [
  'accept',
  'accept-encoding',
  'accept-language',
  'content-type',
  'content-encoding',
  'content-language',
  'content-digest',
  'user-agent',
  'x-request-id',
  'traceparent',
  'tracestate',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
];

/**
 * Fields node keeps only the first line of when a request repeats them, dropping the others
 * silently (`IncomingMessage.headers`). The route policy, the audit entry and the upstream would
 * all read the first line, and whatever reads the last (a client library, an intermediary) another
 * request: a repeat is refused instead (docs/security.md, "Malformed HTTP"). Each has a bit, so
 * the check allocates nothing.
 */
const KEPT_ONCE = new Map(
  ['authorization', 'content-length', 'content-type', 'from', 'host', 'if-modified-since', 'if-unmodified-since', 'max-forwards', 'proxy-authorization', 'referer', 'user-agent'].map(
    (name, i) => [name, 1 << i],
  ),
);

/** The first field of KEPT_ONCE sent on several lines, and on how many, or null. */
export function repeatedField(rawHeaders: readonly string[]): { name: string; lines: number } | null {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const bit = KEPT_ONCE.get(name);
    if (bit === undefined) continue;
    if ((seen & bit) === 0) {
      seen |= bit;
      continue;
    }
    let lines = 0;
    for (let j = 0; j < rawHeaders.length; j += 2) if (rawHeaders[j]!.toLowerCase() === name) lines++;
    return { name, lines };
  }
  return null;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

// `delete` is a call into the engine even when the header is absent, as most named here are.
function remove(headers: IncomingHttpHeaders, name: string): void {
  if (headers[name] !== undefined) delete headers[name];
}

function pick(headers: IncomingHttpHeaders, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = single(headers[name]);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Every field of the request once, repeated lines combined with `, `: how a signature base reads them. */
export function combinedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

export function policyHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  return pick(headers, POLICY_HEADERS);
}

export function heldHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  return pick(headers, HELD_HEADERS);
}

/** Removes the hop-by-hop headers, including those the Connection header names. */
export function stripHopByHop(headers: IncomingHttpHeaders): void {
  const named = single(headers['connection']);
  if (named) for (const name of named.split(',')) remove(headers, name.trim().toLowerCase());
  for (const name of HOP_BY_HOP) remove(headers, name);
}

export interface ForwardContext {
  clientAddress: string | undefined;
  /** The route authenticates with the Authorization header, which is therefore ours, not the upstream's. */
  authorizationIsOurs: boolean;
  /** A body is coming: the hop to the upstream re-frames it (chunked unless its length is known). */
  hasBody: boolean;
  /** The gateway request's span, when tracing is on: the upstream's parent instead of the caller's. */
  traceparent: string | null;
}

/**
 * Rewrites a request's headers, in place, into what the upstream receives (see above). Returns
 * the traceparent sent.
 */
export function prepareUpstreamHeaders(headers: IncomingHttpHeaders, context: ForwardContext): string {
  const host = headers['host'];
  stripHopByHop(headers);
  for (const name of SIGNATURE_HEADERS) remove(headers, name);
  if (context.authorizationIsOurs) remove(headers, 'authorization');
  if (context.hasBody && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
  const forwardedFor = single(headers['x-forwarded-for']);
  if (context.clientAddress) headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${context.clientAddress}` : context.clientAddress;
  headers['x-forwarded-proto'] = 'http';
  if (host) headers['x-forwarded-host'] = host;
  else remove(headers, 'x-forwarded-host');
  const incoming = single(headers['traceparent']);
  const continued = incoming !== undefined && TRACEPARENT.test(incoming);
  if (!continued) remove(headers, 'tracestate');
  const traceparent = context.traceparent ?? (continued ? incoming : newTraceparent());
  headers['traceparent'] = traceparent;
  return traceparent;
}

/**
 * Trace and span ids are identifiers, not secrets: they come from the ids' pooled random bits,
 * since two calls into the CSPRNG per request cost more than the rest of the header rewrite.
 */
export function newTraceparent(): string {
  return `00-${randomHex(16)}-${randomHex(8)}-01`;
}
