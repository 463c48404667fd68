import t from 'tap';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { CompileError } from '../policies/compiler/errors.ts';
import { invariantDots } from '../policies/compiler/emit/invariant-dots.ts';
import { emitModule } from '../policies/compiler/emit/wasm.ts';
import type { Block, Func, Operand, Plan, Policy, Stmt } from '../policies/compiler/plan/ir.ts';
import { ensureRuntime } from '../policies/runtime/build.ts';

type HostBuiltins = Record<string, (...args: any[]) => unknown>;

const runtime = await ensureRuntime();

/** Emits the policy with the real runtime and loads it the way the service does. */
async function load(policy: Policy, builtins: HostBuiltins = {}) {
  return loadPolicy(emitModule(policy, runtime), undefined, builtins);
}

/** The value `fn` throws (the SDK throws the abort message as a plain string). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

/**
 * Builds a policy while interning constants: `json('[1,2]')` and `str('a')` return operands for
 * new or existing entries of `consts`.
 */
function policyWith(build: (json: (text: string) => Operand, str: (text: string) => Operand) => Omit<Policy, 'consts'>): Policy {
  const consts: string[] = [];
  const json = (text: string): Operand => {
    let index = consts.indexOf(text);
    if (index === -1) index = consts.push(text) - 1;
    return { const: index };
  };
  const str = (text: string) => json(JSON.stringify(text));
  return { consts, ...build(json, str) };
}

const L = (local: number): Operand => ({ local });
const block = (...stmts: Stmt[]): Block => ({ stmts });
const plan = (name: string, locals: number, ...blocks: Block[]): Plan => ({ name, locals, blocks });
const func = (name: string, fields: Partial<Func> & Pick<Func, 'locals' | 'result' | 'blocks'>): Func => ({
  name,
  params: [0, 1],
  cacheable: false,
  origin: `test:${name}`,
  ...fields,
});
const results = (...values: unknown[]) => values.map((result) => ({ result }));
/** A result set in a fixed order, for plans adding several results. */
const sorted = (set: unknown[]) => [...set].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

t.test('a plan reads the input and adds results', async (t) => {
  const policy = policyWith((_, str) => ({
    funcs: [],
    plans: [
      plan(
        'test/allow',
        4,
        block(
          { op: 'Dot', source: L(0), key: str('user'), target: 2 },
          { op: 'Equal', a: L(2), b: str('alice') },
          { op: 'Assign', source: { const: 2 }, target: 3 },
          { op: 'ResultSetAdd', value: 3 },
        ),
      ),
    ],
  }));
  policy.consts.push('true');
  const p = await load(policy);
  t.same(p.evaluate({ user: 'alice' }), results(true));
  t.same(p.evaluate({ user: 'bob' }), []);
  t.same(p.evaluate(undefined), [], 'no input: reading it fails');
});

