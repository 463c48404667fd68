import { AuditLog } from '../core/audit-log.ts';
import { DecisionStore } from '../core/decision-store.ts';
import { DecisionWorkflow } from '../core/decision-workflow.ts';
import { HeldRequests } from '../core/held-requests.ts';
import { GovernedAgents } from '../core/agents/governed-agents.ts';
import { IdempotencyStore, type SharedClaims } from '../core/idempotency.ts';
import type { PolicyDifference } from '../core/cluster/policy-census.ts';
import { KeyReview } from '../core/key-review.ts';
import { KeyRegistry } from '../core/keys.ts';
import type { PolicyEvaluator } from '../core/policy-evaluator.ts';
import { RateLimiter, type RateLimit } from '../core/rate-limiter.ts';
import { Sessions } from '../core/sessions.ts';
import type { Env } from '../core/env.ts';
import type { Store } from '../core/store.ts';
import { EventLog } from '../core/events/event-log.ts';
import { Webhooks, type WebhookOptions } from '../core/webhooks/webhooks.ts';
import { DecisionMemory } from '../core/memory/decision-memory.ts';
import type { Embedder } from '../core/memory/embedder.ts';
import { Memory } from '../core/memory/memory.ts';
import { Objectives } from '../core/memory/objectives.ts';
import { ImpactTrace } from '../core/impact/impact-trace.ts';
import type { JwtIdentities } from '../core/jwt-identities.ts';
import { ReplayGuard, type SharedReplayMarks } from '../core/signatures/replay-guard.ts';
import { DEFAULT_SKEW_SECONDS, RequestSignatureVerifier } from '../core/signatures/request-verifier.ts';
import type { SignatureMode } from '../core/signatures/requirement.ts';
import { SigningKeyRegistry } from '../core/signing-keys.ts';
import { UnauthenticatedThrottle } from '../core/unauthenticated-throttle.ts';
import { AddressGuard } from '../core/ssrf-guard.ts';
import type { ThreadGroup } from '../core/threads/thread-group.ts';
import { instrument, Metrics } from './metrics.ts';

/** The core services one server runs on, built once over an open store. */
export interface Services {
  store: Store;
  evaluator: PolicyEvaluator;
  /** Stops listening to the policy engine, which may outlive the server (call on close). */
  detach(): void;
  /** In cluster mode, how the other instances' policies differ from this one's; empty otherwise. */
  policyDifferences(): PolicyDifference[];
  /** In cluster mode, whether instance `node` is alive; on a single node there is no other. */
  alive(node: string): boolean;
  /**
   * In cluster mode, resolves once this instance has applied every commit the cluster held when
   * it was called (core/cluster/replica.ts); null on a single node, which holds every write.
   */
  catchUp: (() => Promise<void>) | null;
  keys: KeyRegistry;
  /** Console sessions: API keys exchanged for HttpOnly cookies (docs/console.md). */
  sessions: Sessions;
  audit: AuditLog;
  workflow: DecisionWorkflow;
  keyReview: KeyReview;
  /** Proxied requests held for approval; the gateway sends them once their decision is executed. */
  heldRequests: HeldRequests;
  /** Tools, agents and their runs of policy-checked tool calls (docs/agents.md). */
  agents: GovernedAgents;
  idempotency: IdempotencyStore;
  /** The durable event log: the stream and the webhooks read it. */
  events: EventLog;
  webhooks: Webhooks;
  /** Versioned memory and its hybrid retrieval; decisions are recorded into it as they are stored. */
  memory: Memory;
  objectives: Objectives;
  /** Decision traces and what inputs and objectives influenced (GET /v1/impact/trace). */
  impact: ImpactTrace;
  rateLimiter: RateLimiter;
  /** Limits refusals of unauthenticated callers per address, and records those beyond it as counts. */
  unauthenticated: UnauthenticatedThrottle;
  metrics: Metrics;
  limits: { bodyBytes: number };
  /** The keys API keys sign requests with (RFC 9421). */
  signingKeys: SigningKeyRegistry;
  signatures: SignatureServices;
  /** Configured JWT issuers, or null when only API keys authenticate. */
  jwtIdentities: JwtIdentities | null;
  draining(): boolean;
}

/** Request signature verification and the server's signature settings (docs/signatures.md). */
export interface SignatureServices {
  verifier: RequestSignatureVerifier;
  replay: ReplayGuard;
  /** The same registry as `Services.signingKeys`, so this is all a signature check needs. */
  signingKeys: SigningKeyRegistry;
  mode: SignatureMode;
  /** Scheme and authority of `@target-uri` when set; otherwise `http` and the Host header. */
  publicUrl: URL | null;
}

export interface SignatureOptions {
  mode: SignatureMode;
  skewSeconds: number;
  publicUrl: URL | null;
}

