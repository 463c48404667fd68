import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Tracer } from '@opentelemetry/api';
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
 */
export class RequestTrace {
  /** Each stage's name and start, in `performance.now()` milliseconds, in order. */
  readonly marks: Array<[string, number]> = [];

  mark(stage: string): void {
    this.marks.push([stage, performance.now()]);
  }
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** The caller's span as the parent, when its W3C traceparent is well formed. */
function parentOf(traceparent: string | undefined): Context {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true });
}

/** Epoch milliseconds of a `performance.now()` reading, as span times take them. */
const epochMs = (now: number) => performance.timeOrigin + now;

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

  /** Exports what is buffered and stops. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
