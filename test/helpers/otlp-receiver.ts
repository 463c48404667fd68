import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OTLP/HTTP trace receiver on 127.0.0.1: what is posted to /v1/traces, decoded from OTLP JSON
 * (the encoding Gatehouse's exporter uses).
 */
interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code?: number; message?: string };
}

export interface OtlpExport {
  contentType: string | undefined;
  spans: OtlpSpan[];
  service: unknown;
}

/** OTLP's span kinds, as the JSON encoding numbers them. */
export const SPAN_KIND = { server: 2, client: 3 } as const;

/** OTLP's status code of a span that failed. */
export const STATUS_ERROR = 2;

export async function startOtlpReceiver(t: Teardown): Promise<{ url: string; exports: OtlpExport[]; spans(): OtlpSpan[] }> {
  const exports: OtlpExport[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: unknown }> }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const resourceSpans of body.resourceSpans) {
        const service = resourceSpans.resource.attributes.find((a) => a.key === 'service.name')?.value;
        exports.push({ contentType: req.headers['content-type'], spans: resourceSpans.scopeSpans.flatMap((s) => s.spans), service });
      }
      res.writeHead(req.url === '/v1/traces' ? 200 : 404, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports, spans: () => exports.flatMap((e) => e.spans) };
}

/** The value of a span's attribute, whatever its OTLP type. */
export const attribute = (span: OtlpSpan, key: string): unknown => Object.values(span.attributes.find((a) => a.key === key)?.value ?? {})[0];
