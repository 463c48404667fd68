import { confirmAcrossCluster, judgeCallerSignature } from '../../core/signatures/caller-signature.ts';
import type { RequestView } from '../../core/signatures/signature-base.ts';
import type { RequestContext } from '../context.ts';
import { sessionSigning } from './session-auth.ts';

/**
 * Stage 2: RFC 9421 message signatures, before rate limiting and the policy, judged by
 * core/signatures/caller-signature.ts (the gateway judges its requests the same way). The rules
 * of this listener: a key registering its first signing key may do so unsigned, and a request on
 * a console session that signs with its page's key is judged against that key alone
 * (proxy/stages/session-auth.ts). What the policy sees is set on `ctx.signature`; what the audit
 * entry records, on `ctx.signatureSummary`.
 */
export async function verifySignature(ctx: RequestContext): Promise<void> {
  const principal = ctx.principal;
  // Public routes have no caller to sign; an oversized body is refused whole by validation.
  if (!principal || ctx.bodyTooLarge) return;
  const { signatures } = ctx.services;
  const bootstrap = ctx.route?.signatureBootstrap === true && ctx.params.id === principal.keyId;
  const judged = await confirmAcrossCluster(signatures, judgeCallerSignature(signatures, principal, { view: requestView(ctx), body: ctx.rawBody }, bootstrap, sessionSigning(ctx)));
  ctx.signature = judged.facts;
  ctx.signatureSummary = judged.summary;
  if (judged.refusal) throw judged.refusal;
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
