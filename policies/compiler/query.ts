/**
 * `opa eval` for Gatehouse: a query is compiled into a generated module, beside the policy
 * modules, whose one rule collects every solution of the query; the compiled Wasm is then
 * evaluated like any policy. The answer has OPA's shape: one result per solution, each with the
 * value of every expression and the bindings of the variables the query names.
 *
 * As in OPA, an expression that is a plain term (`data.a.allow`, `input.x + 1`) is captured, so
 * a `false` value is reported; a comparison or any other expression that fails (`1 == 2`) leaves
 * no result. Expressions with `with` and other non-term expressions are reported as `true`.
 */
import { PolicyInstance } from '../engine/policy-instance.ts';
import { compileModules, type SourceFile } from './index.ts';
import { CompileError, CompileErrors } from './errors.ts';
import type { Literal, Term } from './parse/ast.ts';
import { parseModule } from './parse/index.ts';

const QUERY_PACKAGE = '__gatehouse_eval';
const QUERY_FILE = '<query>';
const QUERY_RULE = 'results';
/** The module text before the query. */
const PREFIX = `package ${QUERY_PACKAGE}\n\n${QUERY_RULE} contains __row if {\n`;
/** The module's line where the query's first line is. */
const QUERY_FIRST_LINE = PREFIX.split('\n').length;

const COMPARISONS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=']);

export interface QueryExpression {
  value: unknown;
  text: string;
  location: { row: number; col: number };
}

export interface QueryResult {
  expressions: QueryExpression[];
  bindings?: Record<string, unknown>;
}

/** `opa eval --format json`: `{}` when the query is undefined. */
export interface QueryOutput {
  result?: QueryResult[];
}

interface ParsedLiteral {
  literal: Literal;
  text: string;
  location: { row: number; col: number };
}

/** Splits the query into its literals with their text (the source between one literal and the next). */
function parseQuery(query: string): ParsedLiteral[] {
  const source = `${PREFIX}${query}\n}\n`;
  let literals: Literal[];
  try {
    literals = parseModule(QUERY_FILE, source).rules[0]!.body;
  } catch (err) {
    if (err instanceof CompileError) throw new CompileErrors([relocate(err, query)]);
    throw err;
  }
  const end = source.length - '\n}\n'.length;
  return literals.map((literal, i) => {
    const next = literals[i + 1]?.pos.offset ?? end;
    const text = source.slice(literal.pos.offset, next).replace(/[\s;]+$/, '');
    return { literal, text, location: { row: literal.pos.line - QUERY_FIRST_LINE + 1, col: literal.pos.col } };
  });
}

/** An error in the generated module, placed in the query as the user wrote it. */
function relocate(err: CompileError, query: string): CompileError {
  if (!err.pos || err.pos.file !== QUERY_FILE) return err;
  const lines = query.split('\n');
  const line = err.pos.line - QUERY_FIRST_LINE + 1;
  // An error at the closing brace after the query (a query cut short) points past its end.
  const pos = line > lines.length ? { ...err.pos, line: lines.length, col: lines.at(-1)!.length + 1 } : { ...err.pos, line: Math.max(1, line) };
  return new CompileError(err.stage, err.message, pos, query);
}

/** A plain term whose value OPA reports even when it is `false`. */
function isCaptured({ literal }: ParsedLiteral): boolean {
  const { expr } = literal;
  if (literal.negated || literal.with.length > 0 || expr.type !== 'term') return false;
  return !(expr.term.type === 'binop' && COMPARISONS.has(expr.term.op));
}

function varsOf(term: Term, into: Set<string>): void {
  if (term.type === 'var') into.add(term.name);
  else if (term.type === 'array' || term.type === 'set') for (const t of term.items) varsOf(t, into);
  else if (term.type === 'object') for (const [, v] of term.entries) varsOf(v, into);
}

