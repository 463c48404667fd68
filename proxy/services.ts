import { AuditLog } from '../core/audit-log.ts';
import { DecisionStore } from '../core/decision-store.ts';
import { DecisionWorkflow } from '../core/decision-workflow.ts';
import { IdempotencyStore } from '../core/idempotency.ts';
import { KeyReview } from '../core/key-review.ts';
import { KeyRegistry } from '../core/keys.ts';
import type { PolicyEvaluator } from '../core/policy-evaluator.ts';
import { RateLimiter, type RateLimit } from '../core/rate-limiter.ts';
import type { Env } from '../core/env.ts';
import type { Store } from '../core/store.ts';
import { Metrics } from './metrics.ts';

/** The core services one server runs on, built once over an open store. */
export interface Services {
  store: Store;
  evaluator: PolicyEvaluator;
  keys: KeyRegistry;
  audit: AuditLog;
  workflow: DecisionWorkflow;
  keyReview: KeyReview;
  idempotency: IdempotencyStore;
  rateLimiter: RateLimiter;
  metrics: Metrics;
  limits: { bodyBytes: number };
  draining(): boolean;
}

export interface ServiceOptions {
  store: Store;
  evaluator: PolicyEvaluator;
  bodyLimitBytes: number;
  idempotencyRetentionMs: number;
  rateLimits: Record<Env, RateLimit>;
  draining(): boolean;
}

export function buildServices(options: ServiceOptions): Services {
  const { store, evaluator } = options;
  const metrics = new Metrics();
  const keys = new KeyRegistry(store);
  const workflow = new DecisionWorkflow(new DecisionStore(store), evaluator, (check) => {
    metrics.policyEvaluation.observe({ policy: check.policy, allow: String(check.verdict.allow) }, check.durationNs / 1e9);
  });
  return {
    store,
    evaluator,
    keys,
    audit: new AuditLog(store),
    workflow,
    keyReview: new KeyReview(keys, workflow),
    idempotency: new IdempotencyStore(store, options.idempotencyRetentionMs),
    rateLimiter: new RateLimiter(options.rateLimits),
    metrics,
    limits: { bodyBytes: options.bodyLimitBytes },
    draining: options.draining,
  };
}
