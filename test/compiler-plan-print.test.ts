import t from 'tap';
import { printPolicy } from '../policies/compiler/plan/print.ts';
import type { Policy } from '../policies/compiler/plan/ir.ts';

t.test('prints constants, functions and plans with indented blocks', async (t) => {
  const policy: Policy = {
    consts: ['"user"', '"alice"', `"${'long '.repeat(10)}"`],
    funcs: [
      {
        name: 'data.test.allow',
        params: [0, 1],
        result: 2,
        locals: 5,
        cacheable: true,
        origin: 'test.rego:3',
        blocks: [
          {
            stmts: [
              { op: 'Dot', source: { local: 0 }, key: { const: 0 }, target: 3 },
              {
                op: 'Scan',
                source: 3,
                key: 4,
                value: 2,
                block: { stmts: [{ op: 'Not', block: { stmts: [{ op: 'Equal', a: { local: 2 }, b: { const: 2 } }] } }, { op: 'Break', index: 1 }] },
              },
              { op: 'AssignOnce', source: { const: 1 }, target: 2, message: 'conflict' },
            ],
          },
        ],
      },
    ],
    plans: [
      {
        name: 'test/allow',
        locals: 3,
        blocks: [{ stmts: [{ op: 'Call', func: 'data.test.allow', args: [{ local: 0 }, { local: 1 }], target: 2 }, { op: 'ResultSetAdd', value: 2 }] }],
      },
    ],
  };
  t.equal(
    printPolicy(policy),
    [
      'consts (3)',
      '  c0 = "user"',
      '  c1 = "alice"',
      `  c2 = "${'long '.repeat(10)}"`,
      'func data.test.allow(l0, l1) -> l2  locals=5 cacheable  # test.rego:3',
      '  block',
      '    Dot l0[c0 "user"] -> l3',
      '    Scan l3 key l4 value l2',
      '      block',
      '        Not',
      '          block',
      '            Equal l2 c2',
      '        Break 1',
      '    AssignOnce c1 "alice" -> l2  conflict "conflict"',
      'plan test/allow  locals=3',
      '  block',
      '    Call data.test.allow(l0, l1) -> l2',
      '    ResultSetAdd l2',
      '',
    ].join('\n'),
  );
});
