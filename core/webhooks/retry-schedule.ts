/**
 * When a failed delivery is tried again. The default waits grow roughly exponentially (5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h: seven attempts over about 17 hours), as the Standard Webhooks
 * guidance suggests; each wait is spread by ±10% of jitter so that deliveries failing together
 * (a receiver that was down) do not all come back at the same instant.
 */
export const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000];

const JITTER = 0.1;

/**
 * How long to wait after the `failures`-th failed attempt of a delivery, or null when the
 * schedule is spent and the delivery is given up.
 */
export function retryDelay(schedule: readonly number[], failures: number, random: () => number = Math.random): number | null {
  const base = schedule[failures - 1];
  if (base === undefined) return null;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}
