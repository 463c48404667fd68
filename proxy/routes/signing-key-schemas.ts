import { Type, type Static } from '@sinclair/typebox';
import { SIGNATURE_ALGORITHMS } from '../../core/signatures/algorithms.ts';

/** Request and response schemas of the signing-key routes (proxy/routes/signing-keys.ts). */

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

export const SignatureAlgorithmName = Type.Union(SIGNATURE_ALGORITHMS.map((a) => Type.Literal(a)));

export const RegisterSigningKeyBody = Type.Object(
  {
    jwk: Type.Object(
      {
        kty: Type.Union([Type.Literal('OKP'), Type.Literal('EC'), Type.Literal('RSA'), Type.Literal('oct')]),
        kid: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
      },
      {
        additionalProperties: true,
        maxProperties: 16,
        description:
          'A public JWK (Ed25519 OKP, P-256 EC or RSA ≥ 2048 bits), or `{"kty":"oct","k":…,"kid":…}` for hmac-sha256. Private members are refused. Without `kid`, the RFC 7638 thumbprint is the kid.',
      },
    ),
    alg: Type.Optional(SignatureAlgorithmName),
  },
  { additionalProperties: false },
);
export type RegisterSigningKeyBody = Static<typeof RegisterSigningKeyBody>;

export const SigningKey = Type.Object({
  owner: Type.String({ description: 'The API key this signing key belongs to.' }),
  kid: Type.String({ description: 'The RFC 9421 `keyid` signatures name.' }),
  alg: SignatureAlgorithmName,
  jwk: Type.Object({}, { additionalProperties: true, description: 'The public key (an HMAC secret is never shown).' }),
  thumbprint: Nullable(Type.String({ description: 'RFC 7638 SHA-256 thumbprint, base64url; null for an HMAC secret.' })),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  createdAt: Type.String({ format: 'date-time' }),
  createdBy: Type.String(),
  revokedAt: Nullable(Type.String({ format: 'date-time' })),
  revokedBy: Nullable(Type.String()),
});

export const SigningKeyList = Type.Object({ data: Type.Array(SigningKey) });
