import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { PolicyEvaluator } from '../../core/policy-evaluator.ts';
import { signRequest, type SigningKey } from '../../core/signatures/signer.ts';
import { startServer, type RunningServer, type ServerConfig } from '../../proxy/server.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../bench/lib/signing-key-pairs.ts';

/**
 * Test scaffolding: servers on ephemeral ports over LMDB in temporary directories, always shut
 * down by the test that started them.
 *
 * Production keys must sign their requests (RFC 9421). The helpers remember a signing key per
 * API key secret (`signers`): `call` signs every request made with a secret that has one, and
 * `startTestServer` gives the bootstrap admin one, so tests use the admin as before.
 */
export const signers = new Map<string, SigningKey>();

/** A fresh Ed25519 signing key and the public JWK to register for it. */
export function newSigningKey(kid = `test-${randomBytes(6).toString('hex')}`): SigningKeyPair {
  return generateSigningKeyPair('ed25519', kid);
}

/**
 * Registers a signing key for the API key `keyId` over HTTP, unsigned (allowed for a key's first
 * signing key), and remembers it for `secret`.
 */
export async function enrollSigner(url: string, secret: string, keyId: string): Promise<SigningKey> {
  const { signer, jwk } = newSigningKey();
  const answer = await call(url, 'POST', `/v1/keys/${keyId}/signing-keys`, { key: secret, body: { jwk }, signer: null });
  if (answer.status !== 201) throw new Error(`registering a signing key failed: ${answer.status} ${answer.text}`);
  signers.set(secret, signer);
  return signer;
}
interface Teardown {
  teardown(fn: () => unknown): void;
}

/** An evaluator with nothing loaded: every policy name is unknown. Used where no policy is involved. */
export const NO_POLICIES: PolicyEvaluator = {
  names: () => [],
  has: () => false,
  info: () => undefined,
  evaluateJson: (policy) => ({ policy, moduleHash: '', value: undefined, error: 'no policies are loaded', durationNs: 0 }),
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
  /** The admin's signing key (the helpers sign with it already). */
  adminSigner: SigningKey;
  dataDir: string;
}

export async function startTestServer(t: Teardown, config: Partial<ServerConfig> = {}): Promise<TestServer> {
  const dataDir = config.dataDir ?? tempDir(t);
  const server = await startServer({ policies: NO_POLICIES, host: '127.0.0.1', port: 0, ...config, dataDir });
  t.teardown(() => server.close());
  const admin = server.adminKey.generated ?? config.adminKey ?? '';
  // Registered directly rather than over HTTP so the audit log holds what the tests expect.
  const { signer, jwk } = newSigningKey();
  const { signingKeys, store } = server.services;
  const record = await signingKeys.prepare(server.adminKey.id, { jwk }, server.adminKey.id);
  await store.commit(() => signingKeys.write(record));
  signers.set(admin, signer);
  return { server, url: server.url, admin, adminSigner: signer, dataDir };
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
  /** Signs with this key; `null` sends unsigned. Default: the key remembered for `key`, if any. */
  signer?: SigningKey | null;
}

export async function call(url: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const signer = options.signer === undefined ? (options.key ? signers.get(options.key) : undefined) : options.signer;
  if (signer) Object.assign(headers, signRequest({ method, url: url + path, headers, body: body ?? null }, signer));
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
  let answer = await call(url, 'POST', '/v1/keys', { key: admin, body });
  // A production admin this process has no signing key for (one started as a child process)
  // registers its first one, as an operator would, and retries.
  if (answer.status === 401 && answer.json?.code === 'signature_required' && !signers.has(admin)) {
    await enrollSigner(url, admin, answer.json.keyId);
    answer = await call(url, 'POST', '/v1/keys', { key: admin, body });
  }
  if (answer.status !== 201) throw new Error(`issuing a key failed: ${answer.status} ${answer.text}`);
  return answer.json;
}
