import t from 'tap';
import { CompileError } from '../policies/compiler/errors.ts';
import { parseModule } from '../policies/compiler/parse/index.ts';
import type { Body, Expr, Literal, Module, Rule, Term } from '../policies/compiler/parse/index.ts';

// ---- helpers: parse fragments and print terms compactly so shapes read at a glance -----------

const parse = (source: string): Module => parseModule('test.rego', source);
const rules = (text: string): Rule[] => parse(`package test\n${text}`).rules;
const rule = (text: string): Rule => rules(text)[0]!;
/** Parses `src` as the value of `x := src`. */
const term = (src: string): Term => rule(`x := ${src}`).value!;
/** Parses the literals of a rule body. */
const body = (src: string): Body => rule(`p if {\n${src}\n}`).body;

function show(x: Term): string {
  switch (x.type) {
    case 'null': return 'null';
    case 'boolean': return String(x.value);
    case 'number': return x.value;
    case 'string': return JSON.stringify(x.value);
    case 'var': return x.name;
    case 'ref': return `(ref ${[x.head, ...x.path].map(show).join(' ')})`;
    case 'array': return `[${x.items.map(show).join(' ')}]`;
    case 'set': return `(set ${x.items.map(show).join(' ')})`.replace(/ \)$/, ')');
    case 'object': return `{${x.entries.map(([k, v]) => `${show(k)}: ${show(v)}`).join(', ')}}`;
    case 'arraycomp': return `[${show(x.head)} | ${showBody(x.body)}]`;
    case 'setcomp': return `(setcomp ${show(x.head)} | ${showBody(x.body)})`;
    case 'objectcomp': return `{${show(x.key)}: ${show(x.value)} | ${showBody(x.body)}}`;
    case 'call': return `(call ${show(x.callee)}${x.args.map((a) => ' ' + show(a)).join('')})`;
    case 'binop': return `(${x.op} ${show(x.left)} ${show(x.right)})`;
    case 'neg': return `(neg ${show(x.operand)})`;
    case 'member': return `(in ${x.key ? show(x.key) + ' ' : ''}${show(x.value)} ${show(x.collection)})`;
  }
}

function showExpr(e: Expr): string {
  switch (e.type) {
    case 'term': return show(e.term);
    case 'assign': return `(:= ${show(e.left)} ${show(e.right)})`;
    case 'unify': return `(= ${show(e.left)} ${show(e.right)})`;
    case 'some': return `(some ${e.vars.map((v) => v.name).join(' ')})`;
    case 'somein': return `(some-in ${e.key ? show(e.key) + ' ' : ''}${show(e.value)} ${show(e.collection)})`;
    case 'every': return `(every ${e.key ? show(e.key) + ' ' : ''}${show(e.value)} ${show(e.domain)} {${showBody(e.body)}})`;
  }
}

function showLiteral(l: Literal): string {
  const withs = l.with.map((w) => ` with ${show(w.target)} as ${show(w.value)}`).join('');
  return `${l.negated ? 'not ' : ''}${showExpr(l.expr)}${withs}`;
}

const showBody = (b: Body): string => b.map(showLiteral).join('; ');

/** The test object tap passes to a subtest callback. */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

/** Parses `source`, expecting a parse error at `line:col` whose message matches `message`. */
function parseError(tt: TapTest, source: string, line: number, col: number, message: RegExp): void {
  try {
    parse(source);
  } catch (e) {
    tt.ok(e instanceof CompileError, 'throws a CompileError');
    const err = e as CompileError;
    tt.equal(err.stage, 'parse');
    tt.equal(`${err.pos?.line}:${err.pos?.col}`, `${line}:${col}`, `position of: ${err.message}`);
    tt.match(err.message, message);
    tt.equal(err.source, source);
    return;
  }
  tt.fail(`expected a parse error for ${JSON.stringify(source)}`);
}

// ---- module structure -----------------------------------------------------------------------

t.test('package and imports', async (tt) => {
  const m = parse(
    'package gatehouse.spend_approval.v1\n' +
      'import rego.v1\n' +
      'import future.keywords\n' +
      'import future.keywords.in\n' +
      'import future.keywords.every\n' +
      'import data.lib.util\n' +
      'import data.lib.util as u\n' +
      'import input.principal as who\n' +
      'import data["weird-name"].x\n',
  );
  tt.same(m.package, ['gatehouse', 'spend_approval', 'v1']);
  tt.same(m.packagePos, { file: 'test.rego', line: 1, col: 1, offset: 0 });
  tt.same(
    m.imports.map((i) => [i.path.join('/'), i.alias]),
    [
      ['rego/v1', undefined],
      ['future/keywords', undefined],
      ['future/keywords/in', undefined],
      ['future/keywords/every', undefined],
      ['data/lib/util', undefined],
      ['data/lib/util', 'u'],
      ['input/principal', 'who'],
      ['data/weird-name/x', undefined],
    ],
  );
  tt.same(m.imports[1]!.pos, { file: 'test.rego', line: 3, col: 1, offset: 51 });
  tt.notOk('alias' in m.imports[0]!, 'no alias property when none is given');
  tt.equal(m.file, 'test.rego');
  tt.equal(m.rules.length, 0);
});

