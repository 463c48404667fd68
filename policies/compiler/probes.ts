/**
 * Probes: what a traced build (`compileModules(…, { probes: true })`) reports while it runs, for
 * `policies test --coverage` and `--explain`. A Wasm module cannot say by itself which Rego it
 * evaluated, so the planner adds, around every expression of a body and at every rule head, a
 * call of a host function named here with the probe's id:
 *
 * - `enter(id)` when an expression is about to be evaluated (OPA's Eval event);
 * - `exit(id)` when it held, or, for a head, when the rule, function or else clause produced a
 *   value (OPA's Exit event);
 * - `value(id, side, v)` with the values a condition compared or produced, so that a failing
 *   test can show what it got.
 *
 * The calls always answer true and change nothing the policy computes; modules for serving are
 * built without them.
 */
import type { BuiltinSpec } from './builtins.ts';

/** What a probe marks: an expression (a literal of a body) or a rule head. */
export type ProbeKind = 'expr' | 'head';

export interface Probe {
  kind: ProbeKind;
  file: string;
  line: number;
  col: number;
  /** 0-based offset into the file's source, as `Pos.offset`. */
  offset: number;
}

/** Which value of a condition `value` reports: an operand of a comparison, or the term's own. */
export type ProbeSide = 'left' | 'right' | 'value';

/** The host functions a traced build calls. No Rego name reaches them: they are not builtins. */
export const PROBE_CALLS = {
  enter: 'gatehouse.probe.enter',
  exit: 'gatehouse.probe.exit',
  value: 'gatehouse.probe.value',
} as const;

/** The probe calls as the emitter resolves calls: host functions and their arities. */
export const PROBE_BUILTINS: Readonly<Record<string, BuiltinSpec>> = {
  [PROBE_CALLS.enter]: { arity: 1, impl: 'host' },
  [PROBE_CALLS.exit]: { arity: 1, impl: 'host' },
  [PROBE_CALLS.value]: { arity: 3, impl: 'host' },
};
