import type { SignatureSummary } from '../audit-log.ts';
import type { PolicyCheck } from '../decision-workflow.ts';
import { GatehouseError } from '../errors.ts';
import { UNSIGNED, type SignatureFacts } from '../policy-input.ts';
import type { Principal } from '../principal.ts';
import type { SigningKeyRegistry } from '../signing-keys.ts';
import type { ClaimedMarkers } from './replay-guard.ts';
import type { KeyLookup, RequestSignatureVerifier, SignedRequest, VerificationKey } from './request-verifier.ts';
import { serverRequiresSignature, type SignatureMode } from './requirement.ts';

/**
 * What an authenticated caller's RFC 9421 signature means for a request, the same on every
 * listener: the /v1 pipeline (proxy/stages/verify-signature.ts) and the proxy gateway. A signature
 * that is sent is verified against the caller's signing keys whatever the settings; one that
 * fails is refused 401 `signature_invalid` with the failed `check`. An unsigned request is refused
 * 401 `signature_required` when the server setting requires this caller to sign, unless it may
 * bootstrap (a key registering its first signing key). A request on a console session that signs
 * with its own key is judged against that key instead (`SessionSigning`). Refused or not, the
 * outcome comes back as what policies see (`facts`) and what the audit entry records (`summary`).
 */
export interface CallerSignatureServices {
  verifier: RequestSignatureVerifier;
  signingKeys: SigningKeyRegistry;
  mode: SignatureMode;
}

/**
 * A request authenticated by a console session that signs with its own key
 * (core/session-signing-keys.ts): that key alone verifies the request's signatures, and the
 * request must be signed whatever the server setting, unless `unsignedAllowed` (what a browser
 * cannot sign, or what only gives the session up).
 */
export interface SessionSigning {
  key: VerificationKey;
  unsignedAllowed: boolean;
}

export interface CallerSignature {
  facts: SignatureFacts;
  summary: SignatureSummary;
  /** Why the request is refused, or null. */
  refusal: GatehouseError | null;
  /** The replay markers a verified signature claimed on this instance (see `confirmAcrossCluster`). */
  claimed: ClaimedMarkers | null;
}

// A module function rather than a closure per call: the TypeScript loader (tsx) names every
// named closure it creates with a defineProperty call, several µs on a cold request path.
function judged(
  summary: Partial<Omit<SignatureSummary, 'session'>> & Pick<SignatureSummary, 'outcome'> & { session?: boolean },
  refusal: GatehouseError | null = null,
  facts = UNSIGNED,
  claimed: ClaimedMarkers | null = null,
): CallerSignature {
  const recorded: SignatureSummary = { alg: summary.alg ?? null, failure: summary.failure ?? null, keyId: summary.keyId ?? null, label: summary.label ?? null, outcome: summary.outcome };
  if (summary.session) recorded.session = true;
  return { facts, summary: recorded, refusal, claimed };
}

function ownKeys(signingKeys: SigningKeyRegistry, owner: string): KeyLookup {
  return (keyid) => {
    const found = signingKeys.active(owner, keyid);
    return found && { kid: keyid, alg: found.record.alg, key: found.key, signer: `${owner}/${keyid}` };
  };
}

function sessionKey(session: SessionSigning): KeyLookup {
  return (keyid) => (keyid === session.key.kid ? session.key : undefined);
}

export function judgeCallerSignature(
  services: CallerSignatureServices,
  principal: Principal,
  request: SignedRequest,
  /** The request registers the caller's own signing key: unsigned is allowed while it has none. */
  mayBootstrap = false,
  /** The console session that authenticated the request signs with its own key. */
  session: SessionSigning | null = null,
): CallerSignature {
  const { signingKeys } = services;
  const outcome = services.verifier.verify(request, session ? sessionKey(session) : ownKeys(signingKeys, principal.keyId));
  const bySession = session !== null && outcome.outcome !== 'unsigned' && outcome.keyId === session.key.kid;
  switch (outcome.outcome) {
    case 'verified':
      return judged(
        { outcome: 'verified', label: outcome.label, keyId: outcome.keyId, alg: outcome.alg, session: bySession },
        null,
        { alg: outcome.alg, covered: outcome.covered, keyId: outcome.keyId, label: outcome.label, verified: true },
        outcome.claimed,
      );
    case 'failed':
      return judged(
        { outcome: 'failed', label: outcome.label, keyId: outcome.keyId, alg: outcome.alg, failure: outcome.check, session: bySession },
        new GatehouseError('signature_invalid', outcome.detail, { check: outcome.check, label: outcome.label, signatures: outcome.labels }),
      );
    case 'unsigned': {
      if (session) {
        return session.unsignedAllowed
          ? judged({ outcome: 'unsigned' })
          : judged(
              { outcome: 'unsigned' },
              new GatehouseError('signature_required', 'this session signs every request with the key its page registered at sign-in (RFC 9421): sign in again if that page was closed or reloaded', {
                keyId: principal.keyId,
              }),
            );
      }
      if (!serverRequiresSignature(services.mode, principal)) return judged({ outcome: 'unsigned' });
      const firstKey = !signingKeys.hasActive(principal.keyId);
      if (firstKey && mayBootstrap) return judged({ outcome: 'bootstrap' });
      const how = firstKey
        ? `; it has no signing key yet: register one with POST /v1/keys/${principal.keyId}/signing-keys (allowed unsigned until then)`
        : '';
      return judged(
        { outcome: 'unsigned' },
        new GatehouseError('signature_required', `requests made with ${principal.env} API keys must be signed (RFC 9421)${how}`, { keyId: principal.keyId }),
      );
    }
  }
}

/**
 * In cluster mode, claims across the cluster the replay markers a verified signature claimed on
 * this instance (ReplayGuard.shared): a signature first used on another instance is refused here
 * as a replay, as it would be on that instance. A cluster that cannot answer refuses the request
 * with `not_ready` (fail closed): nothing shows the signature was not used elsewhere.
 */
export async function confirmAcrossCluster(services: CallerSignatureServices, signature: CallerSignature): Promise<CallerSignature> {
  const shared = services.verifier.replay.shared;
  if (!shared || !signature.claimed || signature.refusal) return signature;
  let fresh: boolean;
  try {
    fresh = await shared.claim(signature.claimed.markers, signature.claimed.until);
  } catch (error) {
    return { ...signature, refusal: new GatehouseError('not_ready', `the cluster could not confirm that the signature was not used on another instance (${(error as Error).message}); retry`) };
  }
  if (fresh) return signature;
  const { label, keyId, alg, session } = signature.summary;
  return judged(
    { outcome: 'failed', label, keyId, alg, failure: 'replay', session: session === true },
    new GatehouseError('signature_invalid', `${label} was already used on another instance (same signature or nonce)`, {
      check: 'replay',
      label,
      signatures: [{ label, keyId, result: 'replay' }],
    }),
  );
}

/**
 * A policy that answers `requireSignature` for an unsigned request is answered 401
 * `signature_required`, whatever else it said: the caller can fix that by signing. Null when the
 * policy did not ask or the request is signed; `details` add where the refusal happened.
 */
export function policySignatureRefusal(check: PolicyCheck, signature: SignatureFacts, details: Record<string, unknown> = {}): GatehouseError | null {
  if (!check.verdict.requireSignature || signature.verified) return null;
  return new GatehouseError('signature_required', `${check.policy} requires this request to be signed (RFC 9421)`, {
    policy: check.policy,
    reasons: check.verdict.reasons,
    ...details,
  });
}
