import t from 'tap';
import { parseModule } from '../policies/compiler/parse/index.ts';
import { renameWildcards } from '../policies/compiler/check/wildcards.ts';
import { checkProgram } from '../policies/compiler/check/program.ts';
import { planProgram } from '../policies/compiler/plan/planner.ts';
import { CompileError } from '../policies/compiler/errors.ts';
import type { Block, Policy, Stmt } from '../policies/compiler/plan/ir.ts';
import { hostBuiltinsUsed } from '../policies/compiler/plan/host-builtins-used.ts';
import { ZONE_OFFSET_BUILTIN } from '../policies/compiler/builtins.ts';

function plan(sources: Record<string, string>, entrypoints: string[]): Policy {
  const modules = Object.entries(sources).map(([file, text]) => parseModule(file, text));
  renameWildcards(modules);
  return planProgram(checkProgram(modules), entrypoints);
}

function planError(sources: Record<string, string>, entrypoints: string[]): CompileError {
  try {
    plan(sources, entrypoints);
  } catch (err) {
    if (err instanceof CompileError) return err;
    throw err;
  }
  throw new Error('expected a compile error');
}

function ops(blocks: Block[]): string[] {
  const out: string[] = [];
  const walk = (stmts: Stmt[]): void => {
    for (const s of stmts) {
      out.push(s.op);
      if (s.op === 'Block') s.blocks.forEach((b) => walk(b.stmts));
      if (s.op === 'Scan' || s.op === 'Not') walk(s.block.stmts);
    }
  };
  blocks.forEach((b) => walk(b.stmts));
  return out;
}

t.test('a rule reached from an entrypoint becomes a cacheable function called by the plan', async (t) => {
  const policy = plan({ 'p.rego': 'package t\nallow if input.x == 1\n' }, ['t/allow']);
  t.equal(policy.plans.length, 1);
  t.equal(policy.plans[0]!.name, 't/allow');
  t.same(policy.funcs.map((f) => f.name), ['data.t.allow']);
  t.equal(policy.funcs[0]!.cacheable, true);
  t.ok(ops(policy.plans[0]!.blocks).includes('ResultSetAdd'));
  t.ok(ops(policy.funcs[0]!.blocks).includes('Equal'));
});

t.test('iteration over a ref with a variable key plans a Scan', async (t) => {
  const policy = plan({ 'p.rego': 'package t\nnames contains n if {\n  n := input.users[_].name\n}\n' }, ['t/names']);
  const body = ops(policy.funcs[0]!.blocks);
  t.ok(body.includes('MakeSet'));
  t.ok(body.includes('Scan'));
  t.ok(body.includes('SetAdd'));
});

t.test('body literals are reordered so variables are bound before use', async (t) => {
  const policy = plan({ 'p.rego': 'package t\np if {\n  x > 1\n  x := input.n\n}\n' }, ['t/p']);
  const body = ops(policy.funcs[0]!.blocks);
  t.ok(body.indexOf('Dot') < body.indexOf('Call'), 'the assignment is planned before the comparison');
});

t.test('unsafe variables are refused with their position', async (t) => {
  const err = planError({ 'p.rego': 'package t\np if {\n  x > 1\n}\n' }, ['t/p']);
  t.match(err.message, /var x is unsafe/);
  t.equal(err.pos?.line, 3);
  t.equal(err.pos?.col, 3);
  const neg = planError({ 'p.rego': 'package t\np if {\n  not input.xs[y]\n}\n' }, ['t/p']);
  t.match(neg.message, /var y is unsafe/);
});

t.test('recursion between rules is refused', async (t) => {
  const err = planError({ 'p.rego': 'package t\na if b\nb if a\n' }, ['t/a']);
  t.match(err.message, /recursive/);
});

