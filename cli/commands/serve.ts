import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AuditKeyError } from '../../core/audit-signing-key.ts';
import { ClusterJoinError, type ClusterOptions } from '../../core/cluster/cluster-link.ts';
import { clusterSettings } from '../cluster-settings.ts';
import { ENVS, type Env } from '../../core/env.ts';
import type { RateLimit } from '../../core/rate-limiter.ts';
import { CompileCache, defaultCompileCacheDir } from '../../policies/compiler/compile-cache.ts';
import { PolicyEngine, readBundleVerificationKeys } from '../../policies/engine/index.ts';
import { GATEWAY_DEFAULTS } from '../../proxy/gateway/gateway.ts';
import { ListenError } from '../../proxy/http/listen-error.ts';
import { DEFAULTS, startServer, type RunningServer } from '../../proxy/server.ts';
import { JwtIdentities } from '../../core/jwt-identities.ts';
import { httpEmbedderFromEnv, type HttpEmbedder } from '../../core/memory/http-embedder.ts';
import { COMPACT_AT, DEFAULT_RETAINED_DECISIONS } from '../../core/memory/retention.ts';
import { DEFAULT_SKEW_SECONDS } from '../../core/signatures/request-verifier.ts';
import { isSignatureMode, SIGNATURE_MODES, type SignatureMode } from '../../core/signatures/requirement.ts';
import type { RetentionPolicy } from '../../core/events/event-log.ts';
import type { WebhookOptions } from '../../core/webhooks/webhooks.ts';
import type { StreamOptions } from '../../proxy/streaming/stream-hub.ts';
import { parseDuration, parseDurationList } from '../duration.ts';
import { log } from '../../core/log.ts';
import { ThreadGroup } from '../../core/threads/thread-group.ts';
import { startThreadWorkers, type ThreadWorkers } from '../thread-workers.ts';

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
  --reuse-port             GATEHOUSE_REUSE_PORT=1          share the API port with other instances started so (SO_REUSEPORT);
                                                           without it a port in use is an error
  --threads N              GATEHOUSE_THREADS               threads serving the API on one port and data directory (1); raise it to the
                                                           cores the host gives the sidecar (docs/api.md, Threads)
  --data-dir D             GATEHOUSE_DATA_DIR              (./.gatehouse)
  --policies-dir D         GATEHOUSE_POLICIES_DIR          (the package's policies/rego)
  --bundle-verification-keys FILE GATEHOUSE_BUNDLE_VERIFICATION_KEYS  JSON file of key id → JWK: *.tar.gz policy bundles
                                                           must be signed with one of them (docs/policies.md, Bundles)
  --policy-cache DIR|off   GATEHOUSE_POLICY_CACHE          compiled policies kept for the next start (~/.cache/gatehouse/policies;
                                                           off: compile at every start); keep it as private as the policies
  --policy-max-iterations N GATEHOUSE_POLICY_MAX_ITERATIONS loop iterations and calls one policy evaluation may take before it is
                                                           stopped and denied (10000000; docs/security.md)
                           GATEHOUSE_ADMIN_KEY             bootstrap admin key (generated and printed once if unset)
  --body-limit BYTES       GATEHOUSE_BODY_LIMIT            (${DEFAULTS.bodyLimitBytes})
  --idempotency-ttl SEC    GATEHOUSE_IDEMPOTENCY_TTL       (${DEFAULTS.idempotencyRetentionMs / 1000})
  --rate-sandbox R/B       GATEHOUSE_RATE_LIMIT_SANDBOX    requests per second / burst (100/200)
  --rate-production R/B    GATEHOUSE_RATE_LIMIT_PRODUCTION (1000/2000)
  --rate-unauthenticated R/B GATEHOUSE_RATE_LIMIT_UNAUTHENTICATED  recorded refusals of unauthenticated callers per
                           client address, per second / burst (0.2/10); beyond it 429, counted (docs/security.md)
  --durability commit|flush GATEHOUSE_DURABILITY           (commit: survives a killed process; flush: also power loss)
  --commit-window MS       GATEHOUSE_COMMIT_WINDOW         how long a commit waits for others to share its transaction (0: the
                                                           event-loop turn; 5 with --nats); 1 adds ~1 ms at p50 (README, Benchmarks)
  --audit-key FILE         GATEHOUSE_AUDIT_KEY             the Ed25519 key audit checkpoints are signed with (D/audit-signing-key.pem,
                                                           created 0600 when missing); keep it outside the data directory (docs/security.md)
  --signatures MODE        GATEHOUSE_SIGNATURES            who must sign requests: production (default: production keys), all, off
  --signature-skew SEC     GATEHOUSE_SIGNATURE_SKEW        how far a signature's created may be from now (300)
  --public-url URL         GATEHOUSE_PUBLIC_URL            scheme and authority signed as @target-uri behind a proxy (unset: http and Host)
                           GATEHOUSE_JWT_ISSUERS           JSON file of JWT issuers whose tokens authenticate (docs/signatures.md)
  --proxy-routes FILE      GATEHOUSE_PROXY_ROUTES          routes file (JSON or YAML) for the proxy gateway (docs/proxy.md); unset: no gateway
  --proxy-port N           GATEHOUSE_PROXY_PORT            (${GATEWAY_DEFAULTS.port}; 0 picks a free port)
  --event-retention DUR    GATEHOUSE_EVENT_RETENTION       how long the event log keeps events (7d)
  --event-retention-count N GATEHOUSE_EVENT_RETENTION_COUNT at most this many events (1000000)
  --stream-max-backpressure BYTES GATEHOUSE_STREAM_MAX_BACKPRESSURE  unsent bytes before a subscriber is closed with 4008 (1048576)
  --stream-heartbeat DUR   GATEHOUSE_STREAM_HEARTBEAT      heartbeat message interval (30s)
  --webhook-allow LIST     GATEHOUSE_WEBHOOK_ALLOW         CIDRs, addresses or hosts webhooks may reach despite the SSRF guard
  --webhook-retry-schedule LIST GATEHOUSE_WEBHOOK_RETRY_SCHEDULE  waits between attempts (5s,5m,30m,2h,5h,10h)
  --webhook-timeout DUR    GATEHOUSE_WEBHOOK_TIMEOUT       one delivery attempt's bound (15s)
  --webhook-disable-after N GATEHOUSE_WEBHOOK_DISABLE_AFTER failed attempts in a row that disable an endpoint (20)
  --nats URLS              GATEHOUSE_NATS_URL              cluster mode: comma-separated NATS URLs (docs/cluster.md); unset: single node
                           GATEHOUSE_NODE_ID               this instance's name in the cluster (host name and process id)
  --nats-namespace NAME    GATEHOUSE_NATS_NAMESPACE        prefix of the cluster's stream and buckets (gatehouse)
                           GATEHOUSE_NATS_REPLICAS         replicas of the stream and buckets (3 on a NATS cluster, 1 on one server)
                           GATEHOUSE_NATS_USER, _PASSWORD, _TOKEN  NATS credentials
                           GATEHOUSE_NATS_CA, _CERT, _KEY  NATS TLS files (CA, client certificate and key)
  --tool-allow LIST        GATEHOUSE_TOOL_ALLOW            CIDRs, addresses or hosts agents' tools may reach despite the SSRF guard
                           GATEHOUSE_EMBEDDER_URL          an OpenAI-style embeddings endpoint for memory (unset: the offline word vectors);
                           GATEHOUSE_EMBEDDER_MODEL, _DIMENSIONS, _API_KEY  its model, vector size and bearer token (docs/memory.md)
  --memory-decisions N     GATEHOUSE_MEMORY_DECISIONS      decisions memory keeps searchable per environment: the newest N to ${COMPACT_AT}N
                                                           (${DEFAULT_RETAINED_DECISIONS}); about 1.7 KB of heap each (docs/memory.md, Retention)
  DUR is a number with a unit: 250ms, 5s, 5m, 2h, 7d (seconds without one).
`;

export interface ServeSettings {
  port: number;
  /** Threads serving the API (cli/thread-workers.ts); 1: the main thread alone. */
  threads: number;
  reusePort: boolean;
  host: string;
  dataDir: string;
  policiesDir: string;
  /** The keys file OPA bundles are verified with, when given. */
  bundleKeysFile: string | undefined;
  /** Where compiled policies are kept for the next start; undefined: compile every time. */
  policyCacheDir: string | undefined;
  /** Loop iterations and calls per policy evaluation, when not the engine's default. */
  policyMaxIterations: number | undefined;
  adminKey: string | undefined;
  bodyLimitBytes: number;
  idempotencyRetentionMs: number;
  rateLimits: Partial<Record<Env, RateLimit>>;
  /** The unauthenticated-refusal throttle's limit per client, when not the default. */
  unauthenticatedLimit: RateLimit | undefined;
  durability: 'commit' | 'flush';
  /** Undefined: the server's default for its mode (0, or CLUSTER_COMMIT_WINDOW_MS in cluster mode). */
  commitWindowMs: number | undefined;
  /** The audit checkpoint signing key's file, when not the data directory's. */
  auditKeyFile: string | undefined;
  signatures: SignatureMode;
  signatureSkewSeconds: number;
  publicUrl: string | undefined;
  /** The JWT issuers file (GATEHOUSE_JWT_ISSUERS), read at start. */
  jwtIssuersFile: string | undefined;
  /** The proxy gateway, when a routes file is named. */
  proxy: { routesFile: string; port: number } | undefined;
  eventRetention: Partial<RetentionPolicy>;
  /** Memory's embedding service, when GATEHOUSE_EMBEDDER_URL names one. */
  embedder: HttpEmbedder | undefined;
  /** Decision items memory holds per environment, when not the default. */
  memoryDecisions: number | undefined;
  streaming: Partial<StreamOptions>;
  webhooks: Partial<WebhookOptions>;
  toolAllow: string[];
  /** Cluster mode, when NATS URLs are given. */
  cluster: ClusterOptions | undefined;
}

function number(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}, got '${text}'`);
  return value;
}

