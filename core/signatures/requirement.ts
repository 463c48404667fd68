import type { Principal } from '../principal.ts';

/**
 * Which callers the server itself requires to sign (the `--signatures` setting). Policies can
 * ask for signatures on top of this with `requireSignature`.
 *
 * - `production` (default): every request made with a production API key.
 * - `all`: every request made with an API key.
 * - `off`: none; signatures that are sent are still verified, and policies still decide.
 *
 * JWT identities are not API keys: their issuer signed the token, and they have no signing keys
 * registered here, so the setting does not apply to them.
 */
export const SIGNATURE_MODES = ['production', 'all', 'off'] as const;
export type SignatureMode = (typeof SIGNATURE_MODES)[number];

export function isSignatureMode(value: unknown): value is SignatureMode {
  return typeof value === 'string' && (SIGNATURE_MODES as readonly string[]).includes(value);
}

export function serverRequiresSignature(mode: SignatureMode, principal: Principal): boolean {
  if (principal.claims !== undefined) return false;
  return mode === 'all' || (mode === 'production' && principal.env === 'production');
}