t.test('package with a string key and comments everywhere', async (tt) => {
  const m = parse('# header\npackage a["b-c"] # trailing\n\n# between\np := 1 # after\n');
  tt.same(m.package, ['a', 'b-c']);
  tt.same(m.packagePos, { file: 'test.rego', line: 2, col: 1, offset: 9 });
  tt.equal(m.rules.length, 1);
});

t.test('a byte order mark and CRLF line endings are accepted', async (tt) => {
  const m = parse('\ufeffpackage a\r\np if {\r\n  x\r\n  y\r\n}\r\n');
  tt.equal(showBody(m.rules[0]!.body), 'x; y');
  tt.same(m.packagePos, { file: 'test.rego', line: 1, col: 1, offset: 1 });
  tt.same(m.rules[0]!.body[1]!.pos, { file: 'test.rego', line: 4, col: 3, offset: 27 });
});

// ---- rules ----------------------------------------------------------------------------------

t.test('complete rules', async (tt) => {
  const [def, assign, unify, cond, single, withBody] = rules(
    [
      'default allow := false',
      'limit := 100',
      'limit2 = 100',
      'allow if { input.x }',
      'deny if input.y == 1',
      'v := input.a if { input.b }',
    ].join('\n'),
  );
  tt.match(def, { kind: 'complete', name: 'allow', default: true, body: [], else: [] });
  tt.equal(show(def!.value!), 'false');
  tt.match(assign, { kind: 'complete', name: 'limit', default: false, body: [] });
  tt.equal(show(assign!.value!), '100');
  tt.equal(show(unify!.value!), '100', '`=` in a head is treated like `:=`');
  tt.match(cond, { kind: 'complete', name: 'allow' });
  tt.notOk('value' in cond!, 'a rule without a value has no value property (means true)');
  tt.equal(showBody(cond!.body), '(ref input "x")');
  tt.equal(showBody(single!.body), '(== (ref input "y") 1)', 'a single literal without braces');
  tt.equal(show(withBody!.value!), '(ref input "a")');
  tt.equal(showBody(withBody!.body), '(ref input "b")');
  tt.notOk('args' in cond! || 'key' in cond!);
});

t.test('a single-literal body may carry not, with, some and every', async (tt) => {
  const [neg, withs, some, every] = rules(
    [
      'a if not input.blocked',
      'b if allow with input.user as "bob" with data.roles as {}',
      'c if some x in input.xs',
      'd if every x in input.xs { x > 0 }',
    ].join('\n'),
  );
  tt.equal(showBody(neg!.body), 'not (ref input "blocked")');
  tt.equal(showBody(withs!.body), 'allow with (ref input "user") as "bob" with (ref data "roles") as {}');
  tt.equal(showBody(some!.body), '(some-in x (ref input "xs"))');
  tt.equal(showBody(every!.body), '(every x (ref input "xs") {(> x 0)})');
});

t.test('partial sets and partial objects', async (tt) => {
  const [set, setBare, obj, objTrue, objDot, objBare] = rules(
    [
      'reasons contains msg if { msg := "no" }',
      'tags contains "fixed"',
      'by_id[id] := item if { some item in input.items; id := item.id }',
      'seen[name] if { name := input.names[_] }',
      'limits.daily := 10',
      'roles["admin"] := 1',
    ].join('\n'),
  );
  tt.match(set, { kind: 'partialSet', name: 'reasons' });
  tt.equal(show(set!.key!), 'msg');
  tt.notOk('value' in set!);
  tt.match(setBare, { kind: 'partialSet', name: 'tags', body: [] });
  tt.equal(show(setBare!.key!), '"fixed"');
  tt.match(obj, { kind: 'partialObject', name: 'by_id' });
  tt.equal(show(obj!.key!), 'id');
  tt.equal(show(obj!.value!), 'item');
  tt.equal(showBody(obj!.body), '(some-in item (ref input "items")); (:= id (ref item "id"))');
  tt.match(objTrue, { kind: 'partialObject', name: 'seen' });
  tt.equal(show(objTrue!.key!), 'name');
  tt.notOk('value' in objTrue!, '`p[k] if` has the value true');
  tt.match(objDot, { kind: 'complete', name: 'limits', path: ['limits', 'daily'], body: [] });
  tt.notOk('key' in objDot!, 'string keys of a head lead to the rule');
  tt.match(objBare, { kind: 'complete', name: 'roles', path: ['roles', 'admin'] });
});

t.test('rule heads with refs', async (tt) => {
  const [deep, obj, sets, setDeep, fn, dflt, general] = rules(
    [
      'a.b.c := 1',
      'a.b[x] := y if { some x, y in input }',
      'a.c[k] contains v if { some k, v in input }',
      'a.d.e contains 1',
      'lib.util.f(x) := x',
      'default a.b.g := 0',
      'g.h[x].i[y] := 1 if { some x, y in input }',
    ].join('\n'),
  );
  tt.match(deep, { kind: 'complete', name: 'a', path: ['a', 'b', 'c'] });
  tt.match(obj, { kind: 'partialObject', name: 'a', path: ['a', 'b'] });
  tt.equal(show(obj!.key!), 'x');
  tt.match(sets, { kind: 'partialObjectOfSets', path: ['a', 'c'] });
  tt.equal(show(sets!.key!), 'k');
  tt.equal(show(sets!.value!), 'v');
  tt.match(setDeep, { kind: 'partialSet', path: ['a', 'd', 'e'] });
  tt.match(fn, { kind: 'function', name: 'lib', path: ['lib', 'util', 'f'] });
  tt.equal(fn!.args!.length, 1);
  tt.match(dflt, { kind: 'complete', default: true, path: ['a', 'b', 'g'] });
  tt.match(general, { kind: 'partialObject', path: ['g', 'h'] });
  tt.equal(show(general!.key!), 'x');
  tt.same(general!.subKeys!.map(show), ['"i"', 'y']);
});