t.test('every statement kind', async (t) => {
  const policy = policyWith((json, str) => {
    const out = 2;
    const put = (key: string, value: Operand): Stmt => ({ op: 'ObjectInsert', object: out, key: str(key), value });
    return {
      funcs: [],
      plans: [
        plan(
          'test/all',
          13,
          block(
            { op: 'MakeObject', target: out },
            {
              op: 'Block',
              blocks: [
                block({ op: 'Len', source: str('héllo 𝄞'), target: 3 }, put('len', L(3))),
                block({ op: 'Len', source: json('{"a":1,"b":2}'), target: 3 }, put('len_object', L(3))),
                block({ op: 'Len', source: json('7'), target: 3 }, put('len_number', L(3))),
                block({ op: 'Dot', source: json('[10,20,30]'), key: json('1'), target: 3 }, put('dot', L(3))),
                block({ op: 'Dot', source: json('{"a":1}'), key: str('missing'), target: 3 }, put('dot_missing', L(3))),
                block(
                  { op: 'MakeSet', target: 4 },
                  { op: 'IsArray', source: json('[]') },
                  { op: 'IsObject', source: json('{}') },
                  { op: 'IsSet', source: L(4) },
                  put('kinds', json('true')),
                ),
                block({ op: 'IsArray', source: json('{}') }, put('object_is_array', json('true'))),
                block({ op: 'IsObject', source: L(4) }, put('set_is_object', json('true'))),
                block({ op: 'IsSet', source: json('[]') }, put('array_is_set', json('true'))),
                block(
                  { op: 'NotEqual', a: json('1'), b: json('2') },
                  { op: 'Equal', a: json('1'), b: json('1.0') },
                  { op: 'Equal', a: json('{"a":[1,{"b":null}]}'), b: json('{"a":[1,{"b":null}]}') },
                  put('equality', json('true')),
                ),
                block({ op: 'Equal', a: json('1'), b: json('2') }, put('one_is_two', json('true'))),
                block({ op: 'NotEqual', a: str('x'), b: str('x') }, put('x_is_not_x', json('true'))),
                block(
                  { op: 'Assign', source: json('5'), target: 5 },
                  { op: 'IsDefined', source: 5 },
                  { op: 'ResetLocal', target: 5 },
                  { op: 'IsUndefined', source: 5 },
                  put('reset', json('true')),
                ),
                block({ op: 'IsDefined', source: 5 }, put('defined_after_reset', json('true'))),
                block(
                  { op: 'MakeArray', capacity: 2, target: 6 },
                  { op: 'ArrayAppend', array: 6, value: str('x') },
                  { op: 'ArrayAppend', array: 6, value: json('[1]') },
                  put('array', L(6)),
                ),
                block(
                  { op: 'MakeSet', target: 7 },
                  { op: 'SetAdd', set: 7, value: str('b') },
                  { op: 'SetAdd', set: 7, value: str('a') },
                  { op: 'SetAdd', set: 7, value: str('b') },
                  put('set', L(7)),
                ),
                block({ op: 'Call', func: 'plus', args: [json('1'), json('2')], target: 8 }, put('plus', L(8))),
                block({ op: 'Call', func: 'count', args: [json('[1,2,3]')], target: 8 }, put('count', L(8))),
                block({ op: 'Call', func: 'plus', args: [str('a'), json('1')], target: 8 }, put('plus_string', L(8))),
                block(
                  { op: 'AssignOnce', source: json('1'), target: 9, message: 'conflict' },
                  { op: 'AssignOnce', source: json('1.0'), target: 9, message: 'conflict' },
                  put('assign_once', L(9)),
                ),
                block(
                  { op: 'ObjectInsertOnce', object: out, key: str('insert_once'), value: json('1'), message: 'conflict' },
                  { op: 'ObjectInsertOnce', object: out, key: str('insert_once'), value: json('1'), message: 'conflict' },
                ),
                block(put('replaced', json('1')), put('replaced', json('2'))),
                block({ op: 'Assign', source: L(10), target: 11 }, put('read_undefined', json('true'))),
                block({ op: 'ArrayAppend', array: 10, value: json('1') }, put('append_to_undefined', json('true'))),
                block({ op: 'ObjectInsert', object: out, key: L(10), value: json('1') }, put('undefined_key', json('true'))),
                block({ op: 'SetAdd', set: 7, value: L(10) }, put('add_undefined', json('true'))),
                block({ op: 'Equal', a: L(10), b: L(10) }, put('undefined_equals', json('true'))),
                block({ op: 'IsUndefined', source: 10 }, put('never_set', json('true'))),
              ],
            },
            { op: 'ResultSetAdd', value: out },
          ),
        ),
      ],
    };
  });
  const p = await load(policy);
  t.same(p.evaluate({}), [
    {
      result: {
        len: 7,
        len_object: 2,
        dot: 20,
        kinds: true,
        equality: true,
        reset: true,
        array: ['x', [1]],
        set: ['a', 'b'],
        plus: 3,
        count: 3,
        assign_once: 1,
        insert_once: 1,
        replaced: 2,
        never_set: true,
      },
    },
  ]);
});

t.test('nested blocks, failures and breaks', async (t) => {
  const policy = policyWith((_, str) => {
    const mark = (name: string): Stmt => ({ op: 'ArrayAppend', array: 2, value: str(name) });
    const fail: Stmt = { op: 'Equal', a: str('a'), b: str('b') };
    return {
      funcs: [],
      plans: [
        plan(
          'test/breaks',
          3,
          block(
            { op: 'MakeArray', capacity: 0, target: 2 },
            {
              op: 'Block',
              blocks: [
                block(
                  mark('a'),
                  { op: 'Block', blocks: [block(mark('a.1'), { op: 'Break', index: 1 }, mark('x')), block(mark('x'))] },
                  mark('x'),
                ),
                block(
                  mark('b'),
                  { op: 'Block', blocks: [block(mark('b.1'), { op: 'Break', index: 0 }, mark('x')), block(mark('b.2'))] },
                  mark('b.3'),
                ),
                block(mark('c'), fail, mark('x')),
                block(
                  mark('d'),
                  {
                    op: 'Block',
                    blocks: [block({ op: 'Block', blocks: [block(mark('d.1'), { op: 'Break', index: 2 }, mark('x'))] }, mark('x'))],
                  },
                  mark('x'),
                ),
                block(mark('e'), { op: 'Block', blocks: [block(fail, mark('x')), block(mark('e.1'))] }, mark('e.2')),
              ],
            },
            mark('end'),
            { op: 'ResultSetAdd', value: 2 },
          ),
          block({ op: 'Assign', source: str('second plan block'), target: 2 }, { op: 'ResultSetAdd', value: 2 }),
        ),
      ],
    };
  });
  const p = await load(policy);
  const trace = ['a', 'a.1', 'b', 'b.1', 'b.2', 'b.3', 'c', 'd', 'd.1', 'e', 'e.1', 'e.2', 'end'];
  t.same(sorted(p.evaluate({})), sorted(results(trace, 'second plan block')));
});

