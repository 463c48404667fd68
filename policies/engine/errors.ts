/** The name does not match any loaded policy (the API answers 422 `unknown_policy`). */
export class UnknownPolicyError extends Error {
  override readonly name = 'UnknownPolicyError';
  readonly policy: string;

  constructor(policy: string) {
    super(`unknown policy '${policy}'`);
    this.policy = policy;
  }
}

/** A bundle archive that is not an `opa build -t wasm` bundle. */
export class BundleFormatError extends Error {
  override readonly name = 'BundleFormatError';
}

/**
 * A bundle whose signature is missing, does not verify, or does not vouch for exactly its files
 * (policies/engine/bundle-signature.ts).
 */
export class BundleSignatureError extends Error {
  override readonly name = 'BundleSignatureError';

  constructor(reason: string) {
    super(`signature check failed: ${reason}`);
  }
}