t.test('functions', async (tt) => {
  const [f, g, h, d] = rules(
    [
      'f(x, [a, b]) := v if { v := x + a + b }',
      'g(x) if { x > 1 }',
      'h(x, _) := x * 2',
      'default h(_, _) := 0',
    ].join('\n'),
  );
  tt.match(f, { kind: 'function', name: 'f' });
  tt.same(f!.args!.map(show), ['x', '[a b]']);
  tt.equal(show(f!.value!), 'v');
  tt.match(g, { kind: 'function', name: 'g' });
  tt.notOk('value' in g!);
  tt.same(h!.args!.map(show), ['x', '_'], '`_` is kept as written');
  tt.equal(show(h!.value!), '(* x 2)');
  tt.same(h!.body, []);
  tt.match(d, { kind: 'function', name: 'h', default: true });
  tt.equal(show(d!.value!), '0');
});

t.test('else chains', async (tt) => {
  const [p, f, bare, single] = rules(
    [
      'p := 1 if { input.a } else := 2 if { input.b } else := 3',
      'f(x) := "small" if { x < 10 }',
      'else := "big"',
      'q if { input.a } else if { input.b }',
      'r := 1 if input.a else = 2 if input.b',
    ].join('\n'),
  );
  tt.equal(p!.else.length, 2);
  tt.equal(show(p!.else[0]!.value!), '2');
  tt.equal(showBody(p!.else[0]!.body), '(ref input "b")');
  tt.equal(show(p!.else[1]!.value!), '3');
  tt.same(p!.else[1]!.body, [], 'an unconditional else has an empty body');
  tt.same(p!.else[0]!.pos, { file: 'test.rego', line: 2, col: 23, offset: 35 });
  tt.match(f, { kind: 'function', name: 'f' });
  tt.equal(show(f!.else[0]!.value!), '"big"', 'else may start on the next line');
  tt.notOk('value' in bare!.else[0]!, '`else if` means the value true');
  tt.equal(showBody(bare!.else[0]!.body), '(ref input "b")');
  tt.equal(showBody(single!.body), '(ref input "a")');
  tt.equal(show(single!.else[0]!.value!), '2');
  tt.equal(showBody(single!.else[0]!.body), '(ref input "b")');
});

t.test('rule positions', async (tt) => {
  const [a, b] = rules('allow if true\n\ndefault  deny := true');
  tt.same(a!.pos, { file: 'test.rego', line: 2, col: 1, offset: 13 });
  tt.same(b!.pos, { file: 'test.rego', line: 4, col: 1, offset: 28 }, 'a default rule starts at `default`');
  tt.same(b!.value!.pos, { file: 'test.rego', line: 4, col: 18, offset: 45 });
});

// ---- bodies ---------------------------------------------------------------------------------

t.test('literals separated by newlines and semicolons', async (tt) => {
  tt.equal(showBody(body('a; b\nc\n\n  d; e')), 'a; b; c; d; e');
  tt.equal(showBody(body('x := 1; y = x')), '(:= x 1); (= y x)');
  tt.equal(showBody(body('[a, b] := input.pair')), '(:= [a b] (ref input "pair"))');
  tt.equal(showBody(body('{"k": v} = input.o')), '(= {"k": v} (ref input "o"))');
  tt.equal(showBody(body('count(input.xs) > 0')), '(> (call count (ref input "xs")) 0)');
  tt.equal(showBody(body('startswith(input.path, "/admin")')), '(call startswith (ref input "path") "/admin")');
});

t.test('not and with', async (tt) => {
  const [lit] = body('not allowed with input.user as "u" with data.x.y as {"a": 1}');
  tt.equal(lit!.negated, true);
  tt.equal(showExpr(lit!.expr), 'allowed');
  tt.equal(lit!.with.length, 2);
  tt.equal(show(lit!.with[0]!.target), '(ref input "user")');
  tt.equal(show(lit!.with[1]!.value), '{"a": 1}');
  tt.same(lit!.with[1]!.pos, { file: 'test.rego', line: 3, col: 36, offset: 55 });
  tt.same(lit!.pos, { file: 'test.rego', line: 3, col: 1, offset: 20 }, 'a negated literal starts at `not`');
  tt.equal(showBody(body('allow with input as {}')), 'allow with input as {}', '`with input` targets the var');
  tt.equal(showBody(body('x := f(1) with data.f as g')), '(:= x (call f 1)) with (ref data "f") as g');
});

t.test('some', async (tt) => {
  tt.equal(showBody(body('some x, y')), '(some x y)');
  tt.equal(showBody(body('some x\nx = 1')), '(some x); (= x 1)');
  tt.equal(showBody(body('some x in input.xs')), '(some-in x (ref input "xs"))');
  tt.equal(showBody(body('some k, v in input.obj')), '(some-in k v (ref input "obj"))');
  tt.equal(showBody(body('some [a, b] in pairs')), '(some-in [a b] pairs)');
  tt.equal(showBody(body('some _, v in {"a": 1} | {"b": 2}')), '(some-in _ v (| {"a": 1} {"b": 2}))');
  const [decl] = body('some x, y');
  tt.same(decl!.expr.type === 'some' && decl!.expr.vars.map((v) => v.pos.col), [6, 9]);
  tt.same(decl!.expr.pos, { file: 'test.rego', line: 3, col: 1, offset: 20 });
});