t.test('scans over arrays, objects, sets and scalars', async (t) => {
  const policy = policyWith((json, str) => {
    const out = 2;
    const put = (key: string, value: Operand): Stmt => ({ op: 'ObjectInsert', object: out, key: str(key), value });
    const pairs = (key: string, source: number): Stmt[] => [
      { op: 'MakeArray', capacity: 0, target: 4 },
      {
        op: 'Scan',
        source,
        key: 5,
        value: 6,
        block: block(
          { op: 'MakeArray', capacity: 2, target: 7 },
          { op: 'ArrayAppend', array: 7, value: L(5) },
          { op: 'ArrayAppend', array: 7, value: L(6) },
          { op: 'ArrayAppend', array: 4, value: L(7) },
        ),
      },
      put(key, L(4)),
    ];
    const collect = (key: string, source: Operand, body: Stmt[], element: 'key' | 'value' = 'value'): Stmt[] => [
      { op: 'Assign', source, target: 3 },
      { op: 'MakeArray', capacity: 0, target: 4 },
      {
        op: 'Scan',
        source: 3,
        key: 5,
        value: 6,
        block: block(...body, { op: 'ArrayAppend', array: 4, value: L(element === 'key' ? 5 : 6) }),
      },
      put(key, L(4)),
    ];
    return {
      funcs: [],
      plans: [
        plan(
          'test/scans',
          10,
          block(
            { op: 'MakeObject', target: out },
            {
              op: 'Block',
              blocks: [
                block({ op: 'Assign', source: json('["a","b","c"]'), target: 3 }, ...pairs('array', 3)),
                block({ op: 'Assign', source: json('{"b":2,"a":1,"c":{"d":3}}'), target: 3 }, ...pairs('object', 3)),
                block(
                  { op: 'MakeSet', target: 3 },
                  { op: 'SetAdd', set: 3, value: str('z') },
                  { op: 'SetAdd', set: 3, value: str('x') },
                  { op: 'SetAdd', set: 3, value: str('y') },
                  ...pairs('set', 3),
                ),
                block({ op: 'Assign', source: json('[]'), target: 3 }, ...pairs('empty', 3)),
                block({ op: 'Assign', source: str('abc'), target: 3 }, ...pairs('string', 3)),
                block({ op: 'Assign', source: json('5'), target: 3 }, ...pairs('number', 3)),
                block(...pairs('undefined', 9)),
                block(...collect('skip_two', json('[1,2,3]'), [{ op: 'NotEqual', a: L(6), b: json('2') }])),
                block(...collect('keys', json('{"k1":true,"k2":false}'), [], 'key')),
                block(
                  ...collect('break_at_two', json('[1,2,3]'), [
                    { op: 'ArrayAppend', array: 4, value: L(6) },
                    { op: 'Equal', a: L(6), b: json('2') },
                    { op: 'Break', index: 1 },
                  ]),
                ),
                block(put('after_break', L(4))),
              ],
            },
            { op: 'ResultSetAdd', value: out },
          ),
        ),
      ],
    };
  });
  const p = await load(policy);
  t.same(p.evaluate({}), [
    {
      result: {
        array: [[0, 'a'], [1, 'b'], [2, 'c']],
        object: [['a', 1], ['b', 2], ['c', { d: 3 }]],
        set: [['x', 'x'], ['y', 'y'], ['z', 'z']],
        empty: [],
        string: [],
        number: [],
        skip_two: [1, 3],
        keys: ['k1', 'k2'],
        after_break: [1, 2],
      },
    },
  ]);
});

t.test('nested scans', async (t) => {
  const policy = policyWith(() => ({
    funcs: [],
    plans: [
      plan(
        'test/flatten',
        8,
        block(
          { op: 'MakeArray', capacity: 0, target: 2 },
          {
            op: 'Scan',
            source: 0,
            key: 3,
            value: 4,
            block: block({ op: 'Scan', source: 4, key: 5, value: 6, block: block({ op: 'ArrayAppend', array: 2, value: L(6) }) }),
          },
          { op: 'ResultSetAdd', value: 2 },
        ),
      ),
    ],
  }));
  const p = await load(policy);
  t.same(p.evaluate([[1, 2], [], { a: 3 }, 'x', [4]]), results([1, 2, 3, 4]));
});

