/**
 * Why a request signature was refused. Each check has a stable name so a client (and the audit
 * log) can tell a stale clock from a tampered body without reading prose.
 */
export const SIGNATURE_CHECKS = [
  'malformed',
  'unknown_key',
  'missing_component',
  'created',
  'expired',
  'bad_signature',
  'digest',
  'replay',
] as const;
export type SignatureCheck = (typeof SIGNATURE_CHECKS)[number];

export class SignatureFailure extends Error {
  constructor(
    readonly check: SignatureCheck,
    detail: string,
  ) {
    super(detail);
    this.name = 'SignatureFailure';
  }
}
