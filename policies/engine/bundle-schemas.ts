/**
 * The shapes of the JSON an OPA bundle carries (`/.manifest`, `/.signatures.json` and the JWT
 * inside it) and of the verification keys file, as OPA's Go structs decode them
 * (bundle/bundle.go): members this engine does not use may be anything, the ones it uses must
 * have the types OPA gives them.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export const ManifestDoc = Type.Object({
  revision: Type.Optional(Type.String()),
  /** Absent: the bundle owns all of `data` (OPA's `[""]`). */
  roots: Type.Optional(Type.Array(Type.String())),
  /** Which Wasm module of the bundle answers which entrypoint. */
  wasm: Type.Optional(Type.Array(Type.Object({ entrypoint: Type.Optional(Type.String()), module: Type.Optional(Type.String()) }))),
});
export type ManifestDoc = Static<typeof ManifestDoc>;

export const SignaturesDoc = Type.Object({
  signatures: Type.Optional(Type.Array(Type.String())),
  /** A custom verifier registered in OPA; none exists here. */
  plugin: Type.Optional(Type.String()),
});

/** The payload of the JWT in `/.signatures.json`; `keyid` is the deprecated claim naming the key. */
export const SignaturePayload = Type.Object({
  files: Type.Array(Type.Object({ name: Type.String(), hash: Type.String(), algorithm: Type.Optional(Type.String()) })),
  keyid: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
});
export type SignaturePayload = Static<typeof SignaturePayload>;

/** The keys file: key id → JWK (public keys, or the shared secret of an `oct` key). */
export const VerificationKeysDoc = Type.Record(
  Type.String({ minLength: 1 }),
  Type.Object({ kty: Type.Union([Type.Literal('RSA'), Type.Literal('EC'), Type.Literal('OKP'), Type.Literal('oct')]), alg: Type.Optional(Type.String()) }),
);

/** A JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The document of JSON `text` (`where` names it in errors) when it has the shape of `schema`;
 * otherwise throws `fail(reason)`, the reason naming the first error at its JSON pointer.
 */
export function parseShaped<S extends TSchema>(text: string, schema: S, where: string, fail: (reason: string) => Error): Static<S> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw fail(`${where} is not valid JSON (${(err as Error).message})`);
  }
  if (Value.Check(schema, doc)) return doc;
  const first = [...Value.Errors(schema, doc)][0];
  throw fail(`${where}: ${first ? `${first.path || '/'}: ${first.message}` : 'not the expected shape'}`);
}