t.test('lookups that cannot change during a call are made once, and only those', async (t) => {
  const scanBody = (str: (text: string) => Operand) =>
    block(
      { op: 'Dot', source: L(0), key: str('a'), target: 10 },
      { op: 'Dot', source: L(10), key: str('b'), target: 11 },
      { op: 'Dot', source: L(4), key: str('k'), target: 6 },
      { op: 'Assign', source: L(4), target: 7 },
      { op: 'Dot', source: L(7), key: str('k'), target: 8 },
      { op: 'SetAdd', set: 9, value: L(8) },
      { op: 'SetAdd', set: 9, value: L(11) },
      { op: 'Dot', source: L(0), key: str('target'), target: 5 },
      { op: 'Equal', a: L(5), b: L(6) },
      { op: 'SetAdd', set: 9, value: str('hit') },
    );
  let body: Block | undefined;
  const policy = policyWith((_, str) => {
    body = scanBody(str);
    return {
      funcs: [],
      plans: [
        plan(
          'test/matches',
          12,
          block(
            { op: 'MakeSet', target: 9 },
            { op: 'Dot', source: L(0), key: str('xs'), target: 2 },
            { op: 'Scan', source: 2, key: 3, value: 4, block: body },
            { op: 'ResultSetAdd', value: 9 },
          ),
        ),
      ],
    };
  });
  const invariant = invariantDots(policy.plans[0]!.blocks, [0, 1]);
  const targets = [...invariant].map((dot) => dot.target).sort((a, b) => a - b);
  t.same(targets, [2, 5, 10, 11], 'input.xs, input.target and the chain input.a.b; not the keys of the scanned elements');

  const p = await load(policy);
  t.same(p.evaluate({ xs: [{ k: 1 }, { k: 2 }, { k: 3 }], a: { b: 'x' }, target: 2 }), results([1, 2, 3, 'hit', 'x']));
  t.same(p.evaluate({ xs: [{ k: 1 }], a: { b: 'y' }, target: 1 }), results([1, 'hit', 'y']), 'nothing is kept from the previous call');
  t.same(p.evaluate({ xs: [{ k: 1 }], target: 1 }), results([]), 'an undefined lookup fails every time');
});

t.test('lookups in written or mutated locals are not invariant', async (t) => {
  const key: Operand = { const: 0 };
  const blocks = [
    block(
      { op: 'Assign', source: L(1), target: 0 },
      { op: 'Dot', source: L(0), key, target: 2 },
      { op: 'MakeObject', target: 3 },
      { op: 'ObjectInsert', object: 3, key, value: L(2) },
      { op: 'Dot', source: L(3), key, target: 4 },
      { op: 'Dot', source: L(1), key, target: 5 },
      { op: 'Dot', source: L(1), key, target: 5 },
      { op: 'Dot', source: L(5), key, target: 6 },
      { op: 'Dot', source: L(1), key: L(6), target: 7 },
    ),
  ];
  const targets = [...invariantDots(blocks, [0, 1])].map((dot) => dot.target);
  t.same(targets, [5, 5], 'only data[key]: input is reassigned, the object is built, local 5 is written twice and local 6 is not a constant key');
});

t.test('not', async (t) => {
  const policy = policyWith((json, str) => ({
    funcs: [],
    plans: [
      plan(
        'test/not_admin',
        4,
        block(
          { op: 'Not', block: block({ op: 'Dot', source: L(0), key: str('admin'), target: 2 }, { op: 'Equal', a: L(2), b: json('true') }) },
          { op: 'ResultSetAdd', value: 0 },
        ),
      ),
      plan(
        'test/not_breaks',
        4,
        block(
          { op: 'MakeArray', capacity: 0, target: 2 },
          { op: 'Not', block: block({ op: 'Break', index: 0 }) },
          { op: 'ArrayAppend', array: 2, value: str('break 0 fails the negated block') },
          { op: 'Not', block: block({ op: 'Block', blocks: [block({ op: 'Break', index: 1 })] }) },
          { op: 'ArrayAppend', array: 2, value: str('break 1 from a nested block too') },
          { op: 'Block', blocks: [block({ op: 'Not', block: block() }, { op: 'ArrayAppend', array: 2, value: str('x') })] },
          { op: 'Block', blocks: [block({ op: 'Not', block: block({ op: 'Break', index: 1 }) }, { op: 'ArrayAppend', array: 2, value: str('x') })] },
          { op: 'ResultSetAdd', value: 2 },
        ),
      ),
    ],
  }));
  const p = await load(policy);
  t.same(p.evaluate({ admin: true }), []);
  t.same(p.evaluate({ admin: false }), results({ admin: false }));
  t.same(p.evaluate({}), results({}));
  t.same(p.evaluate({}, 'test/not_breaks'), results(['break 0 fails the negated block', 'break 1 from a nested block too']));
});