t.test('every', async (tt) => {
  tt.equal(showBody(body('every x in input.xs { x > 0; x < 10 }')), '(every x (ref input "xs") {(> x 0); (< x 10)})');
  tt.equal(
    showBody(body('every k, v in input.obj {\n  startswith(k, "a")\n  v\n}')),
    '(every k v (ref input "obj") {(call startswith k "a"); v})',
  );
  tt.equal(showBody(body('every x in xs { x } with input as 1')), '(every x xs {x}) with input as 1');
});

t.test('membership at the top of a literal', async (tt) => {
  tt.equal(showBody(body('"admin" in input.roles')), '(in "admin" (ref input "roles"))');
  tt.equal(showBody(body('"k", 1 in {"k": 1}')), '(in "k" 1 {"k": 1})');
  tt.equal(showBody(body('not x in xs')), 'not (in x xs)');
  tt.equal(showBody(body('ok := k, v in o')), '(:= ok (in k v o))');
  tt.equal(show(term('[1 in xs, 2]')), '[(in 1 xs) 2]', 'inside a list a comma separates elements');
});

// ---- terms ----------------------------------------------------------------------------------

t.test('scalars', async (tt) => {
  tt.equal(term('null').type, 'null');
  tt.match(term('true'), { type: 'boolean', value: true });
  tt.match(term('false'), { type: 'boolean', value: false });
  for (const n of ['0', '42', '1.5', '1e3', '2E-7', '0.25e+10', '12345678901234567890', '.5']) {
    tt.match(term(n), { type: 'number', value: n }, `number ${n} keeps its source text`);
  }
  tt.match(term('-1'), { type: 'number', value: '-1' });
  tt.match(term('-1.5e-3'), { type: 'number', value: '-1.5e-3' });
  tt.match(term('-.5'), { type: 'number', value: '-.5' });
  tt.same(term('-7').pos, { file: 'test.rego', line: 2, col: 6, offset: 18 }, 'starts at the minus');
});

t.test('strings', async (tt) => {
  const str = (src: string): string => {
    const v = term(src);
    return v.type === 'string' ? v.value : `not a string: ${v.type}`;
  };
  tt.equal(str('"plain"'), 'plain');
  tt.equal(str('""'), '');
  tt.equal(str(String.raw`"q\"b\\s\/b\bf\fn\nr\rt\t"`), 'q"b\\s/b\bf\fn\nr\rt\t');
  tt.equal(str(String.raw`"\u00e9\u20AC"`), 'é€');
  tt.equal(str(String.raw`"\ud83d\ude00!"`), '😀!', 'a surrogate pair forms one character');
  tt.equal(str(String.raw`"\ud83d!"`), '\ufffd!', 'a lone high surrogate becomes U+FFFD');
  tt.equal(str(String.raw`"\ude00"`), '\ufffd', 'a lone low surrogate becomes U+FFFD');
  tt.equal(str('"héllo 😀"'), 'héllo 😀');
  tt.equal(str('`raw \\n "text"`'), 'raw \\n "text"', 'raw strings have no escapes');
  tt.equal(str('`two\nlines`'), 'two\nlines');
  tt.same(rules('a := `x\ny`\nb := 1')[1]!.pos, { file: 'test.rego', line: 4, col: 1, offset: 24 }, 'lines inside raw strings are counted');
});

t.test('vars and refs', async (tt) => {
  tt.match(term('x'), { type: 'var', name: 'x' });
  tt.match(term('_'), { type: 'var', name: '_' });
  tt.equal(show(term('input')), 'input');
  tt.equal(show(term(`a.b[c]["d"][0]`)), '(ref a "b" c "d" 0)');
  tt.equal(show(term('data.pkg.rule')), '(ref data "pkg" "rule")');
  tt.equal(show(term('xs[_].name')), '(ref xs _ "name")');
  tt.equal(show(term('input.if.else')), '(ref input "if" "else")', 'keywords are names after a dot');
  tt.equal(show(term('a[b[c]]')), '(ref a (ref b c))');
  tt.equal(show(term('a[x + 1]')), '(ref a (+ x 1))');
  tt.equal(show(term('f(x).y')), '(ref (call f x) "y")');
  tt.equal(show(term('f(x)[0].z')), '(ref (call f x) 0 "z")');
  tt.equal(show(term('[1, 2][0]')), '(ref [1 2] 0)');
  const ref = term('input.user.roles');
  tt.ok(ref.type === 'ref');
  if (ref.type === 'ref') {
    tt.same(ref.pos, { file: 'test.rego', line: 2, col: 6, offset: 18 });
    tt.same(ref.path.map((p) => p.pos.col), [12, 17], 'each key is positioned at its name');
  }
});