/** A comma-separated list, blanks dropped. */
function list(text: string): string[] {
  return text.split(',').map((e) => e.trim()).filter(Boolean);
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
      threads: { type: 'string' },
      'reuse-port': { type: 'boolean' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'policies-dir': { type: 'string' },
      'bundle-verification-keys': { type: 'string' },
      'policy-cache': { type: 'string' },
      'policy-max-iterations': { type: 'string' },
      'body-limit': { type: 'string' },
      'idempotency-ttl': { type: 'string' },
      'rate-sandbox': { type: 'string' },
      'rate-production': { type: 'string' },
      'rate-unauthenticated': { type: 'string' },
      durability: { type: 'string' },
      'commit-window': { type: 'string' },
      'memory-decisions': { type: 'string' },
      'audit-key': { type: 'string' },
      signatures: { type: 'string' },
      'signature-skew': { type: 'string' },
      'public-url': { type: 'string' },
      'proxy-routes': { type: 'string' },
      'proxy-port': { type: 'string' },
      'event-retention': { type: 'string' },
      'event-retention-count': { type: 'string' },
      'stream-max-backpressure': { type: 'string' },
      'stream-heartbeat': { type: 'string' },
      'webhook-allow': { type: 'string' },
      'webhook-retry-schedule': { type: 'string' },
      'webhook-timeout': { type: 'string' },
      'webhook-disable-after': { type: 'string' },
      'tool-allow': { type: 'string' },
      nats: { type: 'string' },
      'nats-namespace': { type: 'string' },
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
  const unauthenticated = pick(values['rate-unauthenticated'], 'GATEHOUSE_RATE_LIMIT_UNAUTHENTICATED');
  const durability = pick(values.durability, 'GATEHOUSE_DURABILITY') ?? 'commit';
  if (durability !== 'commit' && durability !== 'flush') throw new Error(`--durability must be commit or flush, got '${durability}'`);
  const commitWindow = pick(values['commit-window'], 'GATEHOUSE_COMMIT_WINDOW');
  const port = pick(values.port, 'GATEHOUSE_PORT');
  const bodyLimit = pick(values['body-limit'], 'GATEHOUSE_BODY_LIMIT');
  const ttl = pick(values['idempotency-ttl'], 'GATEHOUSE_IDEMPOTENCY_TTL');
  const signatures = pick(values.signatures, 'GATEHOUSE_SIGNATURES') ?? 'production';
  if (!isSignatureMode(signatures)) throw new Error(`--signatures must be one of ${SIGNATURE_MODES.join(', ')}, got '${signatures}'`);
  const skew = pick(values['signature-skew'], 'GATEHOUSE_SIGNATURE_SKEW');
  const publicUrl = pick(values['public-url'], 'GATEHOUSE_PUBLIC_URL');
  if (publicUrl !== undefined && !/^https?:\/\/[^/]+\/?$/.test(publicUrl)) {
    throw new Error(`--public-url must be http(s)://host[:port], got '${publicUrl}'`);
  }
  const routesFile = pick(values['proxy-routes'], 'GATEHOUSE_PROXY_ROUTES');
  const maxIterations = pick(values['policy-max-iterations'], 'GATEHOUSE_POLICY_MAX_ITERATIONS');
  const proxyPort = pick(values['proxy-port'], 'GATEHOUSE_PROXY_PORT');
  const memoryDecisions = pick(values['memory-decisions'], 'GATEHOUSE_MEMORY_DECISIONS');
  const threadsText = pick(values.threads, 'GATEHOUSE_THREADS');
  const threads = threadsText === undefined ? 1 : number('--threads', threadsText, 1);
  if (threads > MAX_THREADS) throw new Error(`--threads must be at most ${MAX_THREADS}, got ${threads}`);
  const cluster = clusterSettings(pick(values.nats, 'GATEHOUSE_NATS_URL'), pick(values['nats-namespace'], 'GATEHOUSE_NATS_NAMESPACE'), env);
  if (threads > 1 && cluster) throw new Error('--threads and --nats do not combine yet: run one instance per core in cluster mode instead (docs/cluster.md)');
  return {
    port: port === undefined ? DEFAULTS.port : number('--port', port, 0),
    threads,
    reusePort: values['reuse-port'] ?? env.GATEHOUSE_REUSE_PORT === '1',
    host: pick(values.host, 'GATEHOUSE_HOST') ?? DEFAULTS.host,
    dataDir: pick(values['data-dir'], 'GATEHOUSE_DATA_DIR') ?? '.gatehouse',
    policiesDir: pick(values['policies-dir'], 'GATEHOUSE_POLICIES_DIR') ?? PACKAGE_POLICIES,
    bundleKeysFile: pick(values['bundle-verification-keys'], 'GATEHOUSE_BUNDLE_VERIFICATION_KEYS') || undefined,
    policyCacheDir: policyCacheDirOf(pick(values['policy-cache'], 'GATEHOUSE_POLICY_CACHE'), env),
    policyMaxIterations: maxIterations === undefined ? undefined : number('--policy-max-iterations', maxIterations, 1),
    adminKey: env.GATEHOUSE_ADMIN_KEY || undefined,
    bodyLimitBytes: bodyLimit === undefined ? DEFAULTS.bodyLimitBytes : number('--body-limit', bodyLimit, 1),
    idempotencyRetentionMs: ttl === undefined ? DEFAULTS.idempotencyRetentionMs : number('--idempotency-ttl', ttl, 1) * 1000,
    rateLimits,
    unauthenticatedLimit: unauthenticated === undefined ? undefined : rateLimit('--rate-unauthenticated', unauthenticated),
    durability,
    commitWindowMs: commitWindow === undefined ? undefined : number('--commit-window', commitWindow, 0),
    auditKeyFile: pick(values['audit-key'], 'GATEHOUSE_AUDIT_KEY') || undefined,
    signatures,
    signatureSkewSeconds: skew === undefined ? DEFAULT_SKEW_SECONDS : number('--signature-skew', skew, 1),
    publicUrl,
    jwtIssuersFile: env.GATEHOUSE_JWT_ISSUERS || undefined,
    embedder: httpEmbedderFromEnv(env),
    memoryDecisions: memoryDecisions === undefined ? undefined : number('--memory-decisions', memoryDecisions, 1),
    toolAllow: list(pick(values['tool-allow'], 'GATEHOUSE_TOOL_ALLOW') ?? ''),
    cluster,
    proxy: routesFile ? { routesFile, port: proxyPort === undefined ? GATEWAY_DEFAULTS.port : number('--proxy-port', proxyPort, 0) } : undefined,
    ...eventSettings(values, pick),
  };
}

/** Beyond this many threads each adds contention for LMDB's one writer lock and memory's heap (docs/api.md, Threads). */
const MAX_THREADS = 64;

/** The event log's, the stream's and the webhooks' settings: only those given, the rest default. */
function eventSettings(
  values: Record<string, string | boolean | undefined>,
  pick: (flag: string | undefined, variable: string) => string | undefined,
): Pick<ServeSettings, 'eventRetention' | 'streaming' | 'webhooks'> {
  const option = (flag: string, variable: string) => pick(values[flag] as string | undefined, variable);
  const given = <T>(flag: string, variable: string, parse: (name: string, text: string) => T): T | undefined => {
    const text = option(flag, variable);
    return text === undefined ? undefined : parse(`--${flag}`, text);
  };
  const defined = <T extends object>(value: T): Partial<T> =>
    Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
  return {
    eventRetention: defined({
      maxAgeMs: given('event-retention', 'GATEHOUSE_EVENT_RETENTION', parseDuration),
      maxCount: given('event-retention-count', 'GATEHOUSE_EVENT_RETENTION_COUNT', (n, t) => number(n, t, 1)),
    }),
    streaming: defined({
      maxBackpressureBytes: given('stream-max-backpressure', 'GATEHOUSE_STREAM_MAX_BACKPRESSURE', (n, t) => number(n, t, 1024)),
      heartbeatMs: given('stream-heartbeat', 'GATEHOUSE_STREAM_HEARTBEAT', parseDuration),
    }),
    webhooks: defined({
      allow: given('webhook-allow', 'GATEHOUSE_WEBHOOK_ALLOW', (_n, t) => list(t)),
      retryScheduleMs: given('webhook-retry-schedule', 'GATEHOUSE_WEBHOOK_RETRY_SCHEDULE', parseDurationList),
      attemptTimeoutMs: given('webhook-timeout', 'GATEHOUSE_WEBHOOK_TIMEOUT', parseDuration),
      disableAfterFailures: given('webhook-disable-after', 'GATEHOUSE_WEBHOOK_DISABLE_AFTER', (n, t) => number(n, t, 1)),
    }),
  };
}

/** `--policy-cache`'s value as a directory: `off` for none, unset for the default (policies/compiler/compile-cache.ts). */
export function policyCacheDirOf(value: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (value === 'off') return undefined;
  return value || defaultCompileCacheDir(env);
}

/** What `openPolicies` reads of the server's settings. */
export type PolicySettings = Pick<ServeSettings, 'policiesDir' | 'dataDir' | 'bundleKeysFile' | 'policyCacheDir' | 'policyMaxIterations'>;

/**
 * Compiles and loads the policies the server and the CLI evaluate decisions with. One that does
 * not compile is left out, its errors logged at file:line:col (and listed by /readyz), so the
 * others serve; so is a bundle whose signature does not check out against `bundleKeysFile`.
 * Unchanged policies come from the compile cache when there is one.
 */
export async function openPolicies(settings: PolicySettings, watch: boolean): Promise<PolicyEngine> {
  return PolicyEngine.open({
    sourceDir: settings.policiesDir,
    buildDir: join(settings.dataDir, 'policies'),
    watch,
    leaveOutFailing: true,
    bundleVerificationKeys: settings.bundleKeysFile ? await readBundleVerificationKeys(settings.bundleKeysFile) : undefined,
    compileCache: settings.policyCacheDir ? new CompileCache(settings.policyCacheDir) : undefined,
    ...(settings.policyMaxIterations ? { maxIterations: settings.policyMaxIterations } : {}),
    log,
  });
}

/** A word the shell passes through unchanged, quoted otherwise. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** `n` of a thing, singular or plural. */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * What to run next, copied from the terminal as printed (test/first-hour.test.ts runs it): two
 * sandbox keys, one that creates decisions and one that approves and executes them, and a
 * decision its policy holds at a gate. Sandbox keys need not sign unless every key must.
 */
function firstSteps(url: string, config: ServeSettings): string {
  const dataDir = `--data-dir ${shellWord(config.dataDir)}`;
  const signedIssue = `POST ${url}/v1/keys {"env":"sandbox","scopes":["decisions:read","decisions:write"]}`;
  // A cluster instance's data directory is a copy that only the cluster writes (docs/cluster.md).
  if (config.cluster) {
    return `gatehouse: cluster mode: create keys through any instance's API, with the admin key (signed with its signing key unless --signatures off): ${signedIssue}; \`gatehouse keys create\` cannot write to a cluster instance's copy`;
  }
  if (config.signatures === 'all') {
    return `gatehouse: every key must sign (--signatures all); get a sandbox key: npx gatehouse keys create --env sandbox --scopes decisions:read,decisions:write ${dataDir}\n           or, signed: ${signedIssue}`;
  }
  const decision = { title: 'Deploy web', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 82 }] };
  return [
    'gatehouse: try a gated decision in another shell (curl and jq): a sandbox key that creates decisions, one that approves and executes them, a decision held for approval',
    `           CREATOR_KEY=$(npx gatehouse keys create --role creator ${dataDir} | jq -r .key)`,
    `           REVIEWER_KEY=$(npx gatehouse keys create --role reviewer ${dataDir} | jq -r .key)`,
    `           curl -s ${url}/v1/decisions -H "Authorization: Bearer $CREATOR_KEY" -H 'Content-Type: application/json' -d '${JSON.stringify(decision)}'`,
    '           then approve it with $REVIEWER_KEY: README.md, "Your first decision"',
    `           (keys with other scopes: npx gatehouse keys create --help; or signed with the admin's signing key: ${signedIssue})`,
  ].join('\n');
}

