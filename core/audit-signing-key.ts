import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { calculateJwkThumbprint } from 'jose';

/**
 * The Ed25519 key that signs the audit log's checkpoints (core/audit-checkpoints.ts). The private
 * key is a PKCS#8 PEM file, `audit-signing-key.pem` in the data directory unless configured
 * elsewhere (`--audit-key`, GATEHOUSE_AUDIT_KEY); the server creates it with mode 0600 on its
 * first start. A key is named by its RFC 7638 thumbprint, which every checkpoint carries, so a
 * verifier holding only the public JWK knows which checkpoints it can check.
 *
 * Kept beside the data, the key proves nothing against whoever can write the data directory:
 * docs/security.md ("Audit log integrity") says what it does prove and where to keep it instead.
 */
export const AUDIT_KEY_FILE = 'audit-signing-key.pem';

/** A public key checkpoints are checked against. */
export interface AuditVerifyingKey {
  /** RFC 7638 thumbprint (SHA-256, base64url) of the public key. */
  keyId: string;
  /** The public key as a JWK, `kid` set to `keyId`. */
  jwk: JsonWebKey;
  verify(payload: string, signature: string): boolean;
}

export interface AuditSigningKey extends AuditVerifyingKey {
  /** The file the private key was read from. */
  path: string;
  /** An Ed25519 signature over `payload`, base64url. */
  sign(payload: string): string;
}

/** A key file or JWK that cannot be used, with a message fit for an operator. */
export class AuditKeyError extends Error {}

/** Where the signing key is: the configured path, or the data directory's default. */
export function auditKeyPath(dataDir: string, configured: string | undefined): string {
  return configured || join(dataDir, AUDIT_KEY_FILE);
}

/**
 * The signing key at `path`, created (mode 0600) when there is none. Creation writes a private
 * temporary file and links it into place, so two processes starting at once end up with one key
 * and neither reads a half-written file.
 */
export async function openAuditSigningKey(path: string): Promise<{ key: AuditSigningKey; generated: boolean }> {
  const existing = await readAuditSigningKey(path);
  if (existing) return { key: existing, generated: false };
  mkdirSync(dirname(path), { recursive: true });
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, pem, { mode: 0o600, flag: 'wx' });
  let generated = true;
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    generated = false;
  } finally {
    unlinkSync(temporary);
  }
  const key = await readAuditSigningKey(path);
  if (!key) throw new AuditKeyError(`the audit signing key ${path} vanished while it was being created`);
  return { key, generated };
}

/** The signing key at `path`, or null when there is no such file (nothing is created). */
export async function readAuditSigningKey(path: string): Promise<AuditSigningKey | null> {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new AuditKeyError(`cannot read the audit signing key ${path}: ${(error as Error).message}`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (error) {
    throw new AuditKeyError(`the audit signing key ${path} is not a PEM private key: ${(error as Error).message}`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new AuditKeyError(`the audit signing key ${path} is ${privateKey.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519`);
  }
  const verifying = await auditVerifyingKey(createPublicKey(privateKey).export({ format: 'jwk' }));
  return { ...verifying, path, sign: (payload) => sign(null, Buffer.from(payload), privateKey).toString('base64url') };
}

/** A verifying key from a public Ed25519 JWK (an `OKP` key on `Ed25519`, without `d`). */
export async function auditVerifyingKey(jwk: unknown): Promise<AuditVerifyingKey> {
  const given = (typeof jwk === 'object' && jwk !== null ? jwk : {}) as Record<string, unknown>;
  if (given.kty !== 'OKP' || given.crv !== 'Ed25519' || typeof given.x !== 'string') {
    throw new AuditKeyError('the public key must be an Ed25519 JWK: {"kty":"OKP","crv":"Ed25519","x":…}');
  }
  if ('d' in given) throw new AuditKeyError('the JWK holds the private key (d): give the public key only');
  const members = { kty: 'OKP', crv: 'Ed25519', x: given.x };
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: members, format: 'jwk' });
  } catch (error) {
    throw new AuditKeyError(`the public key is not a valid Ed25519 key: ${(error as Error).message}`);
  }
  const keyId = await calculateJwkThumbprint(members, 'sha256');
  return {
    keyId,
    jwk: { ...members, kid: keyId },
    verify: (payload, signature) => {
      try {
        return verify(null, Buffer.from(payload), publicKey, Buffer.from(signature, 'base64url'));
      } catch {
        return false; // a signature of the wrong length, say: it does not hold
      }
    },
  };
}