t.test('calls', async (tt) => {
  tt.equal(show(term('count(x)')), '(call count x)');
  tt.equal(show(term('object.get(o, "k", null)')), '(call (ref object "get") o "k" null)');
  tt.equal(show(term('data.lib.f(x)')), '(call (ref data "lib" "f") x)');
  tt.equal(show(term('lib.f(x, y,)')), '(call (ref lib "f") x y)', 'a trailing comma is allowed');
  tt.equal(show(term('time.now_ns()')), '(call (ref time "now_ns"))');
  tt.equal(show(term('contains(s, "a")')), '(call contains s "a")', '`contains` names the builtin outside heads');
  tt.equal(show(term('f(g(x), [1])')), '(call f (call g x) [1])');
  tt.match(term('set()'), { type: 'set', items: [] });
  tt.match(term('set(x)'), { type: 'call' }, 'only an empty set() is a set literal');
});

t.test('collections', async (tt) => {
  tt.same(term('[]'), { type: 'array', items: [], pos: { file: 'test.rego', line: 2, col: 6, offset: 18 } });
  tt.match(term('{}'), { type: 'object', entries: [] }, '`{}` is the empty object');
  tt.equal(show(term('[1, "a", [true]]')), '[1 "a" [true]]');
  tt.equal(show(term('[1, 2,]')), '[1 2]');
  tt.equal(show(term('{"a": 1, k: v, [1]: {2}}')), '{"a": 1, k: v, [1]: (set 2)}');
  tt.equal(show(term('{"a": 1,}')), '{"a": 1}');
  tt.equal(show(term('{1, 2, "x"}')), '(set 1 2 "x")');
  tt.equal(show(term('{x + 1: y}')), '{(+ x 1): y}');
  tt.equal(show(term('{-1}')), '(set -1)');
  tt.equal(show(term('[\n  1,\n  2\n]')), '[1 2]');
  tt.equal(show(term('{\n  "a": 1,\n  "b": [\n    2,\n  ],\n}')), '{"a": 1, "b": [2]}');
});

t.test('comprehensions', async (tt) => {
  tt.equal(show(term('[x | x := input.xs[_]]')), '[x | (:= x (ref input "xs" _))]');
  tt.equal(show(term('{x | some x in xs; x > 1}')), '(setcomp x | (some-in x xs); (> x 1))');
  tt.equal(show(term('{k: v | some k, v in o}')), '{k: v | (some-in k v o)}');
  tt.equal(show(term('[x.name |\n  some x in xs\n  x.on\n]')), '[(ref x "name") | (some-in x xs); (ref x "on")]');
  tt.equal(show(term('{k + 1: v | v := o[k]}')), '{(+ k 1): v | (:= v (ref o k))}');
  tt.equal(show(term('[-x | x := xs[_]]')), '[(neg x) | (:= x (ref xs _))]');
  tt.equal(show(term('count({x | x := xs[_]})')), '(call count (setcomp x | (:= x (ref xs _))))');
  tt.equal(show(term('[x * 2 | some x in xs]')), '[(* x 2) | (some-in x xs)]', 'a head may be an expression');
  tt.equal(show(term('{x % 2 | some x in xs}')), '(setcomp (% x 2) | (some-in x xs))');
  tt.equal(show(term('{k: v + 1 | some k, v in o}')), '{k: (+ v 1) | (some-in k v o)}');
  tt.equal(show(term('[[y | y := r[_]] | some r in rows]')), '[[y | (:= y (ref r _))] | (some-in r rows)]');
});

t.test('a bar after the first element: comprehension or set union', async (tt) => {
  tt.equal(show(term('[a | b]')), '[a | b]', 'a comprehension wins, as in OPA');
  tt.equal(show(term('{a | b}')), '(setcomp a | b)');
  tt.equal(show(term('[a | b, c]')), '[(| a b) c]', 'a body stopping at a comma was a union');
  tt.equal(show(term('{a | b, c}')), '(set (| a b) c)');
  tt.equal(show(term('{"u": a | b, "i": a & b}')), '{"u": (| a b), "i": (& a b)}');
  tt.equal(show(term('{"a": 1, "u": a | b}')), '{"a": 1, "u": (| a b)}', 'later values are plain expressions');
  tt.equal(show(term('[(a | b)]')), '[(| a b)]', 'parentheses make a union explicit');
  tt.equal(show(term('[1, a | b]')), '[1 (| a b)]');
  tt.equal(show(term('f(a | b)')), '(call f (| a b))');
});

t.test('parentheses and unary minus', async (tt) => {
  tt.equal(show(term('(1 + 2) * 3')), '(* (+ 1 2) 3)');
  tt.equal(show(term('-x')), '(neg x)');
  tt.equal(show(term('-x.y * 2')), '(* (neg (ref x "y")) 2)');
  tt.equal(show(term('-(a + b)')), '(neg (+ a b))');
  tt.equal(show(term('- 1')), '(neg 1)', 'only a minus directly on the digits makes a literal');
  tt.equal(show(term('x - -1')), '(- x -1)');
  tt.equal(show(term('x -1')), '(- x 1)', 'a minus after an operand is subtraction, as in OPA');
  tt.equal(show(term('(x)')), 'x');
  tt.same(term('(x) + 1').pos, { file: 'test.rego', line: 2, col: 6, offset: 18 }, 'a parenthesised term starts at `(`');
});

// ---- operators ------------------------------------------------------------------------------

