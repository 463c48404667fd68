import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { PolicyCheck } from '../core/decision-workflow.ts';

/**
 * OpenTelemetry traces of requests, exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; the exporter reads the rest of the standard
 * OTEL_* settings itself. A request's span continues the caller's W3C `traceparent`.
 *
 * Off, it is free: the SDK is not even loaded, requests carry `trace: null`, and each stage
 * boundary costs one null test. On, stages only note when they start (a name and a number);
 * the spans are built from those marks after the reply is sent and exported in batches, which
 * costs a few microseconds per request and stage.
 *
 * The proxy gateway's requests are traced as they happen instead (GatewaySpan, UpstreamSpan):
 * their upstream exchanges need a span id before they are sent, to pass on as `traceparent`.
 */
export class RequestTrace {
  /** Each stage's name and start, in `performance.now()` milliseconds, in order. */
  readonly marks: Array<[string, number]> = [];

  mark(stage: string): void {
    this.marks.push([stage, performance.now()]);
  }
}

/** A W3C traceparent of version 00; all-zero trace and span ids are invalid. */
export const TRACEPARENT = /^00-(?!0{32})([\da-f]{32})-(?!0{16})([\da-f]{16})-([\da-f]{2})$/;

/** The caller's span as the parent, when its W3C traceparent is well formed. */
function parentOf(traceparent: string | undefined): Context {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true });
}

/** Epoch milliseconds of a `performance.now()` reading, as span times take them. */
const epochMs = (now: number) => performance.timeOrigin + now;

/** The traceparent that makes `span` the parent of what receives it. */
function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

/**
 * Query parameters whose values are credentials, by name: OpenTelemetry's list for `url.full`
 * (AWSAccessKeyId, Signature, sig, X-Goog-Signature) and whatever names a key, token, secret,
 * password, credential, session or authorization code. Their values are sent as `REDACTED`; a
 * harmless parameter whose name matches loses its value in the span only.
 */
const SECRET_PARAMETER = /key|token|secret|passw|sig|auth|credential|session|^code$/i;

/** `url.full` of an upstream exchange: the origin and the path sent, secrets in the query redacted. */
function fullUrl(origin: URL, path: string): string {
  const q = path.indexOf('?');
  if (q === -1) return origin.origin + path;
  const query = new URLSearchParams(path.slice(q + 1));
  for (const name of new Set(query.keys())) if (SECRET_PARAMETER.test(name)) query.set(name, 'REDACTED');
  return `${origin.origin}${path.slice(0, q)}?${query}`;
}

/** One exchange with an upstream, as its client span describes it. */
export interface UpstreamCall {
  method: string;
  /** Scheme, host and port of the upstream. */
  origin: URL;
  /** Path and query sent to the upstream. */
  path: string;
  /** How many times the same request was sent before (retries). */
  resendCount?: number;
  attributes?: Attributes;
}

function startUpstreamSpan(tracer: Tracer, parent: Context, call: UpstreamCall): UpstreamSpan {
  const { origin } = call;
  const attributes: Attributes = {
    'http.request.method': call.method,
    'url.full': fullUrl(origin, call.path),
    'server.address': origin.hostname.replace(/^\[(.*)\]$/, '$1'),
    'server.port': Number(origin.port) || (origin.protocol === 'https:' ? 443 : 80),
    ...(call.resendCount ? { 'http.request.resend_count': call.resendCount } : {}),
    ...call.attributes,
  };
  return new UpstreamSpan(tracer.startSpan(call.method, { kind: SpanKind.CLIENT, attributes }, parent));
}

/**
 * An exchange with an upstream while it lasts: a client span, which the upstream receives as the
 * parent of its own through `traceparent`.
 */
export class UpstreamSpan {
  /** What to send the upstream as `traceparent`. */
  readonly traceparent: string;

  constructor(private readonly span: Span) {
    this.traceparent = traceparentOf(span);
  }

  /** The upstream's status, once its response began; any 4xx or 5xx is an error for a client span (OpenTelemetry's HTTP conventions). */
  answered(status: number): void {
    this.span.setAttribute('http.response.status_code', status);
    if (status >= 400) this.span.setAttribute('error.type', String(status)).setStatus({ code: SpanStatusCode.ERROR });
  }

