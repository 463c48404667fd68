/**
 * Cerbos PDP, a policy decision point written in Go (the binary of the `@cerbos/cerbos-linux-x64`
 * package), as the `decisions` scenario's peer: another engine answering the same question with
 * its audit log on. It runs as a child process with a config and a policy written here: HTTP and
 * gRPC on ephemeral ports of 127.0.0.1, policies read once from a directory, every decision
 * logged to its `local` audit backend (BadgerDB) under the scenario's work directory, logging at
 * errors only, telemetry off. GOMAXPROCS=1 gives it one thread of Go code at a time, as the Node
 * servers beside it have one JavaScript thread; like them it is pinned to no core.
 *
 * The policy is decision-gate-v1 for `create` restated for Cerbos: allowed to a principal with
 * the `decisions:write` scope, and in production only when the request was signed; its output
 * says the gate, next action and approvals needed, `human_approval` when any `risk:` context
 * value is 70 or more. What Cerbos does not do is the rest of a governed decision: it
 * authenticates no one (the caller names the principal), and stores no decision.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { BaselineServer } from './baseline-servers.ts';
import { freePort } from './free-port.ts';

export interface CerbosPdp extends BaselineServer {
  /** The server's process: where its CPU time is read. */
  pid: number;
}

const RISK_THRESHOLD = 70;

const RISKY = `type(R.attr.context) == list && R.attr.context.exists(c, c.source.startsWith("risk:") && type(c.value) == double && c.value >= ${RISK_THRESHOLD}.0)`;

const POLICY = {
  apiVersion: 'api.cerbos.dev/v1',
  resourcePolicy: {
    version: 'default',
    resource: 'decision',
    rules: [
      {
        name: 'create',
        actions: ['create'],
        effect: 'EFFECT_ALLOW',
        roles: ['*'],
        condition: {
          match: { all: { of: [{ expr: '"decisions:write" in P.attr.scopes' }, { expr: 'P.attr.env != "production" || P.attr.signed == true' }] } },
        },
        output: {
          when: {
            ruleActivated: `${RISKY} ? {"gate": "human_approval", "nextAction": "approve", "approvals": 1} : {"gate": "auto", "nextAction": "execute", "approvals": 0}`,
          },
        },
      },
    ],
  },
};

/** `POST /api/check/resources` asking whether a sandbox key may create the decision `decisionBody` describes. */
export function cerbosCheckBody(decisionBody: string): string {
  return JSON.stringify({
    requestId: 'bench',
    principal: { id: 'key_bench', roles: ['sandbox'], attr: { env: 'sandbox', scopes: ['decisions:write'], signed: false } },
    resources: [{ actions: ['create'], resource: { kind: 'decision', id: 'new', attr: JSON.parse(decisionBody) as unknown } }],
  });
}

/** Starts Cerbos on its own directory under `workDir` and resolves once it reports itself serving. */
export async function startCerbos(workDir: string): Promise<CerbosPdp> {
  const binary = createRequire(import.meta.url).resolve('@cerbos/cerbos-linux-x64');
  const dir = mkdtempSync(path.join(workDir, 'cerbos-'));
  const policies = path.join(dir, 'policies');
  mkdirSync(policies);
  mkdirSync(path.join(dir, 'audit'));
  writeFileSync(path.join(policies, 'decision.json'), JSON.stringify(POLICY));
  const [httpPort, grpcPort] = [await freePort(), await freePort()];
  const config = path.join(dir, 'config.json');
  // JSON is YAML: Cerbos reads it as it is.
  writeFileSync(
    config,
    JSON.stringify({
      server: { httpListenAddr: `127.0.0.1:${httpPort}`, grpcListenAddr: `127.0.0.1:${grpcPort}` },
      storage: { driver: 'disk', disk: { directory: policies, watchForChanges: false } },
      audit: { enabled: true, accessLogsEnabled: false, decisionLogsEnabled: true, backend: 'local', local: { storagePath: path.join(dir, 'audit') } },
      telemetry: { disabled: true },
    }),
  );
  const child = spawn(binary, ['server', `--config=${config}`, '--log-level=error'], {
    env: { ...process.env, GOMAXPROCS: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  let spawnError: Error | null = null;
  child.once('error', (error) => (spawnError = error));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    process.kill(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const origin = `http://127.0.0.1:${httpPort}`;
  for (let i = 0; ; i++) {
    if (spawnError) throw new Error(`cerbos did not start: ${(spawnError as Error).message}`);
    if (child.exitCode !== null) throw new Error(`cerbos exited ${child.exitCode}: ${stderr}`);
    const serving = await fetch(`${origin}/_cerbos/health`).then((r) => r.ok, () => false);
    if (serving) break;
    if (i === 200) {
      await stop();
      throw new Error(`cerbos did not start in 20 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { origin, pid: child.pid!, close: stop };
}
