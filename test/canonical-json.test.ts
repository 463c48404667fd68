import t from 'tap';
import { canonicalJson, digest } from '../core/canonical-json.ts';

/** The reference definition: sort every object's keys, then plain JSON. */
function sortedCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortedCopy((value as Record<string, unknown>)[key]);
  return out;
}

/** `depth` objects nested in each other around `leaf`: deeper than the order check looks. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = { a: i, [`k${i}`]: value };
  return value;
}

t.test('canonical JSON is JSON with sorted keys, whatever the strings hold', async (t) => {
  const samples: unknown[] = [
    { b: 1, a: [3, 2, { z: null, y: 'x' }], c: { e: true, d: -0.5 } },
    { 'risk:score': 82, 'deploy:replicas': 3, 'a b': 'plain text / with @ and -' },
    { quote: 'say "hi"', slash: 'back\\slash', line: 'one\ntwo', tab: '\t', control: '\u0001', unicode: 'café ☕ 𝄞', surrogate: '\ud800' },
    { 'key "quoted"': 1, 'ünïcode': 2, '': 3 },
    [1, 'two', [3, [4]], { nested: { deeper: ['x'] } }],
    'just a string',
    42,
    null,
    { big: 1e21, small: 1e-7, int: Number.MAX_SAFE_INTEGER },
    // Already in order at the top, out of order below it, and the other way round.
    { a: 1, b: { y: [{ d: 1, c: 2 }], x: 'q' }, c: [undefined, 'z'] },
    { z: { a: 1, b: [1, { c: null }] }, a: { a: 'x' } },
    Object.assign(Object.create(null) as object, { b: 2, a: 1 }),
    nested(40, { b: 1, a: 2 }),
    nested(40, { a: 1, b: 2 }),
    // A class instance is read for its own members, as before, whatever its toJSON says.
    { when: new Date(0) },
  ];
  for (const sample of samples) t.equal(canonicalJson(sample), JSON.stringify(sortedCopy(sample)), JSON.stringify(sample));
});

t.test('key order and undefined members do not change the text or the digest', async (t) => {
  const one = { action: 'create', principal: { keyId: 'k', roles: ['a'] }, extra: undefined };
  const other = { principal: { roles: ['a'], keyId: 'k' }, action: 'create' };
  t.equal(canonicalJson(one), '{"action":"create","principal":{"keyId":"k","roles":["a"]}}');
  t.equal(digest(one), digest(other));
  t.not(digest(one), digest({ ...other, action: 'approve' }));
  t.equal(canonicalJson([undefined, 1]), '[null,1]');
});