  /** Ends the span, as an error when `failure` says why no (complete) answer came. Only the first call counts. */
  end(failure: string | null = null): void {
    // The SDK's spans stop recording when they end.
    if (!this.span.isRecording()) return;
    if (failure) this.span.setAttribute('error.type', failure).setStatus({ code: SpanStatusCode.ERROR, message: failure });
    this.span.end();
  }
}

/** A gateway request while it lasts: a server span, continuing the caller's traceparent, over its upstream exchanges. */
export class GatewaySpan {
  /** What a request held for approval keeps as `traceparent`: its send is a child of this span. */
  readonly traceparent: string;

  constructor(
    private readonly tracer: Tracer,
    private readonly method: string,
    private readonly span: Span,
    private readonly context: Context,
  ) {
    this.traceparent = traceparentOf(span);
  }

  /** A client span under this one for one exchange with the upstream. */
  upstream(call: UpstreamCall): UpstreamSpan {
    return startUpstreamSpan(this.tracer, this.context, call);
  }

  /** Ends the request's span with its route (`proxy:<name>`, as the audit log names it) and the status answered. */
  end(route: string, status: number): void {
    this.span.updateName(`${this.method} ${route}`);
    this.span.setAttributes({ 'gatehouse.proxy.route': route, 'http.response.status_code': status });
    if (status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }
}

export class Tracing {
  private constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  /** Tracing as the environment configures it, or null when no OTLP endpoint is set. */
  static async fromEnv(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
    if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return null;
    const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'gatehouse' }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    return new Tracing(provider, provider.getTracer('gatehouse'));
  }

  begin(): RequestTrace {
    return new RequestTrace();
  }

  /**
   * The request's spans, from its marks: a server span for the request, a child per stage
   * lasting until the next stage began (the last until `endedAt`), and the policy evaluation
   * under its stage.
   */
  finish(
    request: RequestTrace,
    span: { name: string; startedAt: number; endedAt: number; traceparent: string | undefined; attributes: Attributes; status: number; policy: PolicyCheck | null },
  ): void {
    const parent = parentOf(span.traceparent);
    const root = this.tracer.startSpan(span.name, { kind: SpanKind.SERVER, startTime: epochMs(span.startedAt), attributes: span.attributes }, parent);
    if (span.status >= 500) root.setStatus({ code: SpanStatusCode.ERROR });
    const inRequest = trace.setSpan(parent, root);
    const { marks } = request;
    marks.forEach(([name, start], i) => {
      const end = marks[i + 1]?.[1] ?? span.endedAt;
      const stage = this.tracer.startSpan(name, { startTime: epochMs(start) }, inRequest);
      const check = span.policy;
      if (name === 'policy' && check) {
        const attributes = { 'gatehouse.policy': check.policy, 'gatehouse.policy.module_hash': check.moduleHash, 'gatehouse.policy.allow': check.verdict.allow, 'gatehouse.policy.gate': check.verdict.gate };
        this.tracer.startSpan('policy.evaluate', { startTime: epochMs(start), attributes }, trace.setSpan(inRequest, stage)).end(epochMs(start + check.durationNs / 1e6));
      }
      stage.end(epochMs(end));
    });
    root.end(epochMs(span.endedAt));
  }

  /** The server span of a proxy gateway request, started now; it is named when it ends. */
  gatewayRequest(request: { method: string; path: string; traceparent: string | undefined; requestId: string }): GatewaySpan {
    const parent = parentOf(request.traceparent);
    const attributes = { 'http.request.method': request.method, 'url.path': request.path, 'gatehouse.request_id': request.requestId };
    const span = this.tracer.startSpan(request.method, { kind: SpanKind.SERVER, attributes }, parent);
    return new GatewaySpan(this.tracer, request.method, span, trace.setSpan(parent, span));
  }

  /**
   * A client span for an exchange whose request is no longer in progress here: a held request
   * sent once approved continues the trace it was held in, from the `traceparent` it kept.
   */
  upstreamCall(traceparent: string | undefined, call: UpstreamCall): UpstreamSpan {
    return startUpstreamSpan(this.tracer, parentOf(traceparent), call);
  }

  /** Exports what is buffered and stops. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
