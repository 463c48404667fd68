/**
 * Conformance suite: each case in test/conformance/cases/<topic>.json compiles Rego modules with
 * the project's compiler, evaluates one entrypoint through `@open-policy-agent/opa-wasm`, and
 * expects what OPA 1.x answers for the same modules, data and input.
 *
 * A case:
 *   name        unique within its file
 *   why         optional: why the expectation is what it is, when that is not obvious
 *   modules     { "<path>": "<Rego source>" }; compile-error positions refer to the first one
 *   data        optional base document, loaded with setData
 *   input       optional input document
 *   inputText   optional input as raw JSON text, for values JSON.parse would change
 *               (integers beyond 2^53); use instead of `input`
 *   entrypoint  slash path below data: "pkg/rule", or "pkg" for the whole package
 *   want        one of
 *                 { "result": <json> }      evaluate returns [{"result": <json>}]; sets as sorted arrays
 *                 { "undefined": true }     evaluate returns []
 *                 { "compileError": "<substring>", "line": N, "col": N }
 *                 { "runtimeError": "<substring>" }   evaluate throws
 *
 * CONFORMANCE_FILTER=<substring> runs only the cases whose "<file>: <name>" contains it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import tap, { type Test } from 'tap';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import type { CompiledModule } from '../policies/compiler/index.ts';
import { CompileError, CompileErrors } from '../policies/compiler/errors.ts';
import { hostBuiltins } from '../policies/engine/host-builtins.ts';

type Want =
  | { result: unknown }
  | { undefined: true }
  | { compileError: string; line: number; col: number }
  | { runtimeError: string };

interface Case {
  name: string;
  why?: string;
  modules: Record<string, string>;
  data?: unknown;
  input?: unknown;
  inputText?: string;
  entrypoint: string;
  want: Want;
}

const casesDir = fileURLToPath(new URL('./conformance/cases/', import.meta.url));
const filter = process.env.CONFORMANCE_FILTER ?? '';

const selected: Array<{ label: string; c: Case }> = [];
for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort()) {
  const cases = JSON.parse(readFileSync(casesDir + file, 'utf8')) as Case[];
  for (const c of cases) {
    const label = `${file}: ${c.name}`;
    if (label.includes(filter)) selected.push({ label, c });
  }
}

// Each case compiles and instantiates its own module, so this file needs more than the default
// per-file budget: two minutes to load the compiler and build its runtime on first use, and a
// second per case. The budget is set before the compiler is imported, since that import alone
// can take tens of seconds on a busy machine.
tap.setTimeout(120_000 + selected.length * 1_000);
const { compileModules } = await import('../policies/compiler/index.ts');

/** The first compile error behind what `compileModules` threw, if it was one. */
function firstCompileError(err: unknown): CompileError | undefined {
  if (err instanceof CompileErrors) return err.errors[0];
  if (err instanceof CompileError) return err;
  return undefined;
}

/** opa-wasm throws strings (opa_abort) and plain objects as well as Errors. */
function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && 'message' in err) return String(err.message);
  return String(err);
}

/**
 * The input as JSON text in an ArrayBuffer, which opa-wasm hands to the module as written: given
 * a value instead, it would drop a falsy input (`false`, `0`), and `inputText` must keep digits
 * that JSON.parse would round.
 */
function inputBuffer(c: Case): ArrayBuffer | undefined {
  const text = c.inputText ?? (c.input === undefined ? undefined : JSON.stringify(c.input));
  if (text === undefined) return undefined;
  const bytes = new TextEncoder().encode(text);
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

async function runCase(t: Test, c: Case): Promise<void> {
  const files = Object.entries(c.modules).map(([path, text]) => ({ path, text }));
  const want = c.want;

  let compiled: CompiledModule;
  try {
    compiled = await compileModules(files, { entrypoints: [c.entrypoint] });
  } catch (err) {
    const error = firstCompileError(err);
    if (!error) throw err;
    if (!('compileError' in want)) {
      t.fail(`unexpected compile error: ${error.format()}`);
      return;
    }
    t.ok(error.message.includes(want.compileError), `compile error mentions ${JSON.stringify(want.compileError)}`, {
      found: error.message,
    });
    t.strictSame(
      { file: error.pos?.file, line: error.pos?.line, col: error.pos?.col },
      { file: files[0]?.path, line: want.line, col: want.col },
      'compile error position',
    );
    return;
  }
  if ('compileError' in want) {
    t.fail(`expected a compile error mentioning ${JSON.stringify(want.compileError)}, but the modules compiled`);
    return;
  }

  const policy = await loadPolicy(compiled.wasm, undefined, hostBuiltins);
  if (c.data !== undefined) policy.setData(c.data as object);

  let resultSet: unknown;
  try {
    resultSet = policy.evaluate(inputBuffer(c), c.entrypoint);
  } catch (err) {
    if ('runtimeError' in want) {
      t.ok(messageOf(err).includes(want.runtimeError), `run-time error mentions ${JSON.stringify(want.runtimeError)}`, {
        found: messageOf(err),
      });
    } else {
      t.fail(`unexpected run-time error: ${messageOf(err)}`);
    }
    return;
  }

  if ('runtimeError' in want) {
    t.fail(`expected a run-time error mentioning ${JSON.stringify(want.runtimeError)}`, { found: resultSet });
  } else if ('undefined' in want) {
    t.strictSame(resultSet, [], 'undefined');
  } else {
    t.strictSame(resultSet, [{ result: want.result }], 'result');
  }
}

for (const { label, c } of selected) tap.test(label, (t) => runCase(t, c));