/** The variables the query binds: declared (`:=`, `some`) or unified with `=`. */
function boundVariables(literals: ParsedLiteral[]): string[] {
  const names = new Set<string>();
  for (const { literal } of literals) {
    const { expr } = literal;
    if (literal.negated) continue;
    if (expr.type === 'assign') varsOf(expr.left, names);
    else if (expr.type === 'unify') {
      varsOf(expr.left, names);
      varsOf(expr.right, names);
    } else if (expr.type === 'some') for (const v of expr.vars) names.add(v.name);
    else if (expr.type === 'somein') {
      if (expr.key) varsOf(expr.key, names);
      varsOf(expr.value, names);
    }
  }
  for (const reserved of ['_', 'input', 'data']) names.delete(reserved);
  return [...names].filter((n) => !n.startsWith('__')).sort();
}

/** The generated module: one set rule whose elements are `[expression values, bindings]`. */
function queryModule(literals: ParsedLiteral[], bindings: string[]): string {
  const body = literals.map((l, i) => (isCaptured(l) ? `__e${i} := (${l.text})` : l.text));
  const values = literals.map((l, i) => (isCaptured(l) ? `__e${i}` : 'true'));
  const object = bindings.map((b) => `${JSON.stringify(b)}: ${b}`).join(', ');
  return `${PREFIX}${body.join('\n')}\n__row := [[${values.join(', ')}], {${object}}]\n}\n`;
}

export interface QueryOptions {
  /** Rego modules the query can refer to (`data.<package>…`). */
  modules: SourceFile[];
  data: unknown;
  /** The input document; undefined: no input. */
  input?: unknown;
  /** Where the lines of `print` statements go, as `opa eval` writes them to stderr; dropped without it. */
  print?: (line: string) => void;
}

/**
 * Compiles `query` with `modules` and evaluates it. Throws CompileErrors when the query or a
 * module does not compile, and an Error when the evaluation fails.
 */
export async function evaluateQuery(query: string, { modules, data, input, print }: QueryOptions): Promise<QueryOutput> {
  const literals = parseQuery(query);
  if (literals.some(({ literal }) => literal.expr.type === 'term' && literal.expr.term.type === 'var' && literal.expr.term.name === 'data')) {
    throw new Error('a query of the whole data document is not supported (it would contain the query itself): name a package, data.<package>');
  }
  const bindings = boundVariables(literals);
  const text = queryModule(literals, bindings);
  let compiled;
  try {
    compiled = await compileModules([...modules, { path: QUERY_FILE, text }], { entrypoints: [`${QUERY_PACKAGE}/${QUERY_RULE}`] });
  } catch (err) {
    if (err instanceof CompileErrors) throw new CompileErrors(err.errors.map((e) => relocate(e, query)));
    throw err;
  }
  const instance = await PolicyInstance.load(compiled.wasm, data);
  if (print) instance.output = ({ kind, text }) => kind === 'print' && print(text);
  const outcome = instance.evaluate(input, 0);
  if (outcome.error) throw new Error(outcome.error);
  const rows = (outcome.value ?? []) as Array<[unknown[], Record<string, unknown>]>;
  if (rows.length === 0) return {};
  return {
    result: rows.map(([values, bound]) => ({
      expressions: literals.map((l, i) => ({ value: values[i], text: l.text, location: l.location })),
      ...(Object.keys(bound).length > 0 ? { bindings: bound } : {}),
    })),
  };
}

/**
 * `--format pretty`: the value alone for a query of one expression without bindings (as OPA
 * prints it), `undefined` when there is no result, and otherwise each result's bindings and
 * expression values as JSON.
 */
export function formatPretty(output: QueryOutput): string {
  const results = output.result;
  if (!results) return 'undefined';
  const only = results[0]!;
  if (results.length === 1 && only.expressions.length === 1 && !only.bindings) return JSON.stringify(only.expressions[0]!.value, null, 2);
  return results
    .map((r) => {
      const lines = Object.entries(r.bindings ?? {}).map(([name, value]) => `${name} = ${JSON.stringify(value)}`);
      for (const e of r.expressions) lines.push(`${e.text} → ${JSON.stringify(e.value)}`);
      return lines.join('\n');
    })
    .join('\n\n');
}
