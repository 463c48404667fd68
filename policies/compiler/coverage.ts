/**
 * Line coverage of Rego tests, reported as `opa test --coverage` reports it. A line is covered
 * when a traced build (probes.ts) evaluated an expression starting on it, or a rule whose head is
 * on it produced a value, during any of the tests (OPA's Eval and Exit events). A line is not
 * covered when a rule head or an expression (`some` declarations aside) starts on it and none of
 * that happened. Lines holding neither (comments, imports, the continuation of a long expression)
 * are in neither list, as in OPA.
 */
import type { Probe } from './probes.ts';
import type { ModuleIndex } from './source-index.ts';
import type { ProbeEvent } from './test-explain.ts';

export interface LineRange {
  start: { row: number };
  end: { row: number };
}

/** As OPA writes it: empty lists and a zero coverage are left out. */
export interface FileCoverage {
  covered?: LineRange[];
  not_covered?: LineRange[];
  coverage?: number;
}

export interface CoverageReport {
  files: Record<string, FileCoverage>;
  /** Percent of the counted lines of all files that are covered. */
  coverage: number;
}

/** Covered lines by file, gathered over the evaluations of every test. */
export class CoverageCollector {
  private readonly hits = new Map<string, Set<number>>();

  constructor(private readonly probes: Probe[]) {}

  /** Counts one evaluation's events. */
  add(events: ProbeEvent[]): void {
    for (const event of events) {
      const probe = this.probes[event.probe]!;
      const counts = probe.kind === 'expr' ? event.kind === 'enter' : event.kind === 'exit';
      if (!counts) continue;
      let rows = this.hits.get(probe.file);
      if (!rows) this.hits.set(probe.file, (rows = new Set()));
      rows.add(probe.line);
    }
  }

  /** The report over `modules` (every module of the run, tests included). */
  report(modules: ModuleIndex[]): CoverageReport {
    const files: Record<string, FileCoverage> = {};
    let covered = 0;
    let counted = 0;
    // In file order, as OPA's JSON (Go's encoder sorts a map's keys).
    const sorted = [...modules].sort((a, b) => (a.module.file < b.module.file ? -1 : a.module.file > b.module.file ? 1 : 0));
    for (const { module, expressions, heads } of sorted) {
      const hit = this.hits.get(module.file) ?? new Set<number>();
      const rows = new Set([...heads.map((h) => h.pos.line), ...expressions.filter((e) => e.literal.expr.type !== 'some').map((e) => e.literal.pos.line)]);
      const missed = [...rows].filter((row) => !hit.has(row));
      const file: FileCoverage = {};
      if (hit.size > 0) file.covered = ranges([...hit]);
      if (missed.length > 0) file.not_covered = ranges(missed);
      const percent = hit.size + missed.length === 0 ? 0 : percentOf(hit.size, hit.size + missed.length);
      if (percent > 0) file.coverage = percent;
      files[module.file] = file;
      covered += hit.size;
      counted += hit.size + missed.length;
    }
    return { files, coverage: counted === 0 ? 0 : percentOf(covered, counted) };
  }
}

/**
 * Percent, not rounded, as OPA reports it since it stopped rounding to two decimals: a rounded
 * 99.996 read as 100 and passed `--threshold 100` with lines uncovered (OPA issue 6307).
 */
function percentOf(part: number, whole: number): number {
  return (100 * part) / whole;
}

/** Rows as runs of consecutive lines. */
function ranges(rows: number[]): LineRange[] {
  const sorted = [...new Set(rows)].sort((a, b) => a - b);
  const out: LineRange[] = [];
  for (const row of sorted) {
    const last = out.at(-1);
    if (last && last.end.row === row - 1) last.end.row = row;
    else out.push({ start: { row }, end: { row } });
  }
  return out;
}
