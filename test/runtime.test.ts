import t from 'tap';
import binaryen from 'binaryen';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { ensureRuntime } from '../policies/runtime/build.ts';

type Exports = Record<string, (...args: number[]) => number>;
type GenImports = Partial<Record<'init' | 'eval' | 'builtins' | 'entrypoints', (...args: number[]) => number | void>>;

const wasm = await ensureRuntime();
const compiled = await WebAssembly.compile(wasm);

/** The runtime instantiated directly, with JavaScript standing in for the generated `gen.*` code. */
class Runtime {
  readonly x: Exports;

  constructor(
    readonly memory: WebAssembly.Memory,
    instance: WebAssembly.Instance,
  ) {
    this.x = instance.exports as unknown as Exports;
  }

  static async create(gen: GenImports = {}): Promise<Runtime> {
    const memory = new WebAssembly.Memory({ initial: 5 });
    let runtime: Runtime | undefined;
    const instance = await WebAssembly.instantiate(compiled, {
      env: {
        memory,
        opa_abort: (ptr: number) => {
          throw new Error(cString(memory, ptr));
        },
        opa_println: () => {},
      },
      gen: {
        init: () => gen.init?.(),
        eval: (...args: number[]) => gen.eval?.(...args) ?? 0,
        builtins: () => gen.builtins?.() ?? runtime!.x.rt_make_object(),
        entrypoints: () => gen.entrypoints?.() ?? runtime!.x.rt_make_object(),
        zone_offset: () => 0,
      },
    });
    runtime = new Runtime(memory, instance);
    return runtime;
  }

  /** Writes bytes to the heap; returns their address. */
  write(bytes: Uint8Array): number {
    const ptr = this.x.opa_malloc(bytes.length);
    new Uint8Array(this.memory.buffer).set(bytes, ptr);
    return ptr;
  }

  /** Parses JSON text into a value (0 when it is not JSON). */
  v(text: string): number {
    const bytes = new TextEncoder().encode(text);
    return this.x.opa_json_parse(this.write(bytes), bytes.length);
  }

  /**
   * The number JSON text reads as, computed (multiplied by 1): a float without the text it was
   * read from, which JSON output writes in the shortest form.
   */
  computed(text: string): number {
    const value = this.v(text);
    return value === 0 ? 0 : this.x.bi_mul(value, this.v('1'));
  }

  /** The JSON text of a value, or undefined for 0. */
  dump(value: number): string | undefined {
    return value === 0 ? undefined : cString(this.memory, this.x.opa_json_dump(value));
  }

  /** Calls an export with JSON operands and dumps the result. */
  call(name: string, ...operands: string[]): string | undefined {
    const fn = this.x[name];
    if (!fn) throw new Error(`no export ${name}`);
    return this.dump(fn(...operands.map((o) => this.v(o))));
  }

  /** A set value built from the JSON array's elements, added in the given order. */
  set(elements: string): number {
    const set = this.x.rt_make_set();
    const array = this.v(elements);
    for (let i = 0; i < this.x.rt_iter_count(array); i++) this.x.rt_set_add(set, this.x.rt_iter_value(array, i));
    return set;
  }
}

function cString(memory: WebAssembly.Memory, ptr: number): string {
  const bytes = new Uint8Array(memory.buffer);
  let end = ptr;
  while (bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.subarray(ptr, end));
}

const rt = await Runtime.create();
const { x } = rt;

t.test('value parse and dump alias the JSON ones', async (t) => {
  const text = new TextEncoder().encode('{"b":[1,2.5],"a":"x"}');
  const value = x.opa_value_parse(rt.write(text), text.length);
  t.equal(cString(rt.memory, x.opa_value_dump(value)), '{"a":"x","b":[1,2.5]}');
});

t.test('ABI version globals', async (t) => {
  const exports = (await WebAssembly.instantiate(compiled, {
    env: { memory: new WebAssembly.Memory({ initial: 5 }), opa_abort: () => {}, opa_println: () => {} },
    gen: { init: () => {}, eval: () => 0, builtins: () => 0, entrypoints: () => 0, zone_offset: () => 0 },
  })).exports as Record<string, WebAssembly.Global>;
  t.equal(exports.opa_wasm_abi_version!.value, 1);
  t.equal(exports.opa_wasm_abi_minor_version!.value, 3);
  const imports = WebAssembly.Module.imports(compiled).map((i) => `${i.module}.${i.name}`);
  t.notOk(imports.includes('env.abort'), 'AssemblyScript abort is not imported');
  t.ok(imports.includes('env.opa_abort'));
  for (const name of ['init', 'eval', 'builtins', 'entrypoints']) t.ok(imports.includes(`gen.${name}`), `imports gen.${name}`);
});

t.test('JSON round trips', async (t) => {
  const same = [
    'null', 'true', 'false', '0', '-1', '42', '9223372036854775807', '-9223372036854775808',
    '"plain"', '""', '[]', '{}', '[[],{},[{}]]', '[1,"two",null,true,false]',
    '{"a":{"b":{"c":[1,2,3]}}}',
    // Integers beyond i64 keep their text.
    '123456789012345678901234567890', '-99999999999999999999', '9223372036854775808',
    // Non-ASCII stays UTF-8.
    '"héllo wörld ✓ 😀"', '"日本語"',
    // Escapes JSON requires.
    '"quote \\" backslash \\\\ newline \\n tab \\t cr \\r bs \\b ff \\f nul \\u0000 us \\u001f"',
  ];
  for (const text of same) t.equal(rt.dump(rt.v(text)), text, text);

  t.equal(rt.dump(rt.v(' { "b" : 1 , "a" : [ 1 , 2 ] } ')), '{"a":[1,2],"b":1}', 'whitespace');
  t.equal(rt.dump(rt.v('"\\u00e9\\u2713\\ud83d\\ude00\\/"')), '"é✓😀/"', 'unicode escapes decode to UTF-8');
  t.equal(rt.dump(rt.v('"\\ud800x"')), '"\uFFFDx"', 'a lone surrogate becomes U+FFFD');
  t.equal(rt.dump(rt.v('{"a":1,"a":2}')), '{"a":2}', 'a repeated key keeps the last value');
});

