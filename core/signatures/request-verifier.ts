import type { KeyObject } from 'node:crypto';
import type { SignatureAlgorithm } from './algorithms.ts';
import { verifyBase } from './algorithms.ts';
import { checkContentDigest } from './content-digest.ts';
import { SignatureFailure, type SignatureCheck } from './failure.ts';
import type { ClaimedMarkers, ReplayGuard } from './replay-guard.ts';
import { buildSignatureBase, type RequestView } from './signature-base.ts';
import { parseSignatureFields, type SignatureEntry } from './signature-fields.ts';

/**
 * Verifies the RFC 9421 signatures of one request. A request may carry several signatures by
 * label (one per hop, say); those whose `keyid` names a signing key of the caller are verified,
 * the others are reported and left alone. Every verified one must pass every check:
 *
 *   keyid known → alg fits → required components covered → created within the skew window and
 *   not expired → signature valid over the base → Content-Digest matches the body → not a replay
 *
 * The cheap checks run before the cryptography, so stale or incomplete signatures cost little.
 */
export interface VerificationKey {
  kid: string;
  alg: SignatureAlgorithm;
  key: KeyObject;
  /** Scopes nonces: the same nonce from two signing keys is not a replay. */
  signer: string;
}

export type KeyLookup = (keyid: string) => VerificationKey | undefined;

export interface LabelReport {
  label: string;
  keyId: string | null;
  result: 'verified' | 'skipped' | SignatureCheck;
}

export type SignatureOutcome =
  | { outcome: 'unsigned' }
  | { outcome: 'verified'; label: string; keyId: string; alg: SignatureAlgorithm; covered: string[]; labels: LabelReport[]; claimed: ClaimedMarkers }
  | { outcome: 'failed'; label: string | null; keyId: string | null; alg: string | null; check: SignatureCheck; detail: string; labels: LabelReport[] };

export interface SignedRequest {
  view: RequestView;
  /** The body received; null when there is none, or when it was not read (`unreadBody`). */
  body: Buffer | null;
  /**
   * The request has a body the caller passes on without reading it (the proxy gateway streams a
   * body unless a signature covers content-digest). A signature must still cover the body, so
   * this fails `missing_component`.
   */
  unreadBody?: boolean;
}

export const DEFAULT_SKEW_SECONDS = 300;

/** Components that pin the request's method, target and body (see docs/signatures.md). */
function missingRequired(covered: Set<string>, hasBody: boolean): string | null {
  if (!covered.has('@method')) return '@method';
  const target = covered.has('@target-uri') || (covered.has('@authority') && (covered.has('@request-target') || (covered.has('@path') && covered.has('@query'))));
  if (!target) return '@target-uri (or @authority with @path and @query)';
  if (hasBody && !covered.has('content-digest')) return 'content-digest';
  return null;
}

export class RequestSignatureVerifier {
  constructor(
    readonly replay: ReplayGuard,
    readonly skewSeconds: number = DEFAULT_SKEW_SECONDS,
  ) {}

  verify(request: SignedRequest, lookup: KeyLookup, now = Date.now()): SignatureOutcome {
    const { headers } = request.view;
    const input = headers['signature-input'];
    if (input === undefined) {
      if (headers['signature'] === undefined) return { outcome: 'unsigned' };
      return failed(null, null, new SignatureFailure('malformed', 'Signature without a Signature-Input field'), []);
    }
    let entries: SignatureEntry[];
    try {
      entries = parseSignatureFields(input, headers['signature']);
    } catch (error) {
      return failed(null, null, error as SignatureFailure, []);
    }
    const candidates = entries.map((entry) => ({ entry, key: entry.keyid === null ? undefined : lookup(entry.keyid) }));
    const labels: LabelReport[] = candidates.map(({ entry }) => ({ label: entry.label, keyId: entry.keyid, result: 'skipped' }));
    if (!candidates.some((c) => c.key)) {
      const first = entries[0]!;
      labels[0]!.result = 'unknown_key';
      const detail = first.keyid === null ? `signature ${first.label} names no keyid` : `keyid ${first.keyid} is not an active signing key of this API key`;
      return failed(first, null, new SignatureFailure('unknown_key', detail), labels);
    }
    let verified: Extract<SignatureOutcome, { outcome: 'verified' }> | undefined;
    for (const [i, { entry, key }] of candidates.entries()) {
      if (!key) continue;
      try {
        const { covered, claimed } = this.check(entry, key, request, now);
        labels[i]!.result = 'verified';
        if (verified) {
          verified.claimed.markers.push(...claimed.markers);
          verified.claimed.until = Math.max(verified.claimed.until, claimed.until);
        }
        verified ??= { outcome: 'verified', label: entry.label, keyId: key.kid, alg: key.alg, covered, labels, claimed };
      } catch (error) {
        if (!(error instanceof SignatureFailure)) throw error;
        labels[i]!.result = error.check;
        return failed(entry, key, error, labels);
      }
    }
    return verified!;
  }