t.test('operator precedence and associativity', async (tt) => {
  const cases: Array<[string, string]> = [
    ['1 + 2 * 3', '(+ 1 (* 2 3))'],
    ['1 * 2 + 3', '(+ (* 1 2) 3)'],
    ['a - b - c', '(- (- a b) c)'],
    ['a / b % c * d', '(* (% (/ a b) c) d)'],
    ['a & b | c & d', '(| (& a b) (& c d))'],
    ['a | b | c', '(| (| a b) c)'],
    ['a + b & c', '(& (+ a b) c)'],
    ['a | b == c', '(== (| a b) c)'],
    ['a == b != c', '(!= (== a b) c)'],
    ['a < b + 1', '(< a (+ b 1))'],
    ['a <= b', '(<= a b)'],
    ['a >= b', '(>= a b)'],
    ['a > b', '(> a b)'],
    ['x in xs == true', '(in x (== xs true))'],
    ['x == 1 in s', '(in (== x 1) s)'],
    ['x in a in b', '(in (in x a) b)'],
    ['x in a | b', '(in x (| a b))'],
    ['-a * -b', '(* (neg a) (neg b))'],
    ['count(x) + 1 > 2 * y', '(> (+ (call count x) 1) (* 2 y))'],
  ];
  for (const [src, want] of cases) tt.equal(show(term(src)), want, src);
});

t.test('assignment and unification bind loosest', async (tt) => {
  tt.equal(showBody(body('x := a == b')), '(:= x (== a b))');
  tt.equal(showBody(body('x = y + 1')), '(= x (+ y 1))');
  tt.equal(showBody(body('x := y in s')), '(:= x (in y s))');
  tt.equal(showBody(body('x == y')), '(== x y)');
});

// ---- line breaks ----------------------------------------------------------------------------

t.test('line breaks end a literal only where the expression is complete', async (tt) => {
  tt.equal(showBody(body('x := 1 +\n  2')), '(:= x (+ 1 2))', 'a trailing operator continues');
  tt.equal(showBody(body('x := f(\n  1,\n  2\n)')), '(:= x (call f 1 2))', 'an open paren continues');
  tt.equal(showBody(body('x := a[\n  0\n]')), '(:= x (ref a 0))', 'an open bracket continues');
  tt.equal(showBody(body('x :=\n  1')), '(:= x 1)', 'a trailing := continues');
  tt.equal(showBody(body('x := 1\n+ 2')), '(:= x (+ 1 2))', 'a leading operator continues, as in OPA');
  tt.equal(showBody(body('x := y\n[a] := z')), '(:= x y); (:= [a] z)', 'a bracket on a new line starts a literal');
  tt.equal(showBody(body('x := f\n(y)')), '(:= x f); y', 'a paren on a new line starts a literal');
  tt.equal(showBody(body('x\nwith input as 1')), 'x with input as 1');
  tt.equal(showBody(body('x := {"a": 1,\n "b": 2}\ny')), '(:= x {"a": 1, "b": 2}); y');
  tt.equal(showBody(body('x # comment\ny')), 'x; y', 'a comment ends the line');
});

// ---- positions ------------------------------------------------------------------------------

t.test('every node carries its first character position', async (tt) => {
  const src = 'package p\n\nallow if {\n\tsome r in input.roles\n\tcount(r.perms) >= 2 * x\n}\n';
  const m = parse(src);
  const [lit1, lit2] = m.rules[0]!.body;
  tt.same(lit1!.pos, { file: 'test.rego', line: 4, col: 2, offset: 23 }, 'a tab is one column');
  const e = lit2!.expr;
  tt.ok(e.type === 'term' && e.term.type === 'binop');
  if (e.type === 'term' && e.term.type === 'binop') {
    const cmp = e.term;
    tt.same(cmp.pos, { file: 'test.rego', line: 5, col: 2, offset: 46 }, 'a binop starts at its left operand');
    tt.ok(cmp.right.type === 'binop');
    tt.same(cmp.right.pos, { file: 'test.rego', line: 5, col: 20, offset: 64 });
    tt.ok(cmp.left.type === 'call');
    if (cmp.left.type === 'call') {
      tt.same(cmp.left.args[0]!.pos, { file: 'test.rego', line: 5, col: 8, offset: 52 });
      tt.equal(src.slice(cmp.left.args[0]!.pos.offset, cmp.left.args[0]!.pos.offset + 7), 'r.perms');
    }
  }
  tt.equal(src.slice(m.rules[0]!.pos.offset, m.rules[0]!.pos.offset + 5), 'allow');
});

t.test('columns count UTF-16 code units', async (tt) => {
  const m = parse('package p\nx := ["😀", y]');
  const v = m.rules[0]!.value!;
  tt.ok(v.type === 'array');
  if (v.type === 'array') tt.same(v.items[1]!.pos, { file: 'test.rego', line: 2, col: 13, offset: 22 });
});

t.test('real-world style module', async (tt) => {
  const m = parse(`package gatehouse.example.v1

import rego.v1
import data.lib.decisions as d

default allow := false

# Allow when every approval is present.
allow if {
	input.principal.env == "production"
	every role in required_roles {
		role in input.principal.roles
	}
	not blocked
}

required_roles contains "security" if input.decision.amount > 10000

required_roles contains role if {
	some role in d.base_roles
}

blocked if input.principal.keyId in data.blocklist

approvals[role] := n if {
	some role in required_roles
	n := count([a | some a in input.approvals; a.role == role])
}

next_action := "approve" if {
	not allow
} else := "execute"

reasons := [r | some r in deny_reasons]

deny_reasons contains sprintf("amount %v over %v", [input.decision.amount, limit]) if {
	limit := object.get(data.limits, input.principal.env, 0)
	input.decision.amount > limit
}
`);
  tt.same(
    m.rules.map((r) => `${r.default ? 'default ' : ''}${r.kind} ${r.name}`),
    [
      'default complete allow',
      'complete allow',
      'partialSet required_roles',
      'partialSet required_roles',
      'complete blocked',
      'partialObject approvals',
      'complete next_action',
      'complete reasons',
      'partialSet deny_reasons',
    ],
  );
  tt.equal(showBody(m.rules[1]!.body), '(== (ref input "principal" "env") "production"); (every role required_roles {(in role (ref input "principal" "roles"))}); not blocked');
});