const FLOATS = [
  '0.1', '1.5', '-2.25', '3.0', '-0.0', '1e21', '1e-7', '123.456', '5e-324', '1.7976931348623157e308',
  '2.5e10', '0.000001', '1.2345678901234567', '1E+2', '1.0000000000000002', '9007199254740993.0',
  '0.30000000000000004', '12345678901234567890.5', '4.35', '100e-2',
];

t.test('computed floats print like JavaScript', async (t) => {
  for (const text of FLOATS) t.equal(rt.dump(rt.computed(text)), JSON.stringify(JSON.parse(text)), text);
});

t.test('a float read from JSON is written as it was written, as OPA keeps a number\'s text', async (t) => {
  for (const text of FLOATS) t.equal(rt.dump(rt.v(text)), text, text);
  t.equal(rt.dump(rt.v('[1.50, 2, 1e6]')), '[1.50,2,1e6]');
  t.equal(rt.call('bi_plus', '1.50', '0'), '1.5', 'arithmetic gives a new number, in the shortest form');
});

t.test('strings with specials at every position', async (t) => {
  // Covers the eight-bytes-at-a-time scan in parse and dump around each special byte.
  let failures = 0;
  for (const special of ['"', '\\', '\n', '\u0001', 'é', '😀', '\u2028']) {
    for (let len = 0; len < 24; len++) {
      for (let at = 0; at <= len; at++) {
        const text = JSON.stringify('x'.repeat(at) + special + 'y'.repeat(len - at));
        if (rt.dump(rt.v(text)) !== text) failures++;
      }
    }
  }
  t.equal(failures, 0);
});

t.test('floats: random doubles print and parse exactly as JavaScript does', async (t) => {
  const view = new DataView(new ArrayBuffer(8));
  const start = x.opa_heap_ptr_get();
  let failures = 0;
  for (let i = 0; i < 3000; i++) {
    view.setUint32(0, Math.floor(Math.random() * 2 ** 32));
    view.setUint32(4, Math.floor(Math.random() * 2 ** 32));
    const f = i % 2 ? view.getFloat64(0) : Math.random() * 10 ** Math.floor(Math.random() * 40 - 20);
    if (!Number.isFinite(f)) continue;
    // Long mantissas and exponents take the exact (slow) parsing path.
    const long = `${f.toPrecision(21)}`;
    if (rt.dump(rt.computed(JSON.stringify(f))) !== JSON.stringify(f)) failures++;
    // (An integer literal beyond i64 keeps its text instead.)
    const expected = /^-?\d+$/.test(long) && !Number.isSafeInteger(Number(long)) ? long : JSON.stringify(Number(long));
    if (rt.dump(rt.computed(long)) !== expected) failures++;
    x.opa_heap_ptr_set(start);
  }
  t.equal(failures, 0);
  t.equal(rt.v('1e400'), 0, 'beyond the f64 range is refused');
  t.equal(rt.dump(rt.computed('2.4703282292062328e-324')), '5e-324', 'rounds up to the smallest subnormal');
  t.equal(rt.dump(rt.computed('2.4703282292062327e-324')), '0', 'rounds down to zero');
  t.equal(rt.dump(rt.computed('0.1000000000000000055511151231257827021181583404541015625')), '0.1', 'many digits');
});

t.test('invalid JSON is 0', async (t) => {
  for (const text of ['', '[1,]', '{"a"}', '{"a":1,}', 'tru', 'nul', '01', '1.', '.5', '-', '1e', '"abc', '"a\u0001b"', '[1 2]', '{1:2}', '"\\x"', '1 2', '[']) {
    t.equal(rt.v(text), 0, JSON.stringify(text));
  }
});

t.test('nesting', async (t) => {
  const arrays = '['.repeat(200) + '1' + ']'.repeat(200);
  t.equal(rt.dump(rt.v(arrays)), arrays);
  const objects = '{"a":'.repeat(200) + 'null' + '}'.repeat(200);
  t.equal(rt.dump(rt.v(objects)), objects);
  t.equal(rt.v('['.repeat(100000)), 0, 'absurd depth is refused, not a stack overflow');
});

t.test('objects and sets are sorted', async (t) => {
  t.equal(rt.dump(rt.v('{"zeta":1,"alpha":2,"mid":3,"al":4,"":5}')), '{"":5,"al":4,"alpha":2,"mid":3,"zeta":1}');
  const mixed = '[{"a":1},[1],"b",2,true,null,false,"a",1.5,[0],{}]';
  t.equal(rt.dump(rt.set(mixed)), '[null,false,true,1.5,2,"a","b",[0],[1],{},{"a":1}]', 'value order across types');
  t.equal(rt.dump(rt.set('[3,1,2,1,3.0,1.0]')), '[1,2,3]', 'no duplicates; 1 == 1.0');

  const object = x.rt_make_object();
  for (const key of ['"m"', '3', 'null', '"a"', '[1]']) x.rt_object_insert(object, rt.v(key), rt.v('0'));
  t.equal(rt.dump(object), '{"null":0,"3":0,"a":0,"m":0,"[1]":0}', 'non-string keys order by type and dump as their JSON text');

  const shuffled = Array.from({ length: 200 }, (_, i) => (i * 113) % 200);
  t.equal(rt.dump(rt.set(JSON.stringify(shuffled))), JSON.stringify([...shuffled].sort((a, b) => a - b)), 'large sets stay sorted');

  const nested = x.rt_make_set();
  x.rt_set_add(nested, rt.set('[2]'));
  x.rt_set_add(nested, rt.set('[1,2]'));
  x.rt_set_add(nested, rt.set('[1]'));
  t.equal(rt.dump(nested), '[[1],[1,2],[2]]', 'sets of sets');
});

