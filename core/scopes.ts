/**
 * API key scopes. A route names the one scope it needs; `admin` stands in for every scope so an
 * operator key can act anywhere without listing them all.
 */
export const SCOPES = [
  'decisions:read',
  'decisions:write',
  'decisions:approve',
  'decisions:execute',
  'memory:read',
  'memory:write',
  'context:read',
  'stream:subscribe',
  'webhooks:manage',
  'impact:read',
  'agents:run',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes(needed) || granted.includes('admin');
}