// ---- errors ---------------------------------------------------------------------------------

t.test('lexical errors: strings, numbers and characters', async (tt) => {
  parseError(tt, 'package a\np := "abc\n', 2, 6, /^unterminated string: expected a closing '"' before the end of the line$/);
  parseError(tt, 'package a\np := `abc', 2, 6, /^unterminated raw string/);
  parseError(tt, 'package a\nx := "a\\qb"', 2, 8, /^invalid escape '\\q' in string/);
  parseError(tt, 'package a\nx := "\\u12x4"', 2, 7, /^invalid escape '\\u12x4' in string: expected four hex digits/);
  parseError(tt, 'package a\nx := 01', 2, 6, /^invalid number '01': leading zeros are not allowed$/);
  parseError(tt, 'package a\nx := 1e', 2, 6, /^invalid number '1e': expected digits after the exponent$/);
  parseError(tt, 'package a\nx := 12ab', 2, 8, /^invalid number '12a': expected a digit, found 'a'$/);
  parseError(tt, 'package a\nx := a ! b', 2, 8, /^unexpected character '!' \(use '!=' for inequality or 'not' for negation\)$/);
});

t.test('module errors: package, imports and statements', async (tt) => {
  parseError(tt, 'p := 1', 1, 1, /^expected 'package' at the start of the module, found 'p'$/);
  parseError(tt, '', 1, 1, /^expected 'package' at the start of the module, found end of file$/);
  parseError(tt, 'package a\np := 1 q := 2', 2, 8, /^expected a newline after the rule, found 'q'$/);
  parseError(tt, 'package a\nx := 1\nimport data.x\npackage b', 4, 1, /second 'package' declaration/);
  parseError(tt, 'package a\nimport foo.bar', 2, 8, /^expected an import path starting with data, input, future or rego, found 'foo'$/);
  parseError(tt, 'package a\nimport data.x as 1', 2, 18, /^expected an alias name after 'as', found '1'$/);
});

