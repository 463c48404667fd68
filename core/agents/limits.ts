/**
 * What one run may do before it is stopped: how many tool calls it may make (refused ones
 * included, so an agent cannot probe a policy forever), how much it may spend (the sum of the
 * tools' spend fields over the calls not refused or withdrawn), and for how long it may act.
 * The call that would go past a limit is refused and stops the run with `reason: limit:<name>`.
 */
export interface RunLimits {
  maxToolCalls: number;
  maxSpend: number;
  maxWallMs: number;
}

export const DEFAULT_LIMITS: RunLimits = { maxToolCalls: 50, maxSpend: 10_000, maxWallMs: 15 * 60 * 1000 };

/**
 * The most calls a run may be opened with. Steps are records of their own and a policy sees a
 * bounded history, so a call costs the same however long the run; the bound keeps one run's
 * storage (a few KiB a step) within reason.
 */
export const MAX_TOOL_CALLS = 100_000;

export type LimitReason = 'limit:tool_calls' | 'limit:spend' | 'limit:wall_time';

/** The limit a next call spending `amount` would pass, or null when it stays within all of them. */
export function exceededLimit(
  limits: RunLimits,
  usage: { calls: number; spend: number; startedAt: string },
  amount: number,
  now = Date.now(),
): LimitReason | null {
  if (now - Date.parse(usage.startedAt) > limits.maxWallMs) return 'limit:wall_time';
  if (usage.calls >= limits.maxToolCalls) return 'limit:tool_calls';
  if (usage.spend + amount > limits.maxSpend) return 'limit:spend';
  return null;
}