t.test('parsed objects: keys in any order, a repeated key keeps its last value', async (t) => {
  // The parser places members by scanning back from the last key up to 8 keys and through
  // objectInsert beyond, so the objects cross that size. Keys share first bytes (compared past
  // them), and some are written escaped, which must still match their plain spelling.
  const utf8Order = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  const escaped = (key: string) => `"${Array.from(key, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`;
  const pool = ['', 'a', 'ab', 'b', 'ba', 'é', 'k1', 'k10', 'k2', 'action', 'object', 'user', 'zz'];
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const start = x.opa_heap_ptr_get();
  let failures = 0;
  let mostKeys = 0;
  for (let round = 0; round < 500; round++) {
    const members = Array.from({ length: 1 + random(20) }, (_, i): [string, number] => [pool[random(pool.length)]!, i]);
    const text = `{${members.map(([key, v]) => `${random(4) ? JSON.stringify(key) : escaped(key)}:${v}`).join(',')}}`;
    const last = new Map(members);
    mostKeys = Math.max(mostKeys, last.size);
    const expected = `{${[...last.keys()].sort(utf8Order).map((key) => `${JSON.stringify(key)}:${last.get(key)}`).join(',')}}`;
    if (rt.dump(rt.v(text)) !== expected) failures++;
    x.opa_heap_ptr_set(start);
  }
  t.equal(failures, 0);
  t.ok(mostKeys > 8, 'some objects outgrow the backward scan');
});

t.test('object lookups at every size, with keys sharing long prefixes', async (t) => {
  // Small objects are searched key by key, larger ones by bisection; keys are compared eight
  // bytes at a time, so they share prefixes of up to 17 bytes and differ at every position.
  const utf8Order = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  const keys = ['', 'a', 'é', 'ab', 'b', ...Array.from({ length: 18 }, (_, i) => 'k'.repeat(i) + 'x'), 'kkkkkkkkz', 'kkkkkkkk\u007f'];
  let failures = 0;
  for (let size = 1; size <= keys.length; size++) {
    const present = keys.slice(0, size);
    const object = rt.v(JSON.stringify(Object.fromEntries(present.map((key, i) => [key, i]))));
    if (x.rt_iter_count(object) !== size) failures++;
    const inOrder = Array.from({ length: size }, (_, i) => JSON.parse(rt.dump(x.rt_iter_key(object, i))!) as string);
    if (JSON.stringify(inOrder) !== JSON.stringify([...present].sort(utf8Order))) failures++;
    for (const key of keys) {
      const want = present.includes(key) ? String(present.indexOf(key)) : undefined;
      if (rt.dump(x.rt_dot(object, rt.v(JSON.stringify(key)))) !== want) failures++;
    }
    if (x.rt_dot(object, rt.v('1')) !== 0) failures++;
  }
  t.equal(failures, 0);

  const mixed = x.rt_make_object();
  for (const key of ['"m"', '3', 'null', '"a"', '[1]']) x.rt_object_insert(mixed, rt.v(key), rt.v(key));
  for (const key of ['"m"', '3', 'null', '"a"', '[1]']) t.equal(rt.dump(x.rt_dot(mixed, rt.v(key))), key, `typed key ${key}`);
  for (const key of ['"3"', '"null"', '"[1]"', '3.5']) t.equal(x.rt_dot(mixed, rt.v(key)), 0, `no key ${key}`);
});

t.test('compare and equal', async (t) => {
  const eq = (a: string, b: string) => x.rt_equal(rt.v(a), rt.v(b));
  t.equal(eq('1', '1.0'), 1);
  t.equal(eq('1', '1'), 1);
  t.equal(eq('1', '2'), 0);
  t.equal(eq('1', '"1"'), 0);
  t.equal(eq('{"a":[1,{"b":2}]}', '{"a":[1.0,{"b":2.0}]}'), 1);
  t.equal(eq('{"a":1}', '{"a":1,"b":2}'), 0);
  t.equal(eq('123456789012345678901234567890', '123456789012345678901234567890'), 1);
  t.equal(eq('9007199254740993', '9007199254740992.0'), 0, 'integers compare exactly against floats');

  // Strictly ascending in value order.
  const ascending = [
    'null', 'false', 'true', '-99999999999999999999', '-1.5', '-1', '0', '0.5', '1', '9223372036854775807',
    '9223372036854775808.5e0', '99999999999999999999', '""', '"A"', '"a"', '"ab"', '"b"', '"é"',
    '[]', '[1]', '[1,2]', '[2]', '{}', '{"a":1}', '{"a":1,"b":1}', '{"a":2}', '{"b":0}',
  ];
  for (let i = 0; i + 1 < ascending.length; i++) {
    const [a, b] = [ascending[i]!, ascending[i + 1]!];
    t.equal(rt.call('bi_lt', a, b), 'true', `${a} < ${b}`);
    t.equal(rt.call('bi_gt', b, a), 'true', `${b} > ${a}`);
    t.equal(rt.call('bi_gte', a, b), 'false', `not ${a} >= ${b}`);
  }
  t.equal(rt.call('bi_lt', '{"a":1,"z":0}', '{"b":0}'), 'true', 'objects compare key by key before values');
  t.equal(rt.dump(x.bi_lt!(rt.set('[1,2]'), rt.set('[1,3]'))), 'true', 'sets compare by sorted elements');
  t.equal(rt.dump(x.bi_lt!(rt.v('{}'), rt.set('[]'))), 'true', 'objects before sets');
  t.equal(rt.call('bi_lte', '2', '2.0'), 'true');
  t.equal(rt.call('bi_equal', '[1,2]', '[1.0,2]'), 'true');
  t.equal(rt.call('bi_neq', '"a"', '"b"'), 'true');
  t.equal(rt.call('bi_neq', '1', '1.0'), 'false');
});

