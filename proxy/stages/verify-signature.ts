import type { SignatureSummary } from '../../core/audit-log.ts';
import { GatehouseError } from '../../core/errors.ts';
import type { RequestView } from '../../core/signatures/signature-base.ts';
import { serverRequiresSignature } from '../../core/signatures/requirement.ts';
import type { RequestContext } from '../context.ts';

/**
 * Stage 2: RFC 9421 message signatures, before rate limiting and the policy. A signature that is
 * sent is verified against the caller's signing keys whatever the settings; one that fails is
 * 401 `signature_invalid` with the failed `check`. An unsigned request is 401
 * `signature_required` when the server setting requires this caller to sign (production keys,
 * by default), except a key registering its first signing key. What the policy sees is set on
 * `ctx.signature`; what the audit entry records, on `ctx.signatureSummary`.
 */
export function verifySignature(ctx: RequestContext): void {
  const principal = ctx.principal;
  // Public routes have no caller to sign; an oversized body is refused whole by validation.
  if (!principal || ctx.bodyTooLarge) return;
  const { signingKeys, signatures } = ctx.services;
  const outcome = signatures.verifier.verify({ view: requestView(ctx), body: ctx.rawBody }, (keyid) => {
    const found = signingKeys.active(principal.keyId, keyid);
    return found && { kid: keyid, alg: found.record.alg, key: found.key, signer: `${principal.keyId}/${keyid}` };
  });
  const summary = (fields: Partial<SignatureSummary> & Pick<SignatureSummary, 'outcome'>): SignatureSummary => ({
    label: null,
    keyId: null,
    alg: null,
    failure: null,
    ...fields,
  });
  switch (outcome.outcome) {
    case 'verified':
      ctx.signature = { verified: true, keyId: outcome.keyId, alg: outcome.alg, label: outcome.label, covered: outcome.covered };
      ctx.signatureSummary = summary({ outcome: 'verified', label: outcome.label, keyId: outcome.keyId, alg: outcome.alg });
      return;
    case 'failed':
      ctx.signatureSummary = summary({ outcome: 'failed', label: outcome.label, keyId: outcome.keyId, alg: outcome.alg, failure: outcome.check });
      throw new GatehouseError('signature_invalid', outcome.detail, {
        check: outcome.check,
        label: outcome.label,
        signatures: outcome.labels,
      });
    case 'unsigned': {
      if (!serverRequiresSignature(signatures.mode, principal)) {
        ctx.signatureSummary = summary({ outcome: 'unsigned' });
        return;
      }
      const firstKey = !signingKeys.hasActive(principal.keyId);
      if (firstKey && ctx.route?.signatureBootstrap && ctx.params.id === principal.keyId) {
        ctx.signatureSummary = summary({ outcome: 'bootstrap' });
        return;
      }
      ctx.signatureSummary = summary({ outcome: 'unsigned' });
      const how = firstKey
        ? `; it has no signing key yet: register one with POST /v1/keys/${principal.keyId}/signing-keys (allowed unsigned until then)`
        : '';
      throw new GatehouseError('signature_required', `requests made with ${principal.env} API keys must be signed (RFC 9421)${how}`, {
        keyId: principal.keyId,
      });
    }
  }
}

/**
 * The request as its signer saw it. The scheme and authority come from the configured public
 * URL when there is one (a proxy terminating TLS in front), otherwise `http` and the Host field.
 */
function requestView(ctx: RequestContext): RequestView {
  const publicUrl = ctx.services.signatures.publicUrl;
  return {
    method: ctx.method,
    scheme: publicUrl ? publicUrl.protocol.slice(0, -1) : 'http',
    authority: publicUrl ? publicUrl.host : (ctx.headers['host'] ?? '').toLowerCase(),
    path: ctx.path,
    query: ctx.rawQuery,
    headers: ctx.headers,
  };
}