t.test('conflicts abort the evaluation with their message', async (t) => {
  const policy = policyWith((_, str) => ({
    funcs: [],
    plans: [
      plan(
        'test/assign_once',
        5,
        block(
          {
            op: 'Scan',
            source: 0,
            key: 2,
            value: 3,
            block: block({ op: 'AssignOnce', source: L(3), target: 4, message: 'complete rule test/x produced conflicting values' }),
          },
          { op: 'ResultSetAdd', value: 4 },
        ),
      ),
      plan(
        'test/insert_once',
        5,
        block(
          { op: 'MakeObject', target: 2 },
          {
            op: 'Scan',
            source: 0,
            key: 3,
            value: 4,
            block: block({ op: 'ObjectInsertOnce', object: 2, key: str('k'), value: L(4), message: 'object keys must be unique' }),
          },
          { op: 'ResultSetAdd', value: 2 },
        ),
      ),
    ],
  }));
  const p = await load(policy);
  t.same(p.evaluate([1, 1.0, 1]), results(1));
  t.match(String(thrown(() => p.evaluate([1, 2]))), 'complete rule test/x produced conflicting values');
  t.same(p.evaluate(['a', 'a'], 'test/insert_once'), results({ k: 'a' }));
  t.match(String(thrown(() => p.evaluate(['a', 'b'], 'test/insert_once'))), 'object keys must be unique');
  t.same(p.evaluate([2], 'test/assign_once'), results(2), 'the module still evaluates after an abort');
});

t.test('functions: arguments, undefined input, top-level blocks', async (t) => {
  const policy = policyWith((json, str) => ({
    funcs: [
      func('test/inc', { params: [0, 1, 2], locals: 4, result: 3, blocks: [block({ op: 'Call', func: 'plus', args: [L(2), json('1')], target: 3 })] }),
      func('test/always', { locals: 3, result: 2, blocks: [block({ op: 'Assign', source: json('true'), target: 2 })] }),
      func('test/second_block', {
        locals: 3,
        result: 2,
        blocks: [
          block({ op: 'Equal', a: json('1'), b: json('2') }, { op: 'Assign', source: str('first'), target: 2 }),
          block({ op: 'Assign', source: str('second'), target: 2 }),
        ],
      }),
      func('test/break_top', {
        locals: 3,
        result: 2,
        blocks: [
          block({ op: 'Assign', source: str('a'), target: 2 }, { op: 'Break', index: 0 }, { op: 'Assign', source: str('b'), target: 2 }),
          block({ op: 'IsUndefined', source: 2 }, { op: 'Assign', source: str('c'), target: 2 }),
        ],
      }),
      func('test/undefined', { locals: 3, result: 2, blocks: [block({ op: 'Dot', source: L(0), key: str('missing'), target: 2 })] }),
    ],
    plans: [
      plan(
        'test/calls',
        8,
        block(
          { op: 'MakeArray', capacity: 0, target: 2 },
          {
            op: 'Block',
            blocks: [
              block({ op: 'Call', func: 'test/inc', args: [L(0), L(1), json('41')], target: 3 }, { op: 'ArrayAppend', array: 2, value: L(3) }),
              block({ op: 'Call', func: 'test/inc', args: [L(0), L(1), L(7)], target: 3 }, { op: 'ArrayAppend', array: 2, value: str('x') }),
              block({ op: 'Call', func: 'test/always', args: [L(0), L(1)], target: 3 }, { op: 'ArrayAppend', array: 2, value: L(3) }),
              block({ op: 'Call', func: 'test/second_block', args: [L(0), L(1)], target: 3 }, { op: 'ArrayAppend', array: 2, value: L(3) }),
              block({ op: 'Call', func: 'test/break_top', args: [L(0), L(1)], target: 3 }, { op: 'ArrayAppend', array: 2, value: L(3) }),
              block({ op: 'Call', func: 'test/undefined', args: [L(0), L(1)], target: 3 }, { op: 'ArrayAppend', array: 2, value: str('x') }),
            ],
          },
          { op: 'ResultSetAdd', value: 2 },
        ),
      ),
    ],
  }));
  const p = await load(policy);
  const expected = results([42, true, 'second', 'a']);
  t.same(p.evaluate({}), expected);
  t.same(p.evaluate(undefined), expected, 'rules run without input');
});

