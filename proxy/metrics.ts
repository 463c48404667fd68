import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { AuditCheckpoints } from '../core/audit-checkpoints.ts';
import type { AuditLog } from '../core/audit-log.ts';
import type { DecisionWorkflow } from '../core/decision-workflow.ts';
import { ENVS } from '../core/env.ts';
import type { Memory } from '../core/memory/memory.ts';
import type { PolicyEvaluator } from '../core/policy-evaluator.ts';
import type { Store } from '../core/store.ts';
import type { ThreadGroup } from '../core/threads/thread-group.ts';
import type { Webhooks } from '../core/webhooks/webhooks.ts';

/**
 * Prometheus metrics for one server. Each server has its own registry so several can run in one
 * process (the tests do) without sharing counters.
 */
const LATENCY_BUCKETS = [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class Metrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: 'gatehouse_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly latency = new Histogram({
    name: 'gatehouse_http_request_duration_seconds',
    help: 'Time from request to reply, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly policyEvaluation = new Histogram({
    name: 'gatehouse_policy_evaluation_duration_seconds',
    help: 'Policy evaluation time, by policy and outcome.',
    labelNames: ['policy', 'allow'] as const,
    buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05],
    registers: [this.registry],
  });

  readonly auditAppend = new Histogram({
    name: 'gatehouse_audit_append_duration_seconds',
    help: 'Time to commit a call and its audit entry (shared LMDB transactions included).',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'gatehouse_rate_limited_total',
    help: 'Requests refused by rate limits, by key environment.',
    labelNames: ['env'] as const,
    registers: [this.registry],
  });

  readonly proxied = new Counter({
    name: 'gatehouse_proxy_requests_total',
    help: 'Requests the proxy gateway handled, by route, method, outcome (forwarded, denied, held, failed) and status sent.',
    labelNames: ['route', 'method', 'outcome', 'status'] as const,
    registers: [this.registry],
  });

  readonly upstreamLatency = new Histogram({
    name: 'gatehouse_proxy_upstream_duration_seconds',
    help: 'Time from forwarding a request to the upstream response headers, by route and upstream status.',
    labelNames: ['route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly streamConnections = new Gauge({
    name: 'gatehouse_stream_connections',
    help: 'Open WS /v1/streaming connections.',
    registers: [this.registry],
  });

  readonly streamSlowConsumers = new Counter({
    name: 'gatehouse_stream_slow_consumers_total',
    help: 'Stream connections closed (4008) because their unsent backlog passed the bound.',
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'gatehouse_webhook_attempts_total',
    help: 'Webhook delivery attempts, by result (ok: a 2xx answer; error: any other answer or none).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'gatehouse_webhook_deliveries_total',
    help: 'Webhook deliveries finished, by status (delivered, or failed once its retries ran out).',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly policyReloads = new Counter({
    name: 'gatehouse_policy_reloads_total',
    help: 'Policy hot reloads, by result (ok, or error: the previous policies stay loaded).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  /**
   * Decisions stored, by the status and gate they were stored with: each transition counts once.
   * Counted in a plain map on the write path and copied into the counter when scraped, so a
   * decision costs one map update rather than prom-client's label hashing.
   */
  private readonly decisionCounts = new Map<string, { status: string; gate: string; count: number; reported: number }>();

  readonly decisions = new Counter({
    name: 'gatehouse_decisions_total',
    help: 'Decisions stored, by the status and gate they were stored with (every transition counts once).',
    labelNames: ['status', 'gate'] as const,
    registers: [this.registry],
    collect: () => {
      for (const counted of this.decisionCounts.values()) {
        this.decisions.inc({ status: counted.status, gate: counted.gate }, counted.count - counted.reported);
        counted.reported = counted.count;
      }
    },
  });

  /** The audit log the chain gauges read when scraped, so appends pay nothing for them (`instrument`). */
  private chain: { audit: AuditLog; checkpoints: AuditCheckpoints } | null = null;

  readonly auditHeight = new Gauge({
    name: 'gatehouse_audit_chain_height',
    help: 'Entries in the audit hash chain: the number of the last one.',
    // One store's, whichever thread reports it (`--threads`).
    aggregator: 'max',
    registers: [this.registry],
    collect: () => {
      if (this.chain) this.auditHeight.set(this.chain.audit.tail().seq);
    },
  });

  readonly auditCheckpointSeq = new Gauge({
    name: 'gatehouse_audit_last_checkpoint_seq',
    help: 'The audit entry the last signed checkpoint covers (0: none yet); the height minus this is what is chained but not signed.',
    // One store's, whichever thread reports it (`--threads`).
    aggregator: 'max',
    registers: [this.registry],
    collect: () => {
      if (this.chain) this.auditCheckpointSeq.set(this.chain.checkpoints.last()?.seq ?? 0);
    },
  });

  readonly auditCheckpointTime = new Gauge({
    name: 'gatehouse_audit_last_checkpoint_timestamp_seconds',
    help: 'When the last audit checkpoint was signed, in Unix seconds (0: none yet).',
    // One store's, whichever thread reports it (`--threads`).
    aggregator: 'max',
    registers: [this.registry],
    collect: () => {
      const last = this.chain?.checkpoints.last();
      if (this.chain) this.auditCheckpointTime.set(last ? Date.parse(last.at) / 1000 : 0);
    },
  });

  /** Memory, read when scraped (`instrument`). */
  private memory: Pick<Memory, 'space'> | null = null;

  readonly memoryVersions = new Gauge({
    name: 'gatehouse_memory_versions',
    help: "Versions memory's query side holds in this process's heap, about 1.7 KB each (docs/memory.md): every decision recorded adds at least one, and retention drops the oldest decisions'.",
    labelNames: ['env'],
    registers: [this.registry],
    collect: () => {
      if (!this.memory) return;
      for (const env of ENVS) this.memoryVersions.set({ env }, this.memory.space(env).size);
    },
  });

  /** Requests this thread answered, for `gatehouse_thread_requests` in `--threads` mode. */
  answered = 0;

  /**
   * In `--threads` mode (core/threads/thread-group.ts) each thread counts its own requests, and a
   * scrape, whichever thread it reaches, reports the sums over every thread. The process's own
   * figures (CPU, resident memory, file descriptors) are the same from any thread, so only
   * thread 0 reports them, its heap and event loop with them; the chain's gauges are each the
   * same store's, so one thread's is reported.
   */
  constructor(private readonly threads: ThreadGroup | null = null) {
    if (!threads || threads.index === 0) collectDefaultMetrics({ register: this.registry, prefix: 'gatehouse_' });
    if (!threads) return;
    const answered = () => this.answered;
    new Gauge({
      name: 'gatehouse_thread_requests',
      help: 'Requests each thread has answered since it started (--threads): how the kernel spreads connections among them.',
      labelNames: ['thread'],
      registers: [this.registry],
      collect() {
        this.set({ thread: String(threads.index) }, answered());
      },
    });
    threads.provide(() => this.registry.getMetricsAsJSON());
  }

  /** The Prometheus text of a scrape: this server's, or in `--threads` mode every thread's summed. */
  async exposition(): Promise<string> {
    if (!this.threads) return this.registry.metrics();
    const all = (await this.threads.gather()) as MetricObjectWithValues<MetricValue<string>>[][];
    return AggregatorRegistry.aggregate(all).metrics();
  }

  readAuditChain(store: Store, audit: AuditLog): void {
    this.chain = { audit, checkpoints: new AuditCheckpoints(store, audit) };
  }

  readMemory(memory: Pick<Memory, 'space'>): void {
    this.memory = memory;
  }

  countDecision(status: string, gate: string): void {
    const key = `${status} ${gate}`;
    const counted = this.decisionCounts.get(key);
    if (counted) counted.count++;
    else this.decisionCounts.set(key, { status, gate, count: 1, reported: 0 });
  }
}

/** What `instrument` listens to and reads. */
export interface Instrumented {
  store: Store;
  evaluator: PolicyEvaluator;
  workflow: DecisionWorkflow;
  webhooks: Webhooks;
  audit: AuditLog;
  /** Null on a worker thread of `--threads`, which holds no memory. */
  memory: Memory | null;
}

/**
 * Connects the metrics to the services they describe. Decisions are counted once their write is
 * committed (one closure and one map update per decision written); webhook attempts and reloads
 * as they are recorded; the audit and memory gauges are read when scraped. Returns how to stop
 * listening to the policy engine.
 */
export function instrument(metrics: Metrics, { store, evaluator, workflow, webhooks, audit, memory }: Instrumented): () => void {
  workflow.use({ written: (record) => store.afterCommit(() => metrics.countDecision(record.status, record.gate)) });
  webhooks.dispatcher.onAttempt((ok, status) => {
    metrics.webhookAttempts.inc({ result: ok ? 'ok' : 'error' });
    if (status !== 'pending') metrics.webhookDeliveries.inc({ status });
  });
  const stop = evaluator.onReload?.(({ ok }) => metrics.policyReloads.inc({ result: ok ? 'ok' : 'error' }));
  metrics.readAuditChain(store, audit);
  if (memory) metrics.readMemory(memory);
  return stop ?? (() => {});
}