t.test('dot, length and iteration', async (t) => {
  const object = rt.v('{"name":"alice","roles":["admin","dev"],"7":true}');
  const dot = (c: number, key: string) => rt.dump(x.rt_dot(c, rt.v(key)));
  t.equal(dot(object, '"name"'), '"alice"');
  t.equal(dot(object, '"missing"'), undefined);
  t.equal(dot(object, '7'), undefined, 'object keys are typed');
  t.equal(dot(object, '"7"'), 'true');
  const roles = x.rt_dot(object, rt.v('"roles"'));
  t.equal(dot(roles, '1'), '"dev"');
  t.equal(dot(roles, '1.0'), '"dev"', 'an integral float indexes an array');
  t.equal(dot(roles, '1.5'), undefined);
  t.equal(dot(roles, '-1'), undefined);
  t.equal(dot(roles, '2'), undefined);
  t.equal(dot(roles, '"0"'), undefined);
  const set = rt.set('["x","y"]');
  t.equal(dot(set, '"y"'), '"y"', 'a set member is its own value');
  t.equal(dot(set, '"z"'), undefined);
  t.equal(dot(rt.v('"str"'), '0'), undefined, 'scalars have no members');

  t.equal(rt.dump(x.rt_len(rt.v('"héllo"'))), '5', 'string length counts code points');
  t.equal(rt.dump(x.rt_len(object)), '3');
  t.equal(rt.dump(x.rt_len(set)), '2');
  t.equal(rt.dump(x.rt_len(rt.v('[]'))), '0');
  t.equal(x.rt_len(rt.v('12')), 0, 'numbers have no length');

  const iterate = (c: number) =>
    Array.from({ length: x.rt_iter_count(c) }, (_, i) => `${rt.dump(x.rt_iter_key(c, i))}=${rt.dump(x.rt_iter_value(c, i))}`);
  t.same(iterate(object), ['"7"=true', '"name"="alice"', '"roles"=["admin","dev"]'], 'objects iterate in key order');
  t.same(iterate(roles), ['0="admin"', '1="dev"']);
  t.same(iterate(set), ['"x"="x"', '"y"="y"']);
  t.equal(x.rt_iter_count(rt.v('"abc"')), 0);

  t.equal(x.rt_is_array(roles), 1);
  t.equal(x.rt_is_object(object), 1);
  t.equal(x.rt_is_set(set), 1);
  t.equal(x.rt_is_set(roles), 0);
  t.equal(x.rt_is_object(0), 0);
});

t.test('building values', async (t) => {
  const array = x.rt_make_array(0);
  for (let i = 0; i < 100; i++) x.rt_array_append(array, rt.v(String(i)));
  t.equal(rt.dump(array), JSON.stringify(Array.from({ length: 100 }, (_, i) => i)), 'arrays grow past their capacity');

  const object = x.rt_make_object();
  const keys = Array.from({ length: 300 }, (_, i) => `k${(i * 7919) % 300}`);
  for (const key of keys) x.rt_object_insert(object, rt.v(JSON.stringify(key)), rt.v('1'));
  const expected = Object.fromEntries([...keys].sort().map((k) => [k, 1]));
  t.equal(rt.dump(object), JSON.stringify(expected), 'inserts in any order stay sorted');
  x.rt_object_insert(object, rt.v('"k5"'), rt.v('2'));
  t.equal(rt.dump(x.rt_dot(object, rt.v('"k5"'))), '2', 'insert replaces');

  const once = x.rt_make_object();
  t.equal(x.rt_object_insert_once(once, rt.v('"a"'), rt.v('1')), 1, 'inserted');
  t.equal(x.rt_object_insert_once(once, rt.v('"a"'), rt.v('1.0')), 1, 'equal value is fine');
  t.equal(x.rt_object_insert_once(once, rt.v('"a"'), rt.v('2')), 0, 'conflict');
  t.equal(rt.dump(once), '{"a":1}');

  const results = x.rt_make_set();
  x.rt_result_set_add(results, rt.v('{"allow":true}'));
  x.rt_result_set_add(results, rt.v('7'));
  t.equal(rt.dump(results), '[{"result":7},{"result":{"allow":true}}]');
});

t.test('heap pointer', async (t) => {
  const start = x.opa_heap_ptr_get();
  const a = x.opa_malloc(10);
  t.ok(a >= start && a % 8 === 0, 'allocations are aligned');
  t.ok(x.opa_heap_ptr_get() >= a + 10);
  x.opa_heap_ptr_set(start);
  t.equal(x.opa_malloc(10), a, 'resetting the pointer frees everything after it');

  // Allocating past the end of memory grows it.
  const pages = rt.memory.buffer.byteLength / 65536;
  const big = x.opa_malloc(pages * 65536);
  new Uint8Array(rt.memory.buffer)[big + pages * 65536 - 1] = 1;
  t.ok(rt.memory.buffer.byteLength > pages * 65536, 'memory grew');
  x.opa_heap_ptr_set(start);
});

t.test('abort', async (t) => {
  t.throws(() => x.rt_abort(rt.v('"policy exploded"')), /policy exploded/);
  t.throws(() => x.rt_set_consts(rt.write(new TextEncoder().encode('{}')), 2), /invalid constants/);
});

t.test('constants', async (t) => {
  const text = new TextEncoder().encode('["a",1,{"b":[true]}]');
  x.rt_set_consts(rt.write(text), text.length);
  t.equal(rt.dump(x.rt_const(0)), '"a"');
  t.equal(rt.dump(x.rt_const(2)), '{"b":[true]}');
});