t.test('cacheable rules run once per evaluation with its own documents', async (t) => {
  let calls = 0;
  const builtins: HostBuiltins = { 'time.now_ns': () => ++calls };
  const policy = policyWith((_, str) => ({
    funcs: [
      func('test/counted', { cacheable: true, locals: 3, result: 2, blocks: [block({ op: 'Call', func: 'time.now_ns', args: [], target: 2 })] }),
      func('test/uncached', { locals: 3, result: 2, blocks: [block({ op: 'Call', func: 'time.now_ns', args: [], target: 2 })] }),
      func('test/never', {
        cacheable: true,
        locals: 4,
        result: 2,
        blocks: [block({ op: 'Call', func: 'time.now_ns', args: [], target: 3 }, { op: 'Equal', a: L(3), b: str('never') }, { op: 'Assign', source: L(3), target: 2 })],
      }),
    ],
    plans: [
      plan(
        'test/cached',
        10,
        block(
          { op: 'Call', func: 'test/counted', args: [L(0), L(1)], target: 3 },
          { op: 'Call', func: 'test/counted', args: [L(0), L(1)], target: 4 },
          { op: 'MakeObject', target: 5 },
          { op: 'Call', func: 'test/counted', args: [L(5), L(1)], target: 6 },
          { op: 'Call', func: 'test/counted', args: [L(0), L(5)], target: 7 },
          { op: 'Call', func: 'test/counted', args: [L(0), L(1)], target: 8 },
          { op: 'MakeArray', capacity: 4, target: 9 },
          ...[3, 4, 6, 7, 8].map((local): Stmt => ({ op: 'ArrayAppend', array: 9, value: L(local) })),
          { op: 'ResultSetAdd', value: 9 },
        ),
      ),
      plan(
        'test/uncached',
        5,
        block(
          { op: 'Call', func: 'test/uncached', args: [L(0), L(1)], target: 3 },
          { op: 'Call', func: 'test/uncached', args: [L(0), L(1)], target: 4 },
          { op: 'MakeArray', capacity: 2, target: 2 },
          { op: 'ArrayAppend', array: 2, value: L(3) },
          { op: 'ArrayAppend', array: 2, value: L(4) },
          { op: 'ResultSetAdd', value: 2 },
        ),
      ),
      plan(
        'test/undefined_cached',
        5,
        block({ op: 'Call', func: 'test/never', args: [L(0), L(1)], target: 3 }),
        block({ op: 'Call', func: 'test/never', args: [L(0), L(1)], target: 3 }),
        block({ op: 'Call', func: 'time.now_ns', args: [], target: 4 }, { op: 'ResultSetAdd', value: 4 }),
      ),
    ],
  }));
  const p = await load(policy, builtins);
  t.same(p.evaluate({}), results([1, 1, 2, 3, 1]));
  t.same(p.evaluate({}), results([4, 4, 5, 6, 4]), 'a new evaluation starts with empty caches');
  t.same(p.evaluate(undefined), results([7, 7, 8, 9, 7]));
  t.same(p.evaluate({}, 'test/uncached'), results([10, 11]));
  t.same(p.evaluate({}, 'test/undefined_cached'), results(13), 'an undefined value is cached too');
});

t.test('host builtins are called through opa_builtinN and listed by builtins()', async (t) => {
  const seen: unknown[][] = [];
  const builtins: HostBuiltins = {
    // Imported under the name the SDK does not answer itself (hostImportName).
    // It takes its operand as JSON text (hostTakesJsonText).
    'gatehouse.yaml.marshal': (s: string) => (seen.push([s]), (JSON.parse(s) as string).toUpperCase()),
    'io.jwt.verify_rs256': (a: string, b: string) => (seen.push([a, b]), a === b),
    'io.jwt.verify_es256': (a: string, b: string) => (seen.push([a, b]), a !== b),
    'uuid.rfc4122': () => undefined,
    'time.now_ns': () => 1700000000000000000,
  };
  const policy = policyWith((_, str) => ({
    funcs: [],
    plans: [
      plan(
        'test/host',
        8,
        block(
          { op: 'Dot', source: L(0), key: str('name'), target: 2 },
          { op: 'Call', func: 'yaml.marshal', args: [L(2)], target: 3 },
          { op: 'Call', func: 'io.jwt.verify_rs256', args: [str('1.0.0'), str('1.0.0')], target: 4 },
          { op: 'Call', func: 'io.jwt.verify_es256', args: [str('x.com'), str('x.com')], target: 5 },
          { op: 'Call', func: 'time.now_ns', args: [], target: 6 },
          { op: 'MakeArray', capacity: 4, target: 7 },
          ...[3, 4, 5, 6].map((local): Stmt => ({ op: 'ArrayAppend', array: 7, value: L(local) })),
          { op: 'ResultSetAdd', value: 7 },
        ),
        block({ op: 'Call', func: 'uuid.rfc4122', args: [str('10KB')], target: 2 }, { op: 'ResultSetAdd', value: 2 }),
      ),
    ],
  }));
  const p = await load(policy, builtins);
  t.same(p.evaluate({ name: 'ada' }), results(['ADA', true, false, 1700000000000000000]));
  t.same(seen, [['"ada"'], ['1.0.0', '1.0.0'], ['x.com', 'x.com']]);
  const exports = (p.wasmInstance as WebAssembly.Instance).exports as Record<string, any>;
  const listed = dump(p, exports.builtins());
  t.same(listed, { 'gatehouse.yaml.marshal': 0, 'io.jwt.verify_rs256': 1, 'io.jwt.verify_es256': 2, 'time.now_ns': 3, 'uuid.rfc4122': 4 });
});