t.test('calls are resolved and checked', async (t) => {
  t.match(planError({ 'p.rego': 'package t\np := nope(1)\n' }, ['t/p']).message, /undefined function nope/);
  t.match(planError({ 'p.rego': 'package t\np := count(1, 2)\n' }, ['t/p']).message, /count: arity mismatch/);
  const lib = plan(
    {
      'lib.rego': 'package lib\ndouble(x) := x * 2\n',
      'p.rego': 'package t\nimport data.lib\np := lib.double(input.n)\n',
    },
    ['t/p'],
  );
  t.same(lib.funcs.map((f) => f.name).sort(), ['data.lib.double', 'data.t.p']);
});

t.test('a rule defined with two kinds is a check error', async (t) => {
  const err = planError({ 'p.rego': 'package t\np := 1\np contains 2\n' }, ['t/p']);
  t.equal(err.stage, 'check');
  t.match(err.message, /complete rule and as a partial set rule/);
  t.equal(err.pos?.line, 3);
});

t.test('with on a rule plans a variant of the rules reading it, which is never cached', async (t) => {
  const policy = plan({ 'p.rego': 'package t\nlimit := 3\nover if input.n > limit\np if over with data.t.limit as 1\n' }, ['t/p']);
  const variant = policy.funcs.find((f) => f.name.startsWith('data.t.over#with'));
  t.ok(variant, policy.funcs.map((f) => f.name).join(' '));
  t.equal(variant!.cacheable, false);
  t.equal(variant!.params.length, 3, 'input, data and the value replacing limit');
  t.notOk(policy.funcs.some((f) => f.name === 'data.t.limit'), 'the replaced rule is not called');
});

t.test('a package entrypoint builds the package document', async (t) => {
  const policy = plan({ 'p.rego': 'package t\na := 1\nb := 2\nf(x) := x\n' }, ['t']);
  t.same(policy.funcs.map((f) => f.name).sort(), ['data.t.a', 'data.t.b'], 'functions are not part of the document');
  t.ok(ops(policy.plans[0]!.blocks).includes('MakeObject'));
});

t.test('number literals become valid JSON constants', async (t) => {
  const policy = plan({ 'p.rego': 'package t\np := [.5, -.25, 1e3]\n' }, ['t/p']);
  t.ok(policy.consts.includes('[0.5,-0.25,1e3]'), policy.consts.join(' '));
});

t.test('errors in rules no entrypoint reaches are still reported, but only reached rules are kept', async (t) => {
  const err = planError({ 'p.rego': 'package t\np := 1\nq := nope(1)\n' }, ['t/p']);
  t.match(err.message, /undefined function nope/);
  t.equal(err.pos?.line, 3);
  const policy = plan({ 'p.rego': 'package t\np := 1\nq := 2\n' }, ['t/p']);
  t.same(policy.funcs.map((f) => f.name), ['data.t.p']);
});

t.test('the host builtins a plan calls, wherever the calls are', async (t) => {
  const policy = plan(
    {
      'p.rego': `package p
import rego.v1
text(x) := yaml.marshal(x)
allow if {
  some s in input.items
  not io.jwt.verify_rs256(lower(s), "key")
  count(input.items) > 0
}
names := [uuid.rfc4122(n) | some n in input.names]
h := text("a")`,
    },
    ['p/allow', 'p/names', 'p/h'],
  );
  t.same(hostBuiltinsUsed(policy), ['io.jwt.verify_rs256', 'uuid.rfc4122', 'yaml.marshal'], 'in functions, under not, in comprehensions; native ones (count, lower) left out');
  t.same(hostBuiltinsUsed(plan({ 'q.rego': 'package q\nimport rego.v1\nallow if input.x == 1' }, ['q/allow'])), [], 'none');
  t.same(hostBuiltinsUsed(plan({ 'z.rego': 'package z\nimport rego.v1\nd := time.date(input.t)' }, ['z/d'])), [ZONE_OFFSET_BUILTIN], 'a time builtin that may be given a named zone');
});