t.test('arithmetic', async (t) => {
  const cases: [string, string, string, string | undefined][] = [
    ['bi_plus', '1', '2', '3'],
    ['bi_plus', '0.1', '0.2', '0.30000000000000004'],
    ['bi_plus', '1.5', '1.5', '3'],
    // Integer overflow gives the exact big integer, as OPA's big.Int arithmetic does.
    ['bi_plus', '9223372036854775807', '1', '9223372036854775808'],
    ['bi_plus', '"a"', '1', undefined],
    ['bi_plus', 'null', '1', undefined],
    ['bi_minus', '5', '7', '-2'],
    ['bi_minus', '-9223372036854775808', '1', '-9223372036854775809'],
    ['bi_minus', '1', '"a"', undefined],
    ['bi_mul', '6', '7', '42'],
    ['bi_mul', '4294967296', '4294967296', '18446744073709551616'],
    ['bi_mul', '-9223372036854775808', '-1', '9223372036854775808'],
    ['bi_mul', '2.5', '2', '5'],
    ['bi_mul', '[]', '2', undefined],
    ['bi_div', '6', '3', '2'],
    ['bi_div', '7', '2', '3.5'],
    // Division stays in f64 beyond i64.
    ['bi_div', '-9223372036854775808', '-1', '9223372036854776000'],
    ['bi_div', '1', '0', undefined],
    ['bi_div', '1', '0.0', undefined],
    ['bi_div', '0', '5', '0'],
    ['bi_div', '1', '3', '0.3333333333333333'],
    ['bi_rem', '7', '3', '1'],
    ['bi_rem', '-7', '3', '-1'],
    ['bi_rem', '7', '-3', '1'],
    ['bi_rem', '7.0', '2', '1'],
    ['bi_rem', '7.5', '2', undefined],
    ['bi_rem', '7', '0', undefined],
    ['bi_rem', '-9223372036854775808', '-1', '0'],
    ['bi_rem', '"7"', '2', undefined],
  ];
  for (const [fn, a, b, expected] of cases) t.equal(rt.call(fn, a, b), expected, `${fn}(${a}, ${b})`);
});

t.test('set operators', async (t) => {
  const op = (fn: string, a: string, b: string) => rt.dump(x[fn]!(rt.set(a), rt.set(b)));
  t.equal(op('bi_minus', '[1,2,3,4]', '[2,4,5]'), '[1,3]');
  t.equal(op('bi_minus', '[1]', '[]'), '[1]');
  t.equal(op('bi_and', '[1,2,3]', '[2,3,4]'), '[2,3]');
  t.equal(op('bi_and', '[1]', '[2]'), '[]');
  t.equal(op('bi_or', '[1,3]', '[2,3,4]'), '[1,2,3,4]');
  t.equal(op('bi_or', '[]', '[]'), '[]');
  t.equal(rt.call('bi_and', '[1]', '[1]'), undefined, 'arrays are not sets');
  t.equal(rt.dump(x.bi_or!(rt.set('[1]'), rt.v('1'))), undefined);
  t.equal(rt.dump(x.bi_minus!(rt.set('[1]'), rt.v('1'))), undefined);
});

t.test('membership', async (t) => {
  t.equal(rt.call('bi_internal_member_2', '2', '[1,2,3]'), 'true');
  t.equal(rt.call('bi_internal_member_2', '2.0', '[1,2,3]'), 'true');
  t.equal(rt.call('bi_internal_member_2', '4', '[1,2,3]'), 'false');
  t.equal(rt.call('bi_internal_member_2', '"v"', '{"k":"v"}'), 'true', 'object values');
  t.equal(rt.call('bi_internal_member_2', '"k"', '{"k":"v"}'), 'false', 'not object keys');
  t.equal(rt.dump(x.bi_internal_member_2!(rt.v('"a"'), rt.set('["a","b"]'))), 'true');
  t.equal(rt.call('bi_internal_member_2', '"a"', '"abc"'), 'false', 'scalars contain nothing');
  t.equal(rt.call('bi_internal_member_3', '1', '"b"', '["a","b"]'), 'true');
  t.equal(rt.call('bi_internal_member_3', '0', '"b"', '["a","b"]'), 'false');
  t.equal(rt.call('bi_internal_member_3', '5', '"b"', '["a","b"]'), 'false');
  t.equal(rt.call('bi_internal_member_3', '"k"', '"v"', '{"k":"v"}'), 'true');
  t.equal(rt.call('bi_internal_member_3', '"k"', '"w"', '{"k":"v"}'), 'false');
  t.equal(rt.dump(x.bi_internal_member_3!(rt.v('"a"'), rt.v('"a"'), rt.set('["a"]'))), 'true');
});

t.test('internal.upsert', async (t) => {
  const doc = rt.v('{"a":{"b":1,"c":2},"d":3}');
  const up = (path: string, value: string) => rt.dump(x.bi_internal_upsert!(doc, rt.v(path), rt.v(value)));
  t.equal(up('["a","b"]', '9'), '{"a":{"b":9,"c":2},"d":3}');
  t.equal(up('["a","x","y"]', 'true'), '{"a":{"b":1,"c":2,"x":{"y":true}},"d":3}', 'creates objects along the path');
  t.equal(up('["d","e"]', '1'), '{"a":{"b":1,"c":2},"d":{"e":1}}', 'a non-object step is replaced');
  t.equal(up('[]', '"all"'), '"all"');
  t.equal(up('"a"', '1'), undefined, 'the path must be an array');
  t.equal(rt.dump(doc), '{"a":{"b":1,"c":2},"d":3}', 'the document is not modified');
  t.equal(rt.dump(x.bi_internal_upsert!(0, rt.v('["a"]'), rt.v('1'))), '{"a":1}', 'an undefined document starts empty');
});