/** Reads a value out of a loaded module with its own `opa_json_dump`. */
function dump(p: Awaited<ReturnType<typeof load>>, value: number): unknown {
  const exports = (p.wasmInstance as WebAssembly.Instance).exports as Record<string, any>;
  const at: number = exports.opa_json_dump(value);
  const bytes = new Uint8Array(p.mem.buffer);
  let end = at;
  while (bytes[end] !== 0) end++;
  return JSON.parse(new TextDecoder().decode(bytes.subarray(at, end)));
}

t.test('constants keep unicode and exact numbers', async (t) => {
  const texts = [
    '"héllo ✓ 𝄞 日本"',
    '"\\u00e9\\n\\"quoted\\" \\\\ \\ud834\\udd1e"',
    '12345678901234567890123',
    '3.14159265358979323846264338327950288',
    '-1e-7',
    '{"ключ":["значение",null,false,{"nested":[]}]}',
    '""',
  ];
  const policy = policyWith((json) => ({
    funcs: [],
    plans: [
      plan(
        'test/consts',
        6,
        block(
          { op: 'MakeArray', capacity: texts.length, target: 2 },
          ...texts.map((text): Stmt => ({ op: 'ArrayAppend', array: 2, value: json(text) })),
          { op: 'ResultSetAdd', value: 2 },
        ),
        block({ op: 'Call', func: 'json.marshal', args: [json(texts[2]!)], target: 3 }, { op: 'ResultSetAdd', value: 3 }),
      ),
    ],
  }));
  const p = await load(policy);
  // json.marshal shows the integer arrived with all its digits (JSON.parse would round it).
  t.same(sorted(p.evaluate({})), sorted(results(texts.map((text) => JSON.parse(text)), texts[2])));
});

t.test('a large constant pool', async (t) => {
  const consts = Array.from({ length: 5000 }, (_, i) => JSON.stringify(`constant ${i} ${'·'.repeat(i % 7)}`));
  const policy: Policy = {
    consts,
    funcs: [],
    plans: [plan('test/last', 3, block({ op: 'Assign', source: { const: consts.length - 1 }, target: 2 }, { op: 'ResultSetAdd', value: 2 }))],
  };
  const p = await load(policy);
  t.same(p.evaluate({}), results(JSON.parse(consts[consts.length - 1]!)));
});

t.test('several entrypoints', async (t) => {
  const answer = (name: string, constant: number): Plan =>
    plan(name, 3, block({ op: 'Assign', source: { const: constant }, target: 2 }, { op: 'ResultSetAdd', value: 2 }));
  const policy: Policy = {
    consts: ['"x"', '"y"', '"pkg"'],
    funcs: [],
    plans: [answer('a/x', 0), answer('a/y', 1), answer('b', 2)],
  };
  const p = await load(policy);
  t.same(p.entrypoints, { 'a/x': 0, 'a/y': 1, b: 2 });
  t.same(p.evaluate({}), results('x'));
  t.same(p.evaluate({}, 'a/y'), results('y'));
  t.same(p.evaluate({}, 2), results('pkg'));
  t.match(String(thrown(() => p.evaluate({}, 3))), 'invalid entrypoint id');
});

t.test('the module exports only the OPA ABI', async (t) => {
  const wasm = emitModule({ consts: [], funcs: [], plans: [plan('p', 2, block())] }, runtime);
  const names = WebAssembly.Module.exports(new WebAssembly.Module(wasm)).map((e) => e.name);
  t.notOk(names.some((name) => name.startsWith('rt_') || name.startsWith('bi_')), names.join(' '));
  for (const name of ['opa_eval', 'eval', 'entrypoints', 'builtins', 'opa_malloc', 'opa_json_dump', 'opa_wasm_abi_version']) {
    t.ok(names.includes(name), name);
  }
});

t.test('malformed IR is an emit error', async (t) => {
  const cases: Array<[string, Policy, RegExp]> = [
    ['unknown function', { consts: [], funcs: [], plans: [plan('p', 3, block({ op: 'Call', func: 'nope', args: [], target: 2 }))] }, /unknown function nope/],
    ['builtin arity', { consts: [], funcs: [], plans: [plan('p', 3, block({ op: 'Call', func: 'count', args: [], target: 2 }))] }, /count takes 1/],
    ['break too far', { consts: [], funcs: [], plans: [plan('p', 2, block({ op: 'Break', index: 1 }))] }, /Break 1/],
    ['local out of range', { consts: [], funcs: [], plans: [plan('p', 2, block({ op: 'IsDefined', source: 2 }))] }, /local 2/],
    ['constant out of range', { consts: [], funcs: [], plans: [plan('p', 3, block({ op: 'Assign', source: { const: 0 }, target: 2 }))] }, /constant 0/],
    ['constant not JSON', { consts: ['{'], funcs: [], plans: [] }, /not JSON/],
    [
      'result outside a plan',
      { consts: [], funcs: [func('f', { locals: 3, result: 2, blocks: [block({ op: 'ResultSetAdd', value: 0 })] })], plans: [] },
      /ResultSetAdd outside a plan/,
    ],
  ];
  for (const [name, policy, message] of cases) {
    t.throws(() => emitModule(policy, runtime), message, name);
    const err = thrown(() => emitModule(policy, runtime));
    t.ok(err instanceof CompileError && err.stage === 'emit', `${name}: a CompileError of the emit stage`);
  }
});

