import { decisionRoutes } from './routes/decisions.ts';
import { impactRoutes } from './routes/impact.ts';
import { keyRoutes } from './routes/keys.ts';
import { opsRoutes } from './routes/ops.ts';
import type { RouteDef } from './route.ts';

/** Every route the server answers; docs/api.md describes each one. */
export const ROUTES: readonly RouteDef[] = [...decisionRoutes, ...keyRoutes, ...impactRoutes, ...opsRoutes];

/** `/v1/decisions/{id}` → `/v1/decisions/:id`, the form uWebSockets.js routes on. */
export function uwsPattern(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function paramNames(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
}
