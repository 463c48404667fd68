import {
  parseDictionary,
  parseItem,
  parseList,
  serializeDictionary,
  serializeInnerList,
  serializeItem,
  serializeList,
  serializeParameters,
  type InnerList,
  type Item,
} from 'structured-headers';
import { SignatureFailure } from './failure.ts';

/**
 * The RFC 9421 signature base (§2.5): one line per covered component, `"<identifier>": <value>`,
 * then the `"@signature-params"` line holding the serialised Signature-Input member. The signer
 * and the verifier build it from the same request view, so the same code serves both.
 */
export interface RequestView {
  method: string;
  /** `http` or `https`, lower case. */
  scheme: string;
  /** host[:port], lower case, without a default port. */
  authority: string;
  /** The path as sent on the wire (not decoded), without the query. */
  path: string;
  /** The query as sent, without `?`; empty when there is none. */
  query: string;
  /** Lower-case names; repeated field lines already combined with `, ` (RFC 9110 §5.3). */
  headers: Readonly<Record<string, string | undefined>>;
}

export interface SignatureBase {
  base: string;
  /** The covered components, as policies see them: `@method`, `content-digest`, `@query-param;name="Pet"`. */
  covered: string[];
}

/** Fields whose structured type is known, for the `sf` and `key` parameters (RFC 9421 §2.1.1). */
const STRUCTURED_TYPES: Record<string, 'dictionary' | 'list' | 'item'> = {
  'content-digest': 'dictionary',
  'repr-digest': 'dictionary',
  'want-content-digest': 'dictionary',
  'want-repr-digest': 'dictionary',
  signature: 'dictionary',
  'signature-input': 'dictionary',
  'accept-signature': 'dictionary',
  priority: 'dictionary',
  'cache-status': 'list',
  'proxy-status': 'list',
};

/** The target URI (RFC 9421 §2.2.2) of a request view. */
function targetUri(view: RequestView): string {
  return `${view.scheme}://${view.authority}${requestTarget(view)}`;
}

function requestTarget(view: RequestView): string {
  return view.query ? `${view.path}?${view.query}` : view.path;
}

// The application/x-www-form-urlencoded percent-encode set (URL standard): everything but
// alphanumerics and *-._ is encoded, space as %20 (RFC 9421 §2.2.8).
function formEncode(text: string): string {
  return Array.from(Buffer.from(text, 'utf8'))
    .map((byte) => (/[A-Za-z0-9*\-._]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

function derived(name: string, params: Map<string, unknown>, view: RequestView): string[] {
  const allowed = name === '@query-param' ? ['name'] : [];
  for (const key of params.keys()) {
    if (!allowed.includes(key)) throw new SignatureFailure('malformed', `${name} does not take the ${key} parameter on a request`);
  }
  switch (name) {
    case '@method':
      return [view.method];
    case '@target-uri':
      return [targetUri(view)];
    case '@authority':
      return [view.authority];
    case '@scheme':
      return [view.scheme];
    case '@request-target':
      return [requestTarget(view)];
    case '@path':
      return [view.path || '/'];
    case '@query':
      return [`?${view.query}`];
    case '@query-param': {
      const wanted = params.get('name');
      if (typeof wanted !== 'string') throw new SignatureFailure('malformed', '@query-param needs a string name parameter');
      const values = new URLSearchParams(view.query).getAll(wanted).map(formEncode);
      if (values.length === 0) throw new SignatureFailure('missing_component', `the query has no parameter ${wanted}`);
      return values;
    }
    default:
      throw new SignatureFailure('malformed', `${name} is not a derived component of a request`);
  }
}

function reserialise(name: string, value: string, key: string | undefined): string {
  const type = STRUCTURED_TYPES[name];
  if (!type) throw new SignatureFailure('malformed', `${name} is not a known structured field, so it cannot be covered with sf or key`);
  try {
    if (key !== undefined) {
      if (type !== 'dictionary') throw new SignatureFailure('malformed', `${name} is not a dictionary; key does not apply`);
      const member = parseDictionary(value).get(key);
      if (member === undefined) throw new SignatureFailure('missing_component', `${name} has no member ${key}`);
      return Array.isArray(member[0]) ? serializeInnerList(member as InnerList) : serializeItem(member as Item);
    }
    if (type === 'dictionary') return serializeDictionary(parseDictionary(value));
    if (type === 'list') return serializeList(parseList(value));
    return serializeItem(parseItem(value));
  } catch (error) {
    if (error instanceof SignatureFailure) throw error;
    throw new SignatureFailure('malformed', `${name} does not parse as a structured ${type}: ${(error as Error).message}`);
  }
}

function field(name: string, params: Map<string, unknown>, view: RequestView): string[] {
  for (const key of params.keys()) {
    if (key !== 'sf' && key !== 'key' && key !== 'bs') {
      throw new SignatureFailure('malformed', `the ${key} parameter on ${name} is not supported (only sf, key and bs)`);
    }
  }
  const raw = view.headers[name];
  if (raw === undefined) throw new SignatureFailure('missing_component', `the covered field ${name} is not in the request`);
  // Values are trimmed; a field sent several times was combined with ", " on arrival.
  const value = raw.trim();
  const key = params.get('key');
  if (key !== undefined && typeof key !== 'string') throw new SignatureFailure('malformed', `${name}: key must be a string`);
  if (params.has('bs')) {
    if (params.has('sf') || key !== undefined) throw new SignatureFailure('malformed', `${name}: bs cannot be combined with sf or key`);
    // RFC 9421 wraps each field line on its own; lines sent separately arrive combined, so a
    // field covered with bs must be sent on one line (values with commas are why bs exists).
    return [`:${Buffer.from(value).toString('base64')}:`];
  }
  if (params.has('sf') || key !== undefined) return [reserialise(name, value, key)];
  return [value];
}

/**
 * The signature base for the covered components `input` (a parsed Signature-Input member) of
 * the request. Throws `malformed` for a component that cannot be signed and `missing_component`
 * for one the request does not have.
 */
export function buildSignatureBase(input: InnerList, view: RequestView): SignatureBase {
  const lines: string[] = [];
  const covered: string[] = [];
  const seen = new Set<string>();
  for (const [name, params] of input[0]) {
    if (typeof name !== 'string' || name !== name.toLowerCase()) throw new SignatureFailure('malformed', 'component names are lower-case strings');
    const identifier = serializeItem([name, params]);
    if (seen.has(identifier)) throw new SignatureFailure('malformed', `${identifier} is covered twice`);
    seen.add(identifier);
    if (name === '@signature-params') throw new SignatureFailure('malformed', '@signature-params cannot be covered');
    const values = name.startsWith('@') ? derived(name, params, view) : field(name, params, view);
    for (const value of values) lines.push(`${identifier}: ${value}`);
    covered.push(name + serializeParameters(params));
  }
  lines.push(`"@signature-params": ${serializeInnerList(input)}`);
  return { base: lines.join('\n'), covered };
}
