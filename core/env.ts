/**
 * The two environments a key belongs to. Every store partitions its records by environment so
 * sandbox traffic can never read or change production records, and the other way round.
 */
export const ENVS = ['sandbox', 'production'] as const;
export type Env = (typeof ENVS)[number];

export function isEnv(value: unknown): value is Env {
  return value === 'sandbox' || value === 'production';
}
