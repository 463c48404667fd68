import type { JsonWebKey } from 'node:crypto';
import { GatehouseError } from './errors.ts';
import { keyObject, type SigningKeyRegistry } from './signing-keys.ts';
import type { VerificationKey } from './signatures/request-verifier.ts';

/**
 * A console session's own signing key (docs/console.md, "Keys that must sign"). A key that must
 * sign its requests cannot hand its private signing key to a browser page, so the page makes a
 * key pair of its own (WebCrypto, private half not extractable) and registers the public half
 * when it redeems a sign-in code. The code was issued to a request signed by one of the API key's
 * own signing keys (`authorisedBy`), so that signer vouches for the page's key. The session key
 * lives and ends with its session: requests on the session are verified against it alone.
 */
export interface SessionSigningKey {
  /** The RFC 9421 `keyid` the page signs with: the key's RFC 7638 thumbprint. */
  kid: string;
  alg: 'ed25519' | 'ecdsa-p256-sha256';
  /** Public members only. */
  jwk: JsonWebKey;
  /** The kid of the API key's signing key whose signed request issued the sign-in code. */
  authorisedBy: string;
}

/** No API key has this id (theirs start `key_`): the registry's checks run against it, and nothing is stored under it. */
const NO_OWNER = 'session';

const SESSION_KEY_TYPES = new Set(['OKP', 'EC']);

/**
 * Validates the page's public JWK the way a registered signing key is validated (no private
 * members, an Ed25519 or P-256 point `jose` can import) and returns it as a session key. The
 * page's own `kid`, if any, is dropped: the thumbprint names the key.
 */
export async function sessionSigningKey(registry: SigningKeyRegistry, jwk: Record<string, unknown>, authorisedBy: string): Promise<SessionSigningKey> {
  if (!SESSION_KEY_TYPES.has(jwk.kty as string)) {
    throw new GatehouseError('invalid_request', 'a session key is an Ed25519 (OKP) or P-256 (EC) public key');
  }
  const { kid: _kid, ...members } = jwk;
  const checked = await registry.prepare(NO_OWNER, { jwk: members }, authorisedBy);
  return { kid: checked.kid, alg: checked.alg as SessionSigningKey['alg'], jwk: checked.jwk, authorisedBy };
}

/**
 * Refuses (401) a session whose authorising signing key has been revoked since: revoking a
 * signing key ends the browser sessions it let in, as revoking the API key does.
 */
export function assertStillAuthorised(registry: SigningKeyRegistry, owner: string, key: SessionSigningKey): void {
  if (!registry.active(owner, key.authorisedBy)) {
    throw new GatehouseError('unauthenticated', `signing key ${key.authorisedBy}, which authorised this session, is no longer active: sign in again`);
  }
}

/** What the request verifier checks a session's signatures with; nonces are scoped to the session key. */
export function sessionVerificationKey(owner: string, key: SessionSigningKey): VerificationKey {
  return { kid: key.kid, alg: key.alg, key: keyObject(key), signer: `${owner}/session/${key.kid}` };
}