t.test('rule head and else errors', async (tt) => {
  parseError(tt, 'package a\np { true }', 2, 3, /^expected 'if' before the rule body, found '\{' \(Rego v1 requires it: 'p if \{ … \}'\)$/);
  parseError(tt, 'package a\np[x] { x := 1 }', 2, 6, /expected 'if' before the rule body.*'p\[x\] if/);
  parseError(tt, 'package a\np := 1 if { x } else = 2 { y }', 2, 26, /expected 'if' before the rule body/);
  parseError(tt, 'package a\np\nq := 1', 2, 2, /^expected ':=', '=', 'if' or 'contains' after the rule head 'p', found end of line$/);
  parseError(tt, 'package a\nf(x)', 2, 5, /^expected ':=', '=' or 'if' after the rule head 'f\(x\)', found end of file$/);
  parseError(tt, 'package a\ndefault p', 2, 10, /^expected ':=' and a value after 'default p', found end of file$/);
  parseError(tt, 'package a\ndefault p := input.x', 2, 14, /^expected a constant value for default rule 'p', found a reference$/);
  parseError(tt, 'package a\ndefault p := [1, x]', 2, 18, /^expected a constant value for default rule 'p', found the variable 'x'$/);
  parseError(tt, 'package a\ndefault p := 1 if { x }', 2, 16, /^expected a newline after the default rule, found 'if'/);
  parseError(tt, 'package a\ndefault f([a]) := 1', 2, 11, /^expected a variable as argument of default function 'f', found an array$/);
  parseError(tt, 'package a\ndefault p[x] := 1', 2, 11, /^expected a complete rule or function after 'default'/);
  parseError(tt, 'package a\np contains x if { x } else := 1', 2, 23, /'else' applies to complete rules and functions only/);
  parseError(tt, 'package a\np := 1\nelse := 2', 3, 1, /^expected 'if' and a body before 'else'/);
  parseError(tt, 'package a\np := 1 if { x } else := 2 else := 3', 2, 27, /unconditional 'else'.*must come last/);
  parseError(tt, 'package a\np := 1 if { x } else', 2, 21, /^expected ':=', '=' or 'if' after 'else', found end of file$/);
  parseError(tt, 'package a\nf(x) contains y', 2, 6, /^expected ':=', '=' or 'if' after the function head 'f\(x\)', found 'contains'$/);
  parseError(tt, 'package a\nif := 1', 2, 1, /^expected a rule name, found 'if'$/);
  parseError(tt, 'package a\np if', 2, 5, /^expected a rule body after 'if', found end of file$/);
  parseError(tt, 'package a\np[x](y) := 1', 2, 5, /a function's name is a path of names/);
});

t.test('body errors', async (tt) => {
  parseError(tt, 'package a\np if { x := 1 ) }', 2, 15, /^expected ';', a newline or '\}' after the literal, found '\)'$/);
  parseError(tt, 'package a\np if {\n  x := 1\n', 4, 1, /^expected '\}' to close the rule body opened at 2:6, found end of file$/);
  parseError(tt, 'package a\np if { }', 2, 8, /^expected a literal in the rule body, found '\}' \(bodies cannot be empty\)$/);
  parseError(tt, 'package a\np if { some 1 }', 2, 13, /^expected a variable name after 'some', found a number$/);
  parseError(tt, 'package a\np if { some a, b, c in xs }', 2, 19, /^expected 'in' after at most a key and a value/);
  parseError(tt, 'package a\np if { every [a] in xs { a } }', 2, 14, /^expected a variable as the value in 'every', found an array$/);
  parseError(tt, 'package a\np if { every x in xs }', 2, 22, /^expected '\{' to start the body of 'every', found '\}'$/);
  parseError(tt, 'package a\np if { every x xs { x } }', 2, 16, /^expected 'in' after 'every x', found 'xs'$/);
  parseError(tt, 'package a\np if { not some x in xs }', 2, 12, /^expected an expression after 'not', found 'some'/);
  parseError(tt, 'package a\np if { x with 1 as 2 }', 2, 15, /^expected a 'with' target such as input.x or data.x, found a number$/);
  parseError(tt, 'package a\np if { x with input 2 }', 2, 21, /^expected 'as' after the 'with' target, found '2'$/);
});

t.test('term errors', async (tt) => {
  parseError(tt, 'package a\np := {\n  "a": 1\n  if', 4, 3, /^expected ',' or '\}' to close the object opened at 2:6, found 'if'$/);
  parseError(tt, 'package a\nx := [1, 2', 2, 11, /^expected ',' or '\]' to close the array opened at 2:6, found end of file$/);
  parseError(tt, 'package a\nx := f(1, 2', 2, 12, /^expected ',' or '\)' to close the argument list opened at 2:7, found end of file$/);
  parseError(tt, 'package a\nx := (1 + 2', 2, 12, /^expected '\)' to close the '\(' opened at 2:6, found end of file$/);
  parseError(tt, 'package a\np if x ==', 2, 10, /^expected a term, found end of file$/);
  parseError(tt, 'package a\np := }', 2, 6, /^expected a term, found '\}'$/);
  parseError(tt, 'package a\nx := input. y', 2, 12, /^expected a name directly after '\.', found whitespace$/);
  parseError(tt, 'package a\nx := input.1', 2, 12, /^expected a name after '\.', found '1'$/);
  parseError(tt, 'package a\nx := "s".y', 2, 9, /^expected an operator after a string, found '\.'/);
  parseError(tt, 'package a\nx := a[0](1)', 2, 10, /^expected a function name such as f or lib.f before '\(', found a reference$/);
  parseError(tt, 'package a\np if { a, b }', 2, 9, /^expected ';', a newline or '\}' after the literal, found ','$/);
  parseError(tt, 'package a\nx := {1 2}', 2, 9, /^expected ':', ',' or '\}' in the object or set opened at 2:6, found '2'$/);
  parseError(tt, 'package a\nx := {"a": 1, "b"}', 2, 18, /^expected ':' after the object key, found '\}'$/);
  parseError(tt, 'package a\nx := [y | ]', 2, 11, /^expected a literal in the array comprehension, found '\]'/);
});

t.test('errors format with file, line, column and a caret', async (tt) => {
  try {
    parseModule('policies/x.rego', 'package a\n\np if {\n  x := [1, 2\n}\n');
    tt.fail('expected an error');
  } catch (e) {
    tt.equal(
      (e as CompileError).format(),
      "policies/x.rego:5:1: parse error: expected ',' or ']' to close the array opened at 4:8, found '}'\n  }\n  ^",
    );
  }
});

t.test('deep nesting is refused instead of overflowing the stack', async (tt) => {
  tt.equal(show(term('['.repeat(150) + ']'.repeat(150))).length, 300, '150 levels parse');
  parseError(tt, `package a\nx := ${'['.repeat(5000)}`, 2, 206, /^expected at most 200 levels of nesting, found more$/);
});

t.test('parsing is linear in the size of the input', async (tt) => {
  const lines = ['package big'];
  for (let i = 0; i < 5000; i++) {
    lines.push(`r${i} := {"k": [x | some x in input.xs; x.v > ${i} * 2 + 1], "s": "str\\n${i}"} if { not input.off; count(input.a) in {1, 2} }`);
  }
  const started = performance.now();
  const m = parse(lines.join('\n'));
  const elapsed = performance.now() - started;
  tt.equal(m.rules.length, 5000);
  // A generous bound: it only has to catch super-linear behaviour, not measure speed.
  tt.ok(elapsed < 10_000, `parsed 5000 rules in ${elapsed.toFixed(0)} ms`);
});

t.test('rewinds stay linear', async (tt) => {
  // Each level first reads `| …` as a comprehension body, then rewinds at the comma: without the
  // operand cache every level would parse the levels inside it twice (2^80 steps).
  const nested = '[a | '.repeat(80) + 'b' + ', c]'.repeat(80);
  const started = performance.now();
  const v = term(nested);
  tt.equal(show(v).slice(0, 20), '[(| a [(| a [(| a [(');
  tt.ok(performance.now() - started < 5_000, 'parsed 80 nested rewinds');
});