t.test('the runtime cut down to what a policy reaches links into the same module as the whole runtime', async (t) => {
  const { runtimeSubset } = await import('../policies/compiler/emit/runtime-subset.ts');
  const { BUILTINS, nativeExportName } = await import('../policies/compiler/builtins.ts');
  const binaryen = (await import('binaryen')).default;
  const runtime = await ensureRuntime();
  const read = binaryen.readBinary as (data: Uint8Array, features: number) => InstanceType<typeof binaryen.Module>;
  /** What linking keeps of `bytes` for a policy calling `builtins`: the other builtins' exports gone, then unused code. */
  const kept = (bytes: Uint8Array, builtins: string[]) => {
    const m = read(bytes, binaryen.Features.All);
    const keep = new Set(builtins.map(nativeExportName));
    for (let i = m.getNumExports() - 1; i >= 0; i--) {
      const name = binaryen.getExportInfo(m.getExportByIndex(i)).name;
      if (name.startsWith('bi_') && !keep.has(name)) m.removeExport(name);
    }
    m.runPasses(['remove-unused-module-elements']);
    const out = m.emitBinary();
    m.dispose();
    return Buffer.from(out);
  };
  const natives = Object.keys(BUILTINS).filter((name) => BUILTINS[name]!.impl === 'native');
  for (const builtins of [[], ['count', 'plus'], ['regex.match', 'glob.match'], ['time.date', 'sprintf'], ['json.marshal', 'io.jwt.decode', 'units.parse'], natives]) {
    const subset = runtimeSubset(runtime, new Set(builtins));
    const label = builtins.length > 8 ? 'every native builtin' : `[${builtins.join(', ')}]`;
    if (builtins.length < 8) t.ok(subset.length < runtime.length / 1.4, `${label}: the subset is smaller (${subset.length} of ${runtime.length} bytes)`);
    t.ok(kept(subset, builtins).equals(kept(runtime, builtins)), `${label}: the same module is linked`);
  }
  t.equal(runtimeSubset(runtime, new Set(natives)).length, runtime.length, 'a policy calling everything keeps everything');
});

t.test('the runtime subset stubs exactly the unreachable bodies, and leaves a binary it cannot read whole', async (t) => {
  const { runtimeSubset } = await import('../policies/compiler/emit/runtime-subset.ts');
  const section = (id: number, bytes: number[]) => [id, bytes.length, ...bytes];
  const body = (instructions: number[]) => [instructions.length + 2, 0x00, ...instructions, 0x0b];
  const name = (text: string) => [text.length, ...Buffer.from(text)];
  /** f calls g; bi_x, a builtin nobody calls, and h, called by no one but exported, do nothing. */
  const module = (gBody: number[]) =>
    new Uint8Array([
      0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
      ...section(1, [0x01, 0x60, 0x00, 0x00]),
      ...section(3, [0x04, 0x00, 0x00, 0x00, 0x00]),
      ...section(7, [0x03, ...name('f'), 0x00, 0x00, ...name('bi_x'), 0x00, 0x02, ...name('h'), 0x00, 0x03]),
      ...section(10, [0x04, ...body([0x10, 0x01]), ...body(gBody), ...body([0x01, 0x01]), ...body([0x01])]),
    ]);
  const whole = module([0x41, 0x05, 0x1a]);
  const cut = runtimeSubset(whole, new Set());
  const code = (bodies: number[][]) => section(10, [bodies.length, ...bodies.flat()]);
  const prefix = [...whole.subarray(0, whole.length - code([body([0x10, 0x01]), body([0x41, 0x05, 0x1a]), body([0x01, 0x01]), body([0x01])]).length)];
  t.same([...cut], [...prefix, ...code([body([0x10, 0x01]), body([0x41, 0x05, 0x1a]), body([0x00]), body([0x01])])], 'only bi_x, which no root reaches, becomes unreachable');
  t.same([...runtimeSubset(whole, new Set(['x']))], [...whole], 'a builtin the policy calls is kept');
  const unknown = module([0xfb, 0x00]);
  t.equal(runtimeSubset(unknown, new Set()), unknown, 'an instruction it does not know: the binary as it is');
});
