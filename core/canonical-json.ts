import { hash } from 'node:crypto';

/**
 * JSON with object keys sorted and undefined members dropped, so the same value always hashes
 * the same: the audit chain and the policy input digests depend on it. Every policy check and
 * audit entry passes through here. Most values Gatehouse builds already list their members in
 * sorted order (audit entries, policy inputs), and for those the text is exactly what the
 * engine's native JSON.stringify writes, at a fraction of the cost of building it here; the
 * check that a value qualifies only reads it. Anything else is built member by
 * member, each subtree again taking the native path when it qualifies.
 */
export function canonicalJson(value: unknown): string {
  return inCanonicalOrder(value, MAX_CHECKED_DEPTH) ? (JSON.stringify(value) ?? 'null') : build(value);
}

// How deep the order check looks before leaving a value to `build`: `build` checks each subtree
// again, so an unbounded check would make deeply nested values cost quadratic time.
const MAX_CHECKED_DEPTH = 32;

/**
 * Whether JSON.stringify writes `value` canonically: plain objects and arrays only (no toJSON,
 * no class instances, whose members JSON.stringify would read differently), keys in sorted
 * order, and no member that JSON.stringify drops where `build` writes null.
 */
function inCanonicalOrder(value: unknown, depth: number): boolean {
  if (value === null) return true;
  const type = typeof value;
  if (type !== 'object') return type === 'string' || type === 'number' || type === 'boolean' || type === 'undefined';
  if (depth === 0) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!inCanonicalOrder(value[i], depth - 1)) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  // for…in reads the keys from the engine's enumeration cache, where Object.keys would allocate
  // an array; a plain object has no inherited enumerable keys. The keys' order is checked first:
  // when it is wrong, nothing below needs walking.
  let previous: string | undefined;
  for (const key in value) {
    if (previous !== undefined && previous > key) return false;
    previous = key;
  }
  for (const key in value) if (!inCanonicalOrder((value as Record<string, unknown>)[key], depth - 1)) return false;
  return true;
}

function build(value: unknown): string {
  if (typeof value === 'string') return quote(value);
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      out += (i > 0 ? ',' : '') + (item === undefined ? 'null' : canonicalJson(item));
    }
    return out + ']';
  }
  const keys = Object.keys(value).sort();
  let out = '{';
  for (const key of keys) {
    const member: unknown = (value as Record<string, unknown>)[key];
    if (member === undefined) continue;
    out += (out.length > 1 ? ',' : '') + quote(key) + ':' + canonicalJson(member);
  }
  return out + '}';
}

/** Strings of these characters need no escaping, so quoting them is a concatenation. */
const PLAIN = /^[A-Za-z0-9_:./@ -]*$/;

function quote(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

export function digest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