t.test('aggregates', async (t) => {
  t.equal(rt.call('bi_count', '"héllo"'), '5');
  t.equal(rt.call('bi_count', '[1,2]'), '2');
  t.equal(rt.call('bi_count', '{"a":1}'), '1');
  t.equal(rt.call('bi_count', '1'), undefined);
  t.equal(rt.call('bi_sum', '[1,2,3.5]'), '6.5');
  t.equal(rt.call('bi_sum', '[]'), '0');
  t.equal(rt.call('bi_sum', '[1,"2"]'), undefined);
  t.equal(rt.call('bi_sum', '{"a":1}'), undefined);
  t.equal(rt.dump(x.bi_sum!(rt.set('[1,2]'))), '3');
  t.equal(rt.call('bi_max', '[1,3,2]'), '3');
  t.equal(rt.call('bi_max', '[1,"a",null]'), '"a"', 'any types, in value order');
  t.equal(rt.call('bi_min', '[3,1.5,2]'), '1.5');
  t.equal(rt.call('bi_max', '[]'), undefined);
  t.equal(rt.call('bi_min', '"abc"'), undefined);
  t.equal(rt.dump(x.bi_max!(rt.set('[5,1,9]'))), '9');
  t.equal(rt.dump(x.bi_min!(rt.set('[5,1,9]'))), '1');
  t.equal(rt.call('bi_sort', '[3,"b",1,null,"a",[1],2.5]'), '[null,1,2.5,3,"a","b",[1]]');
  const many = Array.from({ length: 100 }, (_, i) => (i * 37) % 100);
  t.equal(rt.call('bi_sort', JSON.stringify(many)), JSON.stringify([...many].sort((a, b) => a - b)), 'merge sort');
  t.equal(rt.dump(x.bi_sort!(rt.set('[2,1]'))), '[1,2]');
  t.equal(rt.call('bi_sort', '{"a":1}'), undefined);
  const original = rt.v('[2,1]');
  x.bi_sort!(original);
  t.equal(rt.dump(original), '[2,1]', 'sort copies');
});

t.test('number builtins', async (t) => {
  const cases: [string, string[], string | undefined][] = [
    ['bi_abs', ['-5'], '5'],
    ['bi_abs', ['-2.5'], '2.5'],
    ['bi_abs', ['-9223372036854775808'], '9223372036854775808'],
    ['bi_abs', ['-99999999999999999999'], '99999999999999999999'],
    ['bi_abs', ['"x"'], undefined],
    ['bi_round', ['2.5'], '3'],
    ['bi_round', ['-2.5'], '-3'],
    ['bi_round', ['2.4'], '2'],
    ['bi_round', ['0.49999999999999994'], '0'],
    ['bi_round', ['7'], '7'],
    ['bi_ceil', ['1.2'], '2'],
    ['bi_ceil', ['-1.2'], '-1'],
    ['bi_floor', ['1.8'], '1'],
    ['bi_floor', ['-1.2'], '-2'],
    ['bi_floor', ['null'], undefined],
    ['bi_numbers_range', ['1', '4'], '[1,2,3,4]'],
    ['bi_numbers_range', ['2', '-1'], '[2,1,0,-1]'],
    ['bi_numbers_range', ['3', '3'], '[3]'],
    ['bi_numbers_range', ['1.0', '2'], '[1,2]'],
    ['bi_numbers_range', ['1.5', '2'], undefined],
    ['bi_numbers_range', ['"1"', '2'], undefined],
    ['bi_to_number', ['null'], '0'],
    ['bi_to_number', ['true'], '1'],
    ['bi_to_number', ['false'], '0'],
    ['bi_to_number', ['12.5'], '12.5'],
    ['bi_to_number', ['"42"'], '42'],
    ['bi_to_number', ['"-1.5e3"'], '-1.5e3'],
    ['bi_to_number', ['"+7"'], '7'],
    ['bi_to_number', ['".5"'], '0.5'],
    ['bi_to_number', ['"123456789012345678901234567890"'], '123456789012345678901234567890'],
    ['bi_to_number', ['"abc"'], undefined],
    ['bi_to_number', ['" 1"'], undefined],
    ['bi_to_number', ['"1e999"'], undefined],
    ['bi_to_number', ['[]'], undefined],
    ['bi_format_int', ['255', '16'], '"ff"'],
    ['bi_format_int', ['-255', '2'], '"-11111111"'],
    ['bi_format_int', ['8', '8'], '"10"'],
    ['bi_format_int', ['12.9', '10'], '"12"'],
    ['bi_format_int', ['-12.9', '10'], '"-12"'],
    ['bi_format_int', ['-9223372036854775808', '16'], '"-8000000000000000"'],
    ['bi_format_int', ['99999999999999999999', '10'], '"99999999999999999999"'],
    ['bi_format_int', ['10', '3'], undefined],
    ['bi_format_int', ['"10"', '10'], undefined],
  ];
  for (const [fn, args, expected] of cases) t.equal(rt.call(fn, ...args), expected, `${fn}(${args.join(', ')})`);
});

