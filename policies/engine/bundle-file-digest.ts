/**
 * The digest OPA signs for each file of a bundle (bundle/hash.go, bundle/verify.go), so that a
 * bundle signed by `opa sign` or `opa build --signing-key` verifies here.
 *
 * Files are hashed as their bytes, except the structured ones (`data.json`, `data.yaml`,
 * `.manifest`): those are parsed and hashed in a canonical form, so that whitespace and key order
 * do not change the signature. The form is Go's JSON encoding without HTML escaping, object keys
 * in byte order with no spaces, and numbers exactly as written in the file (OPA decodes them as
 * `json.Number`): `{"b": [1.0], "a": 2}` is hashed as `{"a":2,"b":[1.0]}`. That is why numbers
 * are read with lossless-json, which keeps their text.
 */
import { createHash, type Hash } from 'node:crypto';
import { isLosslessNumber, parse } from 'lossless-json';
import { yamlUnmarshal } from './builtins/go-yaml-decode.ts';

/** OPA's names of the hashing algorithms it accepts, and Node's. */
const ALGORITHMS: Readonly<Record<string, string>> = {
  'SHA-224': 'sha224',
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
  'SHA-512-224': 'sha512-224',
  'SHA-512-256': 'sha512-256',
};

/**
 * OPA also accepts these; they are refused here because a broken hash lets a signed list of
 * digests vouch for a file the signer never saw. `opa sign` writes SHA-256 only.
 */
const WEAK_ALGORITHMS: ReadonlySet<string> = new Set(['MD5', 'SHA-1']);

/** The files OPA hashes in canonical form (bundle.IsStructuredDoc): by base name; `data.yml` is not one. */
const STRUCTURED = new Set(['data.json', 'data.yaml', '.manifest']);

/** Why `algorithm` cannot be used, or undefined when it can. */
export function refusedAlgorithm(algorithm: string | undefined): string | undefined {
  if (!algorithm) return 'no hashing algorithm given';
  if (WEAK_ALGORITHMS.has(algorithm)) return `weak hashing algorithm ${algorithm} refused (use SHA-256)`;
  if (!(algorithm in ALGORITHMS)) return `unsupported hashing algorithm '${algorithm}'`;
  return undefined;
}

/** Go's encoding of a string (encoding/json, HTML escaping off). */
function goString(text: string): string {
  // Go decodes an unpaired surrogate escape as U+FFFD, and escapes U+2028 and U+2029 where
  // JSON.stringify leaves them; everything else JSON.stringify writes as Go does.
  return JSON.stringify(text.replace(/\p{Cs}/gu, '\uFFFD')).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

const byUtf8 = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

function hashValue(value: unknown, hash: Hash): void {
  if (isLosslessNumber(value)) {
    hash.update(value.value);
  } else if (typeof value === 'string') {
    hash.update(goString(value));
  } else if (Array.isArray(value)) {
    hash.update('[');
    value.forEach((element, i) => {
      if (i > 0) hash.update(',');
      hashValue(element, hash);
    });
    hash.update(']');
  } else if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    hash.update('{');
    Object.keys(object)
      .sort(byUtf8)
      .forEach((key, i) => {
        if (i > 0) hash.update(',');
        hash.update(`${goString(key)}:`);
        hashValue(object[key], hash);
      });
    hash.update('}');
  } else {
    hash.update(String(value));
  }
}

/** A structured file's document as JSON text: `data.yaml` as OPA turns YAML into JSON. */
function structuredJson(path: string, content: Buffer): string {
  const text = content.toString('utf8');
  if (!path.endsWith('.yaml')) return text;
  const json = yamlUnmarshal(text);
  if (json === undefined) throw new Error(`/${path} is not valid YAML`);
  return json;
}

/**
 * The hex digest OPA computes for the bundle member at `path` (without a leading `/`) with
 * `algorithm` (one `refusedAlgorithm` accepts). Throws when a structured file does not parse.
 */
export function bundleFileDigest(path: string, content: Buffer, algorithm: string): string {
  const hash = createHash(ALGORITHMS[algorithm]!);
  const base = path.slice(path.lastIndexOf('/') + 1);
  if (!STRUCTURED.has(base)) return hash.update(content).digest('hex');
  let doc: unknown;
  try {
    doc = parse(structuredJson(path, content));
  } catch (err) {
    throw new Error(`/${path} cannot be hashed: not valid JSON (${(err as Error).message})`);
  }
  hashValue(doc, hash);
  return hash.digest('hex');
}
