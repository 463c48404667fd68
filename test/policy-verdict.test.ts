import t from 'tap';
import { canonicalJson } from '../core/canonical-json.ts';
import { readVerdict } from '../core/policy-evaluator.ts';

t.test('verdicts fail closed', async (t) => {
  const base = { policy: 'p-v1', moduleHash: 'sha256:x', durationNs: 1 };
  for (const [name, evaluation] of [
    ['an error', { ...base, value: { allow: true }, error: 'out of memory' }],
    ['no document', { ...base, value: undefined }],
    ['a non-object', { ...base, value: [true] }],
    ['allow missing', { ...base, value: { gate: 'auto' } }],
    ['allow not exactly true', { ...base, value: { allow: 'yes' } }],
  ] as const) {
    t.equal(readVerdict(evaluation).allow, false, `${name} denies`);
  }
  t.match(readVerdict({ ...base, value: undefined, error: 'boom' }), { allow: false, error: /boom/, reasons: [/boom/] });
  t.match(
    readVerdict({ ...base, value: { allow: true, gate: 'human_approval', nextAction: 'approve', reasons: ['r', 7], approvals: { roles: ['cfo'], count: 2 } } }),
    { allow: true, gate: 'human_approval', nextAction: 'approve', reasons: ['r'], approvals: { roles: ['cfo'], count: 2 }, error: null },
  );
});

t.test('canonical JSON sorts keys and drops undefined', async (t) => {
  t.equal(canonicalJson({ b: 1, a: [{ d: undefined, c: 'x' }], e: null }), '{"a":[{"c":"x"}],"b":1,"e":null}');
  t.equal(canonicalJson({ x: 1, y: 2 }), canonicalJson({ y: 2, x: 1 }));
});
