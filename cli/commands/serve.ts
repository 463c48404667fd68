import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ENVS, type Env } from '../../core/env.ts';
import type { RateLimit } from '../../core/rate-limiter.ts';
import { PolicyEngine } from '../../policies/engine/index.ts';
import { DEFAULTS, startServer } from '../../proxy/server.ts';

/**
 * `gatehouse serve`: the /v1 API over an LMDB store in the data directory, with the policies
 * compiled from the policies directory (and rebuilt when they change). SIGTERM or SIGINT drains
 * in-flight requests, closes the store and exits 0.
 *
 * Every option is a flag or a GATEHOUSE_* variable; the flag wins.
 */
export const summary = 'serve the /v1 API (flags or GATEHOUSE_* variables; see --help)';

export const PACKAGE_POLICIES = fileURLToPath(new URL('../../policies/rego', import.meta.url));

const HELP = `usage: gatehouse serve [options]

  --port N                 GATEHOUSE_PORT                  (${DEFAULTS.port}; 0 picks a free port)
  --host H                 GATEHOUSE_HOST                  (${DEFAULTS.host})
  --data-dir D             GATEHOUSE_DATA_DIR              (./.gatehouse)
  --policies-dir D         GATEHOUSE_POLICIES_DIR          (the package's policies/rego)
                           GATEHOUSE_ADMIN_KEY             bootstrap admin key (generated and printed once if unset)
  --body-limit BYTES       GATEHOUSE_BODY_LIMIT            (${DEFAULTS.bodyLimitBytes})
  --idempotency-ttl SEC    GATEHOUSE_IDEMPOTENCY_TTL       (${DEFAULTS.idempotencyRetentionMs / 1000})
  --rate-sandbox R/B       GATEHOUSE_RATE_LIMIT_SANDBOX    requests per second / burst (100/200)
  --rate-production R/B    GATEHOUSE_RATE_LIMIT_PRODUCTION (1000/2000)
  --durability commit|flush GATEHOUSE_DURABILITY           (commit: survives a killed process; flush: also power loss)
`;

export interface ServeSettings {
  port: number;
  host: string;
  dataDir: string;
  policiesDir: string;
  adminKey: string | undefined;
  bodyLimitBytes: number;
  idempotencyRetentionMs: number;
  rateLimits: Partial<Record<Env, RateLimit>>;
  durability: 'commit' | 'flush';
}

function number(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}, got '${text}'`);
  return value;
}

function rateLimit(name: string, text: string): RateLimit {
  const match = /^(\d+(?:\.\d+)?)\/(\d+)$/.exec(text);
  if (!match) throw new Error(`${name} must look like RATE/BURST (e.g. 100/200), got '${text}'`);
  return { ratePerSecond: Number(match[1]), burst: Number(match[2]) };
}

export function settings(args: string[], env: NodeJS.ProcessEnv = process.env): ServeSettings | 'help' {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'policies-dir': { type: 'string' },
      'body-limit': { type: 'string' },
      'idempotency-ttl': { type: 'string' },
      'rate-sandbox': { type: 'string' },
      'rate-production': { type: 'string' },
      durability: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const pick = (flag: string | undefined, variable: string) => flag ?? env[variable];
  const rateLimits: Partial<Record<Env, RateLimit>> = {};
  for (const e of ENVS) {
    const text = pick(values[`rate-${e}`], `GATEHOUSE_RATE_LIMIT_${e.toUpperCase()}`);
    if (text) rateLimits[e] = rateLimit(`--rate-${e}`, text);
  }
  const durability = pick(values.durability, 'GATEHOUSE_DURABILITY') ?? 'commit';
  if (durability !== 'commit' && durability !== 'flush') throw new Error(`--durability must be commit or flush, got '${durability}'`);
  const port = pick(values.port, 'GATEHOUSE_PORT');
  const bodyLimit = pick(values['body-limit'], 'GATEHOUSE_BODY_LIMIT');
  const ttl = pick(values['idempotency-ttl'], 'GATEHOUSE_IDEMPOTENCY_TTL');
  return {
    port: port === undefined ? DEFAULTS.port : number('--port', port, 0),
    host: pick(values.host, 'GATEHOUSE_HOST') ?? DEFAULTS.host,
    dataDir: pick(values['data-dir'], 'GATEHOUSE_DATA_DIR') ?? '.gatehouse',
    policiesDir: pick(values['policies-dir'], 'GATEHOUSE_POLICIES_DIR') ?? PACKAGE_POLICIES,
    adminKey: env.GATEHOUSE_ADMIN_KEY || undefined,
    bodyLimitBytes: bodyLimit === undefined ? DEFAULTS.bodyLimitBytes : number('--body-limit', bodyLimit, 1),
    idempotencyRetentionMs: ttl === undefined ? DEFAULTS.idempotencyRetentionMs : number('--idempotency-ttl', ttl, 1) * 1000,
    rateLimits,
    durability,
  };
}

/** Compiles and loads the policies the server and the CLI evaluate decisions with. */
export function openPolicies(policiesDir: string, dataDir: string, watch: boolean): Promise<PolicyEngine> {
  return PolicyEngine.open({
    sourceDir: policiesDir,
    buildDir: join(dataDir, 'policies'),
    watch,
    log: { info: (m) => console.log(`gatehouse: ${m}`), error: (m) => console.error(`gatehouse: ${m}`) },
  });
}

export async function run(args: string[]): Promise<number> {
  let config: ServeSettings | 'help';
  try {
    config = settings(args);
  } catch (error) {
    console.error(`gatehouse serve: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (config === 'help') {
    console.log(HELP);
    return 0;
  }
  const engine = await openPolicies(config.policiesDir, config.dataDir, true);
  const server = await startServer({ ...config, policies: engine });
  const names = engine.names();
  console.log(`gatehouse: listening on ${server.url}`);
  console.log(`gatehouse: data in ${config.dataDir}; ${names.length} policies loaded: ${names.join(', ')}`);
  if (server.adminKey.generated) {
    console.log(`gatehouse: bootstrap admin key (shown once, keep it safe): ${server.adminKey.generated}`);
  } else {
    console.log(`gatehouse: bootstrap admin key ${server.adminKey.id} (set GATEHOUSE_ADMIN_KEY to rotate it)`);
  }
  console.log(
    `gatehouse: get a sandbox key: npx gatehouse keys create --env sandbox --scopes decisions:read,decisions:write --data-dir ${config.dataDir}\n` +
      `           or: curl -s -X POST ${server.url}/v1/keys -H "authorization: Bearer $ADMIN_KEY" -H 'content-type: application/json' ` +
      `-d '{"env":"sandbox","scopes":["decisions:read","decisions:write"]}'`,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  console.log(`gatehouse: ${signal}: draining`);
  await server.close();
  await engine.close();
  console.log('gatehouse: stopped');
  return 0;
}
