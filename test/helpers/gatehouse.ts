import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PolicyEvaluator } from '../../core/policy-evaluator.ts';
import { startServer, type RunningServer, type ServerConfig } from '../../proxy/server.ts';

/**
 * Test scaffolding: servers on ephemeral ports over LMDB in temporary directories, always shut
 * down by the test that started them.
 */
interface Teardown {
  teardown(fn: () => unknown): void;
}

/** An evaluator with nothing loaded: every policy name is unknown. Used where no policy is involved. */
export const NO_POLICIES: PolicyEvaluator = {
  names: () => [],
  has: () => false,
  info: () => undefined,
  evaluate: (policy) => ({ policy, moduleHash: '', value: undefined, error: 'no policies are loaded', durationNs: 0 }),
};

export function tempDir(t: Teardown, prefix = 'gatehouse-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface TestServer {
  server: RunningServer;
  url: string;
  admin: string;
  dataDir: string;
}

export async function startTestServer(t: Teardown, config: Partial<ServerConfig> = {}): Promise<TestServer> {
  const dataDir = config.dataDir ?? tempDir(t);
  const server = await startServer({ policies: NO_POLICIES, host: '127.0.0.1', port: 0, ...config, dataDir });
  t.teardown(() => server.close());
  return { server, url: server.url, admin: server.adminKey.generated ?? config.adminKey ?? '', dataDir };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  /** Sent as is, without JSON encoding or a content type. */
  raw?: string;
  headers?: Record<string, string>;
}

export async function call(url: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(url + path, { method, headers, ...(body !== undefined ? { body } : {}), signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export async function issueKey(
  url: string,
  admin: string,
  body: { env: 'sandbox' | 'production'; scopes: string[]; roles?: string[]; name?: string },
): Promise<{ id: string; key: string }> {
  const answer = await call(url, 'POST', '/v1/keys', { key: admin, body });
  if (answer.status !== 201) throw new Error(`issuing a key failed: ${answer.status} ${answer.text}`);
  return answer.json;
}
