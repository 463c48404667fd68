import { parseDictionary, type InnerList, type Item, type Parameters } from 'structured-headers';
import { SignatureFailure } from './failure.ts';

/**
 * The `Signature-Input` and `Signature` fields (RFC 9421 §4), parsed as RFC 8941 dictionaries
 * with the `structured-headers` package. Each label pairs an inner list of covered components
 * (with its signature parameters) with the signature bytes.
 */
export interface SignatureEntry {
  label: string;
  /** The covered components as sent: their names and parameters, in order. */
  components: Item[];
  /** The Signature-Input member as parsed, re-serialised for the `@signature-params` line. */
  input: InnerList;
  signature: Buffer;
  created: number | null;
  expires: number | null;
  nonce: string | null;
  alg: string | null;
  keyid: string | null;
}

function dictionary(name: string, value: string) {
  try {
    return parseDictionary(value);
  } catch (error) {
    throw new SignatureFailure('malformed', `${name} is not a structured dictionary: ${(error as Error).message}`);
  }
}

function integerParam(params: Parameters, name: string, label: string): number | null {
  const value = params.get(name);
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new SignatureFailure('malformed', `${label}: ${name} must be an integer`);
  return value;
}

// keyid and nonce become parts of LMDB keys (signing-key lookups, replay markers), which are
// bounded in size; no legitimate value comes near this.
const MAX_STRING_PARAM = 256;

function stringParam(params: Parameters, name: string, label: string): string | null {
  const value = params.get(name);
  if (value === undefined) return null;
  if (typeof value !== 'string') throw new SignatureFailure('malformed', `${label}: ${name} must be a string`);
  if (value.length > MAX_STRING_PARAM) throw new SignatureFailure('malformed', `${label}: ${name} is longer than ${MAX_STRING_PARAM} characters`);
  return value;
}

/** Every signature in the request, by label, in the order Signature-Input lists them. */
export function parseSignatureFields(signatureInput: string, signature: string | undefined): SignatureEntry[] {
  if (signature === undefined) throw new SignatureFailure('malformed', 'Signature-Input without a Signature field');
  const inputs = dictionary('Signature-Input', signatureInput);
  const values = dictionary('Signature', signature);
  const entries: SignatureEntry[] = [];
  for (const [label, member] of inputs) {
    if (!Array.isArray(member[0])) throw new SignatureFailure('malformed', `Signature-Input ${label} is not an inner list`);
    const input = member as InnerList;
    const value = values.get(label);
    if (!value || !(value[0] instanceof ArrayBuffer)) throw new SignatureFailure('malformed', `Signature ${label} is missing or not a byte sequence`);
    for (const [component] of input[0]) {
      if (typeof component !== 'string') throw new SignatureFailure('malformed', `Signature-Input ${label}: component names must be strings`);
    }
    const params = input[1];
    entries.push({
      label,
      components: input[0],
      input,
      signature: Buffer.from(value[0]),
      created: integerParam(params, 'created', label),
      expires: integerParam(params, 'expires', label),
      nonce: stringParam(params, 'nonce', label),
      alg: stringParam(params, 'alg', label),
      keyid: stringParam(params, 'keyid', label),
    });
  }
  if (entries.length === 0) throw new SignatureFailure('malformed', 'Signature-Input names no signature');
  return entries;
}