t.test('integer arithmetic beyond i64 is exact', async (t) => {
  const MIN = -(2n ** 63n);
  const MAX = 2n ** 63n - 1n;
  const exact: Record<string, (a: bigint, b: bigint) => bigint> = {
    bi_plus: (a, b) => a + b,
    bi_minus: (a, b) => a - b,
    bi_mul: (a, b) => a * b,
  };
  // The number kind is the byte after the type tag (value.ts): 0 an i64, 2 big integer text.
  const kindOf = (v: number) => new Uint8Array(rt.memory.buffer)[v + 1];
  const KIND_INT = 0;
  const KIND_BIG = 2;
  const apply = (fn: string, a: number, b: number) => x[fn]!(a, b);

  /** Checks one operation on JSON operands against BigInt, value and representation. */
  const check = (fn: string, a: bigint, b: bigint, why: string) => {
    const want = exact[fn]!(a, b);
    const result = apply(fn, rt.v(`${a}`), rt.v(`${b}`));
    t.equal(rt.dump(result), `${want}`, `${fn}(${a}, ${b}): ${why}`);
    t.equal(kindOf(result), want >= MIN && want <= MAX ? KIND_INT : KIND_BIG, `${fn}(${a}, ${b}) is held as ${want >= MIN && want <= MAX ? 'an i64' : 'big integer text'}`);
  };

  check('bi_plus', MAX, 1n, 'i64 overflow on +');
  check('bi_plus', MAX, MAX, 'i64 overflow on +');
  check('bi_plus', MIN, -1n, 'i64 overflow on + below');
  check('bi_plus', MIN, MIN, 'i64 overflow on + below');
  check('bi_minus', MIN, 1n, 'i64 overflow on -');
  check('bi_minus', MAX, -1n, 'i64 overflow on -');
  check('bi_minus', 0n, MIN, 'negating i64.MIN');
  check('bi_mul', 4294967296n, 4294967296n, 'i64 overflow on *');
  check('bi_mul', 3037000500n, 3037000500n, 'just beyond i64.MAX');
  check('bi_mul', MIN, -1n, 'i64.MIN * -1');
  check('bi_mul', MIN, MIN, 'i64.MIN squared');
  check('bi_mul', MAX, -MAX, 'negative product');

  check('bi_plus', 99999999999999999999n, 1n, 'big + i64 carries into a new digit');
  check('bi_plus', 123456789012345678901234567890n, 987654321098765432109876543210n, 'big + big');
  check('bi_minus', 123456789012345678901234567890n, 987654321098765432109876543210n, 'big - big, negative');
  check('bi_plus', -123456789012345678901234567890n, 987654321098765432109876543210n, 'big + big of opposite signs');
  check('bi_minus', -99999999999999999999n, 1n, 'negative big - i64');
  check('bi_minus', 5n, 100000000000000000000n, 'i64 - big, negative');
  check('bi_mul', 12345678901234567890n, 3n, 'big * i64');
  check('bi_mul', 12345678901234567890n, -7n, 'big * negative i64');
  check('bi_mul', -12345678901234567890n, -12345678901234567890n, 'big * big of equal sign');
  check('bi_mul', 2n ** 200n, -(3n ** 100n), 'many limbs');

  check('bi_minus', 12345678901234567891n, 12345678901234567890n, 'big - big back into i64');
  check('bi_minus', 2n ** 63n, 1n, 'i64.MAX again');
  check('bi_plus', -(2n ** 63n) - 1n, 1n, 'i64.MIN again');
  check('bi_plus', 18446744073709551616n, -18446744073709551616n, 'zero');
  check('bi_mul', 99999999999999999999n, 0n, 'times zero');
  check('bi_mul', -99999999999999999999n, 1n, 'times one');

  const chained = apply('bi_mul', apply('bi_mul', rt.v('4294967296'), rt.v('4294967296')), rt.v('2'));
  t.equal(rt.dump(chained), '36893488147419103232', 'a computed big integer is an operand again');

  // Operands of every size and sign, against BigInt.
  let seed = 12345;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const randomInteger = () => {
    const digits = 1 + Math.floor(random() * 45);
    let text = `${1 + Math.floor(random() * 9)}`;
    while (text.length < digits) text += `${Math.floor(random() * 10)}`;
    return random() < 0.5 ? -BigInt(text) : BigInt(text);
  };
  const start = x.opa_heap_ptr_get();
  const failures: string[] = [];
  for (let i = 0; i < 1000; i++) {
    const [a, b] = [randomInteger(), randomInteger()];
    for (const fn of Object.keys(exact)) {
      const want = exact[fn]!(a, b);
      const result = apply(fn, rt.v(`${a}`), rt.v(`${b}`));
      const kind = want >= MIN && want <= MAX ? KIND_INT : KIND_BIG;
      if (rt.dump(result) !== `${want}` || kindOf(result) !== kind) failures.push(`${fn}(${a}, ${b})`);
    }
    x.opa_heap_ptr_set(start);
  }
  t.same(failures, [], 'random operands');
});

t.test('big integers compare exactly and round-trip through JSON', async (t) => {
  const product = x.bi_mul!(rt.v('4294967296'), rt.v('4294967297'));
  const sum = x.bi_plus!(rt.v('9223372036854775807'), rt.v('2'));
  t.equal(rt.dump(product), '18446744078004518912');
  t.equal(x.rt_equal(product, rt.v('18446744078004518912')), 1, 'a computed big integer equals the parsed one');
  t.equal(x.rt_equal(product, rt.v('18446744078004518913')), 0);
  t.equal(x.rt_equal(sum, rt.v('9223372036854775809')), 1);
  t.equal(rt.dump(x.bi_lt!(sum, product)), 'true', 'big < big');
  t.equal(rt.dump(x.bi_gt!(product, rt.v('18446744078004518911'))), 'true', 'big > big differing in the last digit');
  t.equal(rt.dump(x.bi_lt!(rt.v('9223372036854775807'), sum)), 'true', 'i64 < big');
  t.equal(rt.dump(x.bi_gt!(rt.v('-9223372036854775808'), x.bi_minus!(rt.v('0'), sum))), 'true', 'i64 > negative big');

  const ascending = [
    '-100000000000000000000', '-99999999999999999999', '-9223372036854775809', '-9223372036854775808', '0',
    '9223372036854775807', '9223372036854775808', '9223372036854775809', '18446744073709551616', '99999999999999999999',
    '100000000000000000000',
  ];
  for (let i = 0; i + 1 < ascending.length; i++) {
    const [a, b] = [ascending[i]!, ascending[i + 1]!];
    t.equal(rt.call('bi_lt', a, b), 'true', `${a} < ${b}`);
    t.equal(rt.call('bi_gt', a, b), 'false', `not ${a} > ${b}`);
    t.equal(rt.call('bi_equal', a, b), 'false', `${a} != ${b}`);
    t.equal(rt.call('bi_equal', a, a), 'true', `${a} == ${a}`);
  }
  t.equal(rt.call('bi_sort', '[100000000000000000000,-9223372036854775809,9223372036854775808,0,-99999999999999999999]'),
    '[-99999999999999999999,-9223372036854775809,0,9223372036854775808,100000000000000000000]');

  for (const value of [product, sum, x.bi_minus!(rt.v('-1'), sum), x.bi_mul!(product, product)]) {
    const text = rt.dump(value)!;
    const parsed = rt.v(text);
    t.equal(x.rt_equal(parsed, value), 1, `${text} parses back to an equal value`);
    t.equal(rt.dump(parsed), text, `${text} dumps the same again`);
    t.match(text, /^-?[1-9]\d*$/, `${text} is integer text without leading zeros`);
  }
  t.equal(rt.dump(x.bi_mul!(product, product)), `${18446744078004518912n ** 2n}`);
});

