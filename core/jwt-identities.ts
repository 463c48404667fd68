import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { GatehouseError } from './errors.ts';
import type { Principal } from './principal.ts';
import { SCOPES } from './scopes.ts';

/**
 * Service identities that present a JWT instead of an API key (`Authorization: Bearer <JWT>`).
 * Each configured issuer names the audience it must carry, where its keys are (a local JWKS file,
 * or a JWKS URL that `jose` fetches, caches and refetches when a token names a key it has not
 * seen: that is how the issuer's key rotation reaches us), which algorithms it may use, the
 * environment its identities act in, and which scopes they may hold.
 *
 * The principal's scopes are the token's scope claim intersected with the issuer's
 * `allowedScopes`, so an issuer cannot grant more than the operator allowed it.
 */
const JwksSource = Type.Union([
  Type.Object({ file: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  Type.Object(
    {
      url: Type.String({ pattern: '^https?://' }),
      /** Minimum seconds between refetches when a token names an unknown key (default 30). */
      cooldownSeconds: Type.Optional(Type.Number({ minimum: 0 })),
      /** Seconds a fetched key set is trusted before it is fetched again (default 600). */
      cacheSeconds: Type.Optional(Type.Number({ minimum: 0 })),
    },
    { additionalProperties: false },
  ),
]);

export const JwtIssuerConfig = Type.Object(
  {
    issuer: Type.String({ minLength: 1 }),
    audience: Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })]),
    jwks: JwksSource,
    algorithms: Type.Array(Type.String({ pattern: '^(RS|PS|ES)(256|384|512)$|^EdDSA$|^Ed25519$' }), { minItems: 1 }),
    env: Type.Union([Type.Literal('sandbox'), Type.Literal('production')]),
    /** The claim holding scopes: a space-separated string or an array (default `scope`). */
    scopesClaim: Type.Optional(Type.String({ minLength: 1 })),
    allowedScopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s)))),
    /** A claim holding an array of role names, if the issuer sends roles. */
    rolesClaim: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export type JwtIssuerConfig = Static<typeof JwtIssuerConfig>;

export const JwtIssuersFile = Type.Object({ issuers: Type.Array(JwtIssuerConfig, { minItems: 1 }) }, { additionalProperties: false });
export type JwtIssuersFile = Static<typeof JwtIssuersFile>;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Three dot-separated base64url segments: a compact JWS, never an API key. */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

interface Issuer {
  config: JwtIssuerConfig;
  keys: JWTVerifyGetKey;
}

export class JwtIdentities {
  private readonly issuers = new Map<string, Issuer>();

  /** `configs` are validated; local JWKS paths are relative to `baseDir`. Throws on a bad config. */
  constructor(configs: JwtIssuerConfig[], baseDir = process.cwd()) {
    for (const config of configs) {
      if (this.issuers.has(config.issuer)) throw new Error(`issuer ${config.issuer} is configured twice`);
      const source = config.jwks;
      const keys =
        'file' in source
          ? createLocalJWKSet(JSON.parse(readFileSync(resolve(baseDir, source.file), 'utf8')) as JSONWebKeySet)
          : createRemoteJWKSet(new URL(source.url), {
              cooldownDuration: (source.cooldownSeconds ?? 30) * 1000,
              cacheMaxAge: (source.cacheSeconds ?? 600) * 1000,
            });
      this.issuers.set(config.issuer, { config, keys });
    }
  }

  /** Reads and validates the issuers file named by GATEHOUSE_JWT_ISSUERS. */
  static fromFile(path: string): JwtIdentities {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (!Value.Check(JwtIssuersFile, parsed)) {
      const first = [...Value.Errors(JwtIssuersFile, parsed)][0];
      throw new Error(`${path}: ${first ? `${first.path || '/'}: ${first.message}` : 'invalid'}`);
    }
    return new JwtIdentities(parsed.issuers, dirname(path));
  }

  /** The principal a token identifies; 401 `unauthenticated` when it does not verify. */
  async verify(token: string): Promise<Principal> {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw new GatehouseError('unauthenticated', 'the bearer token is not a valid JWT');
    }
    const issuer = typeof iss === 'string' ? this.issuers.get(iss) : undefined;
    if (!issuer) throw new GatehouseError('unauthenticated', 'the JWT is not from a configured issuer');
    const { config } = issuer;
    let payload;
    try {
      ({ payload } = await jwtVerify(token, issuer.keys, { issuer: config.issuer, audience: config.audience, algorithms: config.algorithms }));
    } catch (error) {
      throw new GatehouseError('unauthenticated', `the JWT was refused: ${reason(error)}`);
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new GatehouseError('unauthenticated', 'the JWT has no sub claim');
    const granted = claimList(payload[config.scopesClaim ?? 'scope']);
    const roles = config.rolesClaim ? claimList(payload[config.rolesClaim]) : [];
    return {
      claims: payload as Record<string, unknown>,
      env: config.env,
      keyId: `jwt:${config.issuer}#${payload.sub}`,
      roles,
      scopes: config.allowedScopes.filter((scope) => granted.includes(scope)),
    };
  }
}

function claimList(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter(Boolean);
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** What went wrong, in words that name the check but never echo the token. */
function reason(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'it has expired (exp)';
  if (error instanceof errors.JWTClaimValidationFailed) return `claim ${error.claim} failed its check (${error.reason})`;
  if (error instanceof errors.JOSEAlgNotAllowed) return 'its algorithm is not allowed for this issuer';
  if (error instanceof errors.JWKSNoMatchingKey) return "no key in the issuer's key set matches it";
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JOSEError) return error.message;
  return 'it could not be verified';
}
