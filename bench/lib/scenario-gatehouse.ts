/**
 * Gatehouse as the scenarios measure it: in the harness's process (so `--profile` can sample it),
 * on a fresh data directory under the scenario's `workDir`, the bundled policies compiled, rate
 * limits lifted, and one sandbox key issued for the load to use.
 */
import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PolicyEngine } from '../../policies/engine/index.ts';
import type { RunningServer, ServerConfig } from '../../proxy/server.ts';

export interface ScenarioKey {
  scopes: string[];
  roles?: string[];
  /** A public JWK (with its `kid`) registered as the key's signing key, for signed load. */
  signingJwk?: Record<string, unknown>;
}

export interface ScenarioGatehouse {
  server: RunningServer;
  /** The /v1 API's origin. */
  url: string;
  /** The issued key's secret. */
  secret: string;
  /** `Authorization: Bearer <secret>`, to spread into a request's headers. */
  auth: { authorization: string };
  stop(): Promise<void>;
}

const BUNDLED_POLICIES = fileURLToPath(new URL('../../policies/rego', import.meta.url));

/**
 * The bundled policies, built into `dir`. Taken from the compile cache `gatehouse serve` keeps
 * when it has them: scenarios start many fresh servers, and compiling at each start is not
 * what they measure (the policy scenario times compiles on its own).
 */
export async function openBundledPolicies(dir: string): Promise<PolicyEngine> {
  // Imported on demand: loading a scenario module stays cheap until it starts a server.
  const { PolicyEngine } = await import('../../policies/engine/index.ts');
  const { CompileCache, defaultCompileCacheDir } = await import('../../policies/compiler/compile-cache.ts');
  return PolicyEngine.open({ sourceDir: BUNDLED_POLICIES, buildDir: path.join(dir, 'policies'), compileCache: new CompileCache(defaultCompileCacheDir()) });
}

/**
 * The Wasm module of bundled policy `name`, compiled into `dir` by the project's compiler alone,
 * for a baseline that evaluates it through `@open-policy-agent/opa-wasm` without the engine.
 */
export async function compileBundledPolicy(dir: string, name: string): Promise<Uint8Array> {
  const { buildPolicies } = await import('../../policies/compiler/build.ts');
  const buildDir = path.join(dir, 'policies');
  const manifest = await buildPolicies(BUNDLED_POLICIES, buildDir);
  const entry = manifest.policies[name];
  if (!entry) throw new Error(`no bundled policy named ${name}`);
  return readFile(path.join(buildDir, entry.module));
}

/**
 * Issues `key` in the sandbox, in process (how keys are issued over HTTP is not what is
 * measured); resolves to its secret.
 */
export async function issueScenarioKey(server: RunningServer, key: ScenarioKey): Promise<string> {
  const { keys, signingKeys, store } = server.services;
  const issued = keys.draft({ env: 'sandbox', scopes: key.scopes, roles: key.roles, createdBy: server.adminKey.id });
  const signing = key.signingJwk ? await signingKeys.prepare(issued.record.id, { jwk: key.signingJwk }, server.adminKey.id) : null;
  await store.commit(() => {
    keys.write(issued.record);
    if (signing) signingKeys.write(signing);
  });
  return issued.secret;
}

/** Starts Gatehouse with `config` on top of the scenario defaults, and issues `key`. */
export async function startScenarioGatehouse(workDir: string, key: ScenarioKey, config: Partial<ServerConfig> = {}): Promise<ScenarioGatehouse> {
  const { startServer } = await import('../../proxy/server.ts');
  const dir = mkdtempSync(path.join(workDir, 'gatehouse-'));
  const engine = await openBundledPolicies(dir);
  // Rate limits are not what is measured: lift them.
  const unlimited = { ratePerSecond: 1e9, burst: 1e9 };
  const server = await startServer({ dataDir: dir, policies: engine, port: 0, rateLimits: { sandbox: unlimited, production: unlimited }, ...config });
  const secret = await issueScenarioKey(server, key);
  return {
    server,
    url: server.url,
    secret,
    auth: { authorization: `Bearer ${secret}` },
    stop: async () => {
      await server.close();
      await engine.close();
    },
  };
}
