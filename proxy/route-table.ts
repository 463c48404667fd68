import { agentRoutes } from './routes/agents.ts';
import { auditRoutes } from './routes/audit.ts';
import { consoleRoutes } from './console/console-routes.ts';
import { contextRoutes } from './routes/context.ts';
import { decisionResultRoutes } from './routes/decision-results.ts';
import { decisionRoutes } from './routes/decisions.ts';
import { heldRoutes } from './routes/held.ts';
import { impactRoutes } from './routes/impact.ts';
import { keyRoutes } from './routes/keys.ts';
import { memoryRoutes } from './routes/memory.ts';
import { objectiveRoutes } from './routes/objectives.ts';
import { opsRoutes } from './routes/ops.ts';
import { policyRoutes } from './routes/policies.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { streamRoute } from './streaming/stream-route.ts';
import { signingKeyRoutes } from './routes/signing-keys.ts';
import type { RouteDef } from './route.ts';

/** Every route the server answers; docs/api.md describes each one. */
export const ROUTES: readonly RouteDef[] = [
  ...decisionRoutes,
  ...decisionResultRoutes,
  ...heldRoutes,
  ...keyRoutes,
  ...signingKeyRoutes,
  ...sessionRoutes,
  ...policyRoutes,
  ...auditRoutes,
  ...impactRoutes,
  ...memoryRoutes,
  ...contextRoutes,
  ...objectiveRoutes,
  ...webhookRoutes,
  ...agentRoutes,
  streamRoute,
  ...opsRoutes,
  ...consoleRoutes,
];

/** `/v1/decisions/{id}` → `/v1/decisions/:id`, the form uWebSockets.js routes on. */
export function uwsPattern(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function paramNames(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
}
