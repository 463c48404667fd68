/**
 * What a host needs to know of a module's iteration budget (iteration-budget.ts), apart from the
 * emitter so that the engine can read it without loading binaryen.
 */

/**
 * The abort message an exhausted budget stops an evaluation with; the engine reads it
 * (policies/engine/policy-instance.ts).
 */
export const ITERATION_BUDGET_ABORT = 'iteration budget exceeded';

/** The export the host sets the budget with: (iterations) → void, kept for later evaluations. */
export const SET_ITERATION_BUDGET = 'gatehouse_set_iteration_budget';

/**
 * The budget a module starts with, when its host sets none: ten million steps, about 0.1–0.3 s
 * of a loop that does nothing else on the development VM (test/policy-budgets.test.ts runs one).
 */
export const DEFAULT_ITERATION_BUDGET = 10_000_000;