/**
 * Runs the server until SIGTERM or SIGINT. What it does goes to the operational log (core/log.ts:
 * JSON lines on stderr, `| npx pino-pretty` to read them in a terminal), start-up failures
 * included; what a person reads and copies goes to stdout as plain text: the generated admin key
 * (a secret, so never logged), how the admin registers its signing key, and the first commands to
 * try. Settings errors (exit 2) are printed as text, as every command's are.
 */
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
  let jwtIdentities: JwtIdentities | null = null;
  try {
    jwtIdentities = config.jwtIssuersFile ? JwtIdentities.fromFile(config.jwtIssuersFile) : null;
  } catch (error) {
    console.error(`gatehouse serve: GATEHOUSE_JWT_ISSUERS: ${(error as Error).message}`);
    return 2;
  }
  let engine: PolicyEngine;
  try {
    engine = await openPolicies(config, true);
  } catch (error) {
    log.fatal({ policiesDir: config.policiesDir }, `cannot build the policies in ${config.policiesDir}: ${(error as Error).message}`);
    return 1;
  }
  const group = config.threads > 1 ? ThreadGroup.create(config.threads) : null;
  let server: RunningServer;
  let workers: ThreadWorkers | null = null;
  try {
    // Threads share the port through SO_REUSEPORT, which needs the number before the first listens.
    const port = group && config.port === 0 ? await freePort(config.host) : config.port;
    server = await startServer({ ...config, port, policies: engine, jwtIdentities, threads: group ?? undefined });
    try {
      workers = group && (await startThreadWorkers({ ...config, port: server.port }, group));
    } catch (error) {
      await server.close();
      throw error;
    }
  } catch (error) {
    await engine.close();
    group?.close();
    if (!(error instanceof ListenError || error instanceof AuditKeyError || error instanceof ClusterJoinError || group)) throw error;
    log.fatal((error as Error).message);
    return 1;
  }
  const policies = engine.names();
  const adminKeyId = server.adminKey.id;
  // A space follows the URL: bench/lib/gatehouse-process.ts finds it with /listening on (http:\/\/\S+)/.
  log.info({ url: server.url, dataDir: config.dataDir, policies, adminKeyId }, `listening on ${server.url} with ${count(policies.length, 'policy', 'policies')}`);
  if (server.gateway) log.info({ url: server.gateway.url, routesFile: server.gateway.routes.file }, 'proxy gateway listening');
  if (config.cluster) log.info({ servers: config.cluster.servers }, "cluster mode: this data directory is the instance's copy of the cluster's state");
  const notLoaded = [...engine.loadFailures().keys()];
  if (notLoaded.length > 0) log.error({ notLoaded, readyz: `${server.url}/readyz` }, 'policies left out (each logged above with why)');
  if (server.adminKey.generated) console.log(`gatehouse: bootstrap admin key (shown once, keep it safe): ${server.adminKey.generated}`);
  if (config.signatures !== 'off' && !server.services.signingKeys.hasActive(server.adminKey.id)) {
    // The admin is a production key: until it registers a signing key, that is all it can do.
    console.log(
      `gatehouse: the admin key ${server.adminKey.id} must sign its requests (RFC 9421); register its first signing key with\n` +
        `           POST ${server.url}/v1/keys/${server.adminKey.id}/signing-keys {"jwk": <public JWK>} (docs/signatures.md)`,
    );
  }
  console.log(firstSteps(server.url, config));
  if (group) log.info({ threads: group.size }, `serving on ${group.size} threads`);
  const stopped = await new Promise<NodeJS.Signals | Error>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    void workers?.failed.then(resolve);
  });
  if (stopped instanceof Error) log.fatal({ err: stopped }, `${stopped.message}: stopping every thread`);
  else log.info({ signal: stopped }, 'draining');
  await workers?.close();
  await server.close();
  await engine.close();
  group?.close();
  log.info('stopped');
  return stopped instanceof Error ? 1 : 0;
}

/**
 * One of the threads of `--threads N` beyond the main one (cli/thread-worker.ts): its own
 * policies, compiled or taken from the cache, and its server on the shared port and data
 * directory.
 */
export async function startThread(config: ServeSettings, threads: ThreadGroup): Promise<{ server: RunningServer; engine: PolicyEngine }> {
  const jwtIdentities = config.jwtIssuersFile ? JwtIdentities.fromFile(config.jwtIssuersFile) : null;
  const engine = await openPolicies(config, true);
  try {
    return { server: await startServer({ ...config, policies: engine, jwtIdentities, threads }), engine };
  } catch (error) {
    await engine.close();
    throw error;
  }
}

/** A port free on `host` now, for threads that must all name it. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
