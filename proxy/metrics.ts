import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'gatehouse_' });
  }
}
