/**
 * What a traced build (probes.ts) says about one evaluation of a test: which expressions were
 * evaluated and whether each held, which rule heads produced a value, the values conditions
 * compared; and, from that, where a failing test failed and what it got, printed as `opa test`
 * prints its traces (`--explain fails|full`).
 */
import { PROBE_CALLS, type Probe, type ProbeSide } from './probes.ts';
import { printLiteral } from './format/print.ts';
import { positionKey, type IndexedExpression } from './source-index.ts';
import type { Term } from './parse/ast.ts';
import type { HostBuiltin } from '../engine/host-builtins.ts';

/** One probe call, in the order the module made them. */
export interface ProbeEvent {
  kind: 'enter' | 'exit';
  probe: number;
  /** On an `enter`: the values its condition reported before the probe was entered again. */
  values?: Partial<Record<ProbeSide, unknown>>;
}

/** Collects the probe calls of a traced module's evaluations. */
export class ProbeRecorder {
  private events: ProbeEvent[] = [];
  /** The index of each probe's latest `enter`, where its values go. */
  private latestEnter = new Map<number, number>();

  /** The host functions the traced module calls (see probes.ts); each answers true. */
  builtins(): Record<string, HostBuiltin> {
    return {
      [PROBE_CALLS.enter]: (probe: number) => {
        this.latestEnter.set(probe, this.events.length);
        this.events.push({ kind: 'enter', probe });
        return true;
      },
      [PROBE_CALLS.exit]: (probe: number) => {
        this.events.push({ kind: 'exit', probe });
        return true;
      },
      [PROBE_CALLS.value]: (probe: number, side: ProbeSide, value: unknown) => {
        const enter = this.events[this.latestEnter.get(probe) ?? -1];
        if (enter) enter.values = { ...enter.values, [side]: value };
        return true;
      },
    };
  }

  /** The events recorded since the last call, which starts a new recording. */
  take(): ProbeEvent[] {
    const events = this.events;
    this.events = [];
    this.latestEnter = new Map();
    return events;
  }
}

/** One step of an evaluation as a trace shows it. */
export interface TraceStep {
  /** Eval: an expression held; Fail: it did not; Exit: a rule head produced a value. */
  op: 'Eval' | 'Fail' | 'Exit';
  probe: Probe;
  /** The expression, when the step is one. */
  expression?: IndexedExpression;
  /** For a head, the rule. */
  rule?: string;
  values?: Partial<Record<ProbeSide, unknown>>;
}

/**
 * The steps of one evaluation. An expression held at an `enter` when its `exit` follows before
 * it is entered again: rules do not recurse, so nothing else can exit it in between.
 */
export function traceSteps(
  events: ProbeEvent[],
  probes: Probe[],
  expressions: ReadonlyMap<string, IndexedExpression>,
  heads: ReadonlyMap<string, string>,
): TraceStep[] {
  // Walking backwards: what each event's probe does next.
  const heldAt = new Array<boolean>(events.length);
  const next = new Map<number, ProbeEvent['kind']>();
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    heldAt[i] = next.get(event.probe) === 'exit';
    next.set(event.probe, event.kind);
  }
  const steps: TraceStep[] = [];
  events.forEach((event, i) => {
    const probe = probes[event.probe]!;
    const key = positionKey(probe.file, probe.offset);
    if (probe.kind === 'head') {
      if (event.kind === 'exit') steps.push({ op: 'Exit', probe, rule: heads.get(key) ?? '' });
      return;
    }
    if (event.kind !== 'enter') return;
    const held = heldAt[i]!;
    const expression = expressions.get(key);
    steps.push({ op: held ? 'Eval' : 'Fail', probe, ...(expression ? { expression } : {}), ...(event.values ? { values: event.values } : {}) });
  });
  return steps;
}

/**
 * Where a failing test failed: of the expressions directly in its body that failed, the one
 * furthest into the body (with iteration, earlier ones may fail for some elements and hold for
 * others; the last one reached is what stopped every attempt).
 */
export function failedAt(steps: TraceStep[], test: string): TraceStep | undefined {
  let found: TraceStep | undefined;
  for (const step of steps) {
    if (step.op !== 'Fail' || step.expression?.rule !== test || !step.expression.topLevel) continue;
    if (!found || step.probe.offset >= found.probe.offset) found = step;
  }
  return found;
}

const MAX_TEXT = 120;
const MAX_VALUE = 200;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** An expression as written, on one line. */
function expressionText(step: TraceStep): string {
  if (!step.expression) return '';
  const [first, ...more] = printLiteral(step.expression.literal).split('\n');
  return clip(more.length > 0 ? `${first} …` : first!, MAX_TEXT);
}

function valueText(value: unknown): string {
  return value === undefined ? 'undefined' : clip(JSON.stringify(value), MAX_VALUE);
}

/** A term that is the same whatever is evaluated: what a test expects, when compared. */
function isConstant(term: Term): boolean {
  switch (term.type) {
    case 'null':
    case 'boolean':
    case 'number':
    case 'string':
      return true;
    case 'array':
    case 'set':
      return term.items.every(isConstant);
    case 'object':
      return term.entries.every(([k, v]) => isConstant(k) && isConstant(v));
    default:
      return false;
  }
}

/**
 * What a failed condition got, as labelled lines: for `a == b` with one side constant, `got`
 * and `expected`; for other comparisons each side; for a term, its value. Sides never reported
 * were undefined. Other expressions (assignments, unifications, iterations) report nothing.
 */
export function describeValues(step: TraceStep): string[] {
  const expr = step.expression?.literal.expr;
  if (expr?.type !== 'term') return [];
  const values = step.values ?? {};
  const term = expr.term;
  if (term.type !== 'binop') return [`got: ${valueText(values.value)}`];
  if (term.op === '==') {
    if (isConstant(term.right) && !isConstant(term.left)) return [`got:      ${valueText(values.left)}`, `expected: ${valueText(values.right)}`];
    if (isConstant(term.left) && !isConstant(term.right)) return [`got:      ${valueText(values.right)}`, `expected: ${valueText(values.left)}`];
  }
  return [`left:  ${valueText(values.left)}`, `right: ${valueText(values.right)}`];
}

/** `file:line: expression`, as the summary of a failing test names where it failed. */
export function formatFailedAt(step: TraceStep): string[] {
  return [`${step.probe.file}:${step.probe.line}: ${expressionText(step)}`, ...describeValues(step).map((line) => `  ${line}`)];
}

/**
 * A trace as `opa test --explain` prints one: with `fails`, the expressions that failed; with
 * `full`, every expression evaluated and every rule that produced a value; in the order they
 * happened, each with where it is and the rule it is part of.
 */
export function formatTrace(steps: TraceStep[], explain: 'fails' | 'full', maxLines = 200): string[] {
  const shown = explain === 'full' ? steps : steps.filter((s) => s.op === 'Fail');
  const lines = shown.slice(0, maxLines).map((step) => {
    const where = `${step.probe.file}:${step.probe.line}`;
    if (step.op === 'Exit') return `${step.op} ${where} ${step.rule}`;
    const values = step.op === 'Fail' ? describeValues(step) : [];
    return `${step.op} ${where} ${expressionText(step)}${values.length > 0 ? `  (${values.map((v) => v.replace(/\s+/g, ' ')).join(', ')})` : ''}`;
  });
  if (shown.length > maxLines) lines.push(`… ${shown.length - maxLines} more`);
  return lines;
}