  private check(entry: SignatureEntry, key: VerificationKey, request: SignedRequest, now: number): { covered: string[]; claimed: ClaimedMarkers } {
    if (entry.alg !== null && entry.alg !== key.alg) {
      throw new SignatureFailure('bad_signature', `${entry.label}: alg ${entry.alg} does not match the key's ${key.alg}`);
    }
    const hasBody = request.unreadBody === true || (request.body !== null && request.body.length > 0);
    const names = new Set(entry.components.map(([name]) => name as string));
    const missing = missingRequired(names, hasBody);
    if (missing) throw new SignatureFailure('missing_component', `${entry.label} must cover ${missing}`);
    const nowS = now / 1000;
    if (entry.created === null) throw new SignatureFailure('created', `${entry.label} has no created parameter`);
    if (Math.abs(nowS - entry.created) > this.skewSeconds) {
      throw new SignatureFailure('created', `${entry.label} was created ${Math.round(nowS - entry.created)} s from now; the window is ±${this.skewSeconds} s`);
    }
    if (entry.expires !== null && entry.expires <= nowS) throw new SignatureFailure('expired', `${entry.label} expired at ${entry.expires}`);
    const { base, covered } = buildSignatureBase(entry.input, request.view);
    if (!verifyBase(key.alg, key.key, Buffer.from(base), entry.signature)) {
      throw new SignatureFailure('bad_signature', `${entry.label} does not verify with ${key.kid}: the request differs from what was signed`);
    }
    if (hasBody || names.has('content-digest')) checkContentDigest(request.view.headers['content-digest'], request.body ?? Buffer.alloc(0));
    // Remember it for as long as it could still be accepted: until the window or expiry closes.
    const until = Math.min(entry.created + this.skewSeconds, entry.expires ?? Infinity) * 1000 + 1000;
    const markers = this.replay.claim({ signature: entry.signature, signer: key.signer, nonce: entry.nonce }, until, now);
    if (!markers) throw new SignatureFailure('replay', `${entry.label} was already used (same signature or nonce)`);
    return { covered, claimed: { markers, until } };
  }
}

/**
 * Whether some signature of the request covers `content-digest`, so that verifying it needs the
 * body in hand: a caller that streams bodies reads one only then. Labels are not filtered by
 * keyid (that needs the caller's keys); fields that do not parse answer false, and verification
 * then reports them `malformed` without needing the body.
 */
export function coversContentDigest(headers: RequestView['headers']): boolean {
  const input = headers['signature-input'];
  if (input === undefined) return false;
  try {
    return parseSignatureFields(input, headers['signature']).some((entry) => entry.components.some(([name]) => name === 'content-digest'));
  } catch (error) {
    if (error instanceof SignatureFailure) return false;
    throw error;
  }
}

function failed(entry: SignatureEntry | null, key: VerificationKey | null, failure: SignatureFailure, labels: LabelReport[]): SignatureOutcome {
  return {
    outcome: 'failed',
    label: entry?.label ?? null,
    keyId: key?.kid ?? entry?.keyid ?? null,
    alg: key?.alg ?? entry?.alg ?? null,
    check: failure.check,
    detail: failure.message,
    labels,
  };
}
