/**
 * `yaml.unmarshal` as OPA reads YAML: go-yaml v2 (YAML 1.1) decoding the first document, then
 * sigs.k8s.io/yaml turning it into JSON. The `yaml` package parses; this module gives the nodes
 * go-yaml's meaning: plain scalars typed by `resolvePlain` (`yes` is true, `0x1F` is 31, `1:20`
 * and dates stay strings), `<<` merge keys that override the keys before them, keys that are not
 * strings written as text, and the errors both libraries raise (a key that is null or a
 * collection, a number JSON cannot hold, an alias of its own ancestor).
 */
import { isAlias, isMap, isScalar, isSeq, parseAllDocuments, type Document, type Node, type Scalar, type YAMLMap } from 'yaml';
import { goFormatFloat, resolvePlain, type Resolved } from './go-yaml-scalars.ts';

type Value = null | boolean | number | bigint | string | Value[] | Map<string, Value>;

/** What go-yaml or sigs.k8s.io/yaml would report as an error: the builtin is undefined. */
class Refused extends Error {}

const TAG = 'tag:yaml.org,2002:';
/** Tags go-yaml resolves a scalar's text for; any other tag leaves the text a string. */
const RESOLVED_TAGS: Record<string, Resolved['kind']> = {
  [`${TAG}bool`]: 'bool',
  [`${TAG}int`]: 'int',
  [`${TAG}float`]: 'float',
  [`${TAG}timestamp`]: 'timestamp',
};

/**
 * Nodes decoded per document at most: aliases can make a small text stand for a huge value (go-yaml
 * refuses "excessive aliasing"; this refuses past a fixed size).
 */
const MAX_DECODED_NODES = 1_000_000;

class Decoder {
  private decoded = 0;
  /** Alias targets being decoded: an alias inside its own anchor would never end. */
  private readonly open = new Set<Node>();

  constructor(private readonly doc: Document.Parsed) {}

  value(node: Node | null): Value {
    if (++this.decoded > MAX_DECODED_NODES) throw new Refused('too many nodes');
    if (node === null) return null;
    if (isAlias(node)) {
      const target = node.resolve(this.doc);
      if (!target || this.open.has(target)) throw new Refused('alias of itself');
      this.open.add(target);
      try {
        return this.value(target);
      } finally {
        this.open.delete(target);
      }
    }
    if (isScalar(node)) return scalar(node);
    if (isSeq(node)) return node.items.map((item) => this.value(item as Node | null));
    if (isMap(node)) return this.mapping(node as YAMLMap<Node | null, Node | null>, new Map());
    throw new Refused('unknown node');
  }

  /** The members of a mapping added to `out`, in order, so that later keys override earlier ones. */
  private mapping(map: YAMLMap<Node | null, Node | null>, out: Map<string, Value>): Map<string, Value> {
    for (const { key, value } of map.items) {
      if (isScalar(key) && key.type === 'PLAIN' && key.source === '<<' && !key.tag) this.merge(value, out);
      else out.set(keyText(this.value(key)), this.value(value));
    }
    return out;
  }

  /** `<<: map` or `<<: [maps…]` (the first of a list wins, so they are merged last to first). */
  private merge(node: Node | null, out: Map<string, Value>): void {
    const sources = isSeq(node) ? [...(node.items as Array<Node | null>)].reverse() : [node];
    for (const source of sources) {
      const map = isAlias(source) ? source.resolve(this.doc) : source;
      if (!isMap(map)) throw new Refused('merge of a value that is not a mapping');
      if (isAlias(source)) {
        if (this.open.has(map)) throw new Refused('alias of itself');
        this.open.add(map);
      }
      try {
        this.mapping(map as YAMLMap<Node | null, Node | null>, out);
      } finally {
        this.open.delete(map);
      }
    }
  }
}

/** A scalar as go-yaml decodes it into an `interface{}`. */
function scalar(node: Scalar): Value {
  const tag = node.tag;
  if (tag === `${TAG}binary`) {
    const text = String(node.source).replace(/[\r\n]/g, '');
    if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) throw new Refused('bad base64');
    return new TextDecoder().decode(Buffer.from(text, 'base64'));
  }
  const text = typeof node.value === 'string' ? node.value : String(node.source);
  if (tag === undefined && node.type !== 'PLAIN') return text;
  if (tag !== undefined && !(tag in RESOLVED_TAGS)) return text;
  const resolved = resolvePlain(text);
  if (tag !== undefined) {
    const wanted = RESOLVED_TAGS[tag]!;
    const fits = resolved.kind === wanted || (wanted === 'float' && resolved.kind === 'int');
    if (!fits) throw new Refused(`cannot decode ${text} as ${wanted}`);
    if (wanted === 'float' && resolved.kind === 'int') return Number(resolved.value);
  }
  switch (resolved.kind) {
    case 'null':
      return null;
    case 'bool':
    case 'int':
    case 'float':
      return resolved.value;
    default:
      return text;
  }
}

/** sigs.k8s.io/yaml's key text: strings as they are, integers, floats (as float32 `%g`) and booleans written out. */
function keyText(key: Value): string {
  if (typeof key === 'string') return key;
  if (typeof key === 'boolean') return String(key);
  if (typeof key === 'bigint' && key < 1n << 63n) return key.toString();
  if (typeof key === 'number') {
    const text = goFormatFloat(key, 32);
    return text === '+Inf' ? '.inf' : text === '-Inf' ? '-.inf' : text === 'NaN' ? '.nan' : text;
  }
  throw new Refused('unsupported map key');
}

function json(value: Value): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean' || typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Refused('JSON has no infinities or NaN');
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(json).join(',')}]`;
  return `{${[...value].map(([k, v]) => `${JSON.stringify(k)}:${json(v)}`).join(',')}}`;
}

/**
 * `yaml.unmarshal(text)` as JSON text (integers stay exact), or undefined when go-yaml or
 * sigs.k8s.io/yaml would fail. Only the first document counts; an empty stream is null.
 */
export function yamlUnmarshal(text: string): string | undefined {
  const docs = parseAllDocuments(text, { version: '1.1', schema: 'failsafe', uniqueKeys: false });
  if ('empty' in docs) return docs.errors.length > 0 ? undefined : 'null';
  const doc = docs[0]!;
  if (doc.errors.length > 0) return undefined;
  try {
    return json(new Decoder(doc).value(doc.contents as Node | null));
  } catch (err) {
    if (err instanceof Refused) return undefined;
    throw err;
  }
}