export interface ServiceOptions {
  store: Store;
  evaluator: PolicyEvaluator;
  bodyLimitBytes: number;
  idempotencyRetentionMs: number;
  rateLimits: Record<Env, RateLimit>;
  unauthenticatedLimit: RateLimit;
  webhooks: WebhookOptions;
  /** CIDRs, addresses or host names agents' tools may reach despite the SSRF guard. */
  toolAllow: readonly string[];
  embedder: Embedder;
  /** Decision items memory holds per environment (unset: its default). */
  memoryDecisions?: number;
  /** Defaults: production keys sign, a 300 s window, no public URL. */
  signatures?: Partial<SignatureOptions>;
  jwtIdentities?: JwtIdentities | null;
  /** Cluster mode: where Idempotency-Keys in flight are registered across instances. */
  idempotencyClaims?: SharedClaims | null;
  /** Cluster mode: where signature replay markers are claimed across instances. */
  replayMarks?: SharedReplayMarks | null;
  /** Cluster mode: how the other instances' policies differ from this one's (readiness reports it). */
  policyDifferences?: (() => PolicyDifference[]) | null;
  /** Cluster mode: whether an instance is alive (its unfinished work is not abandoned). */
  alive?: ((node: string) => boolean) | null;
  /** Cluster mode: catches up with the commits the cluster holds. */
  catchUp?: (() => Promise<void>) | null;
  /**
   * `--threads` mode: the state every thread of the process shares (rate limits, replay
   * markers). Memory lives on thread 0 alone; the others serve no route that reads it
   * (proxy/server.ts hands those to thread 0), so they build none.
   */
  threads?: ThreadGroup | null;
  draining(): boolean;
}

export function buildServices(options: ServiceOptions): Services {
  const { store, evaluator } = options;
  const metrics = new Metrics(options.threads ?? null);
  const keys = new KeyRegistry(store);
  const workflow = new DecisionWorkflow(new DecisionStore(store), evaluator, (check) => {
    metrics.policyEvaluation.observe({ policy: check.policy, allow: String(check.verdict.allow) }, check.durationNs / 1e9);
  });
  const audit = new AuditLog(store);
  const events = new EventLog(store, audit);
  // Another instance's commits reach the stream's and the webhooks' readers as this one's do.
  store.onReplicated(() => events.announce());
  const threads = options.threads ?? null;
  const memorySide = !threads || threads.index === 0 ? buildMemory(store, options, workflow) : null;
  const webhooks = new Webhooks(store, events, options.webhooks);
  const detach = instrument(metrics, { store, evaluator, workflow, webhooks, audit, memory: memorySide?.memory ?? null });
  const replay = new ReplayGuard(store, threads?.replayMarks ?? null);
  replay.shared = options.replayMarks ?? null;
  const signingKeys = new SigningKeyRegistry(store);
  const services: Omit<Services, 'memory' | 'objectives' | 'impact'> = {
    store,
    evaluator,
    detach,
    policyDifferences: options.policyDifferences ?? (() => []),
    alive: options.alive ?? (() => false),
    catchUp: options.catchUp ?? null,
    keys,
    sessions: new Sessions(store, keys),
    audit,
    workflow,
    keyReview: new KeyReview(keys, workflow, events),
    heldRequests: new HeldRequests(store, workflow, audit),
    agents: new GovernedAgents(store, workflow, audit, events, evaluator, new AddressGuard({ allow: options.toolAllow, allowSetting: 'GATEHOUSE_TOOL_ALLOW' })),
    idempotency: new IdempotencyStore(store, options.idempotencyRetentionMs, options.idempotencyClaims ?? null),
    events,
    webhooks,
    rateLimiter: new RateLimiter(options.rateLimits, threads?.keyBuckets ?? null),
    unauthenticated: new UnauthenticatedThrottle(store, audit, options.unauthenticatedLimit, threads?.addressBuckets ?? null),
    metrics,
    limits: { bodyBytes: options.bodyLimitBytes },
    signingKeys,
    signatures: {
      verifier: new RequestSignatureVerifier(replay, options.signatures?.skewSeconds ?? DEFAULT_SKEW_SECONDS),
      replay,
      signingKeys,
      mode: options.signatures?.mode ?? 'production',
      publicUrl: options.signatures?.publicUrl ?? null,
    },
    jwtIdentities: options.jwtIdentities ?? null,
    draining: options.draining,
  };
  if (memorySide) {
    const { memory, objectives } = memorySide;
    return { ...services, memory, objectives, impact: new ImpactTrace({ audit, decisions: workflow.decisions, events, webhooks, memory, objectives }) };
  }
  return Object.defineProperties(services, {
    memory: { get: memoryElsewhere },
    objectives: { get: memoryElsewhere },
    impact: { get: memoryElsewhere },
  }) as Services;
}

/** Memory's query side and the decisions it records. */
function buildMemory(store: Store, options: ServiceOptions, workflow: DecisionWorkflow): { memory: Memory; objectives: Objectives } {
  const memory = new Memory(store, options.embedder, { retainDecisions: options.memoryDecisions });
  const objectives = new Objectives(memory);
  const recorder = new DecisionMemory(memory, objectives, workflow, store);
  if (options.threads) recorder.recordOtherThreads();
  return { memory, objectives };
}

/** A worker thread reached for memory: a route that reads it was not handed to thread 0. */
function memoryElsewhere(): never {
  throw new Error('memory lives on thread 0 in --threads mode: a route that reads it must be handed to thread 0 (proxy/server.ts)');
}