t.test('sum and abs stay exact for integers', async (t) => {
  t.equal(rt.call('bi_sum', '[9223372036854775807,9223372036854775807,2]'), '18446744073709551616');
  t.equal(rt.call('bi_sum', '[99999999999999999999,-99999999999999999998]'), '1');
  t.equal(rt.call('bi_sum', '[9007199254740993,1]'), '9007199254740994');
  t.equal(rt.call('bi_sum', '[99999999999999999999,0.5]'), '100000000000000000000', 'a float makes the sum a float');
  t.equal(rt.call('bi_abs', '-9223372036854775809'), '9223372036854775809');
  t.equal(rt.dump(x.bi_abs!(x.bi_minus!(rt.v('-9223372036854775807'), rt.v('5')))), '9223372036854775812');
});

/**
 * A policy module made the way the emitter makes one: the runtime read with binaryen and its
 * `gen.*` imports replaced by functions calling its exports. It returns
 * {"greeting": "hello", "input": input} and has one entrypoint, "main".
 */
function linkEchoPolicy(runtime: Uint8Array): Uint8Array {
  const readBinary = binaryen.readBinary as (data: Uint8Array, features: binaryen.Features) => binaryen.Module;
  const F = binaryen.Features;
  // What Node 20 runs: with every feature enabled binaryen writes encodings V8 rejects.
  const m = readBinary(runtime, F.MutableGlobals | F.NontrappingFPToInt | F.SignExt | F.BulkMemory | F.BulkMemoryOpt | F.SIMD128);
  const fn = (exportName: string) => binaryen.getExportInfo(m.getExport(exportName)).value;
  const call = (exportName: string, operands: number[], result = binaryen.i32) => m.call(fn(exportName), operands, result);
  const i32 = binaryen.i32;
  const local = (i: number) => m.local.get(i, i32);
  const constant = (i: number) => call('rt_const', [m.i32.const(i)]);

  const json = new TextEncoder().encode('["main",0,"greeting","hello","input"]');
  const init = m.block(null, [
    m.local.set(0, call('opa_malloc', [m.i32.const(json.length)])),
    ...Array.from(json, (byte, i) => m.i32.store8(i, 1, local(0), m.i32.const(byte))),
    call('rt_set_consts', [local(0), m.i32.const(json.length)], binaryen.none),
  ]);
  const entrypoints = m.block(null, [
    m.local.set(0, call('rt_make_object', [])),
    call('rt_object_insert', [local(0), constant(0), constant(1)], binaryen.none),
    local(0),
  ], i32);
  // (entrypoint, input, data) → result set
  const evaluate = m.block(null, [
    m.local.set(3, call('rt_make_object', [])),
    call('rt_object_insert', [local(3), constant(2), constant(3)], binaryen.none),
    m.if(local(1), call('rt_object_insert', [local(3), constant(4), local(1)], binaryen.none)),
    m.local.set(4, call('rt_make_set', [])),
    call('rt_result_set_add', [local(4), local(3)], binaryen.none),
    local(4),
  ], i32);

  const bodies: Record<string, { params: number; vars: number[]; body: number; result: number }> = {
    init: { params: 0, vars: [i32], body: init, result: binaryen.none },
    eval: { params: 3, vars: [i32, i32], body: evaluate, result: i32 },
    builtins: { params: 0, vars: [], body: call('rt_make_object', []), result: i32 },
    entrypoints: { params: 0, vars: [i32], body: entrypoints, result: i32 },
    zone_offset: { params: 2, vars: [], body: m.i32.const(0), result: i32 },
  };
  const placeholders: [string, string][] = [];
  for (let i = 0; i < m.getNumFunctions(); i++) {
    const info = binaryen.getFunctionInfo(m.getFunctionByIndex(i));
    if (info.module === 'gen' && info.base) placeholders.push([info.base, info.name]);
  }
  for (const [base, name] of placeholders) {
    const { params, vars, body, result } = bodies[base]!;
    m.removeFunction(name);
    m.addFunction(name, binaryen.createType(new Array(params).fill(i32)), result, vars, body);
  }
  if (!m.validate()) throw new Error('linked module is invalid');
  const binary = m.emitBinary();
  m.dispose();
  return binary;
}

t.test('a linked module runs under the OPA SDK', async (t) => {
  const policy = await loadPolicy(linkEchoPolicy(wasm));
  t.same(policy.entrypoints, { main: 0 });
  const input = { user: 'alice', roles: ['admin'], n: 1.5, big: 12345678901234567890n.toString(), é: '✓' };
  t.same(policy.evaluate(input), [{ result: { greeting: 'hello', input } }], 'fast path (opa_eval)');
  t.same(policy.evaluate(input, 'main'), [{ result: { greeting: 'hello', input } }], 'by entrypoint name');
  t.same(policy.evaluate(undefined), [{ result: { greeting: 'hello' } }], 'no input');

  // The same evaluation many times: the heap is reset each time, so memory stays put.
  const pages = policy.mem.buffer.byteLength;
  for (let i = 0; i < 2000; i++) policy.evaluate(input);
  t.equal(policy.mem.buffer.byteLength, pages, 'no growth across evaluations');

  // The older path: eval context functions.
  policy.minorVersion = 1;
  t.same(policy.evaluate({ a: [1, 2] }), [{ result: { greeting: 'hello', input: { a: [1, 2] } } }], 'eval context path');
});
