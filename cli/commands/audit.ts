import { createReadStream, createWriteStream, existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { AuditCheckpoints } from '../../core/audit-checkpoints.ts';
import { AuditExportError, exportLines, verifyExport } from '../../core/audit-export.ts';
import { AuditLog } from '../../core/audit-log.ts';
import { AuditKeyError, auditKeyPath, auditVerifyingKey, readAuditSigningKey, type AuditVerifyingKey } from '../../core/audit-signing-key.ts';
import { verifyAuditLog, type AuditVerification } from '../../core/audit-verification.ts';
import { opaDecisionLines } from '../../core/opa-decision-log.ts';
import { ClusterJoinError, ClusterLink, type ClusterOptions } from '../../core/cluster/cluster-link.ts';
import { streamExportLines, verifyStreamAudit, type StreamAuditVerification } from '../../core/cluster/stream-audit.ts';
import { Store } from '../../core/store.ts';
import { clusterSettings } from '../cluster-settings.ts';

/**
 * `gatehouse audit`: check and export the audit log in the data directory.
 *
 *   gatehouse audit verify [--data-dir D] [--audit-key F | --public-key JWK…] [--require-signed]
 *       walk the hash chain, check its end against the tail record and every checkpoint's
 *       signature and place on the chain; say what is proven and what is not; exit 1 on tampering
 *   gatehouse audit verify --export F --public-key JWK [--require-signed]
 *       the same over an export, with the public key alone
 *   gatehouse audit verify --nats URLS [--nats-namespace N]
 *       the cluster's one chain, walked in its commit stream (docs/cluster.md)
 *   gatehouse audit export [--out F] [--data-dir D] [--audit-key F]
 *       header (with the public key), checkpoints and entries as NDJSON (core/audit-export.ts)
 *   gatehouse audit export --format opa [--out F] [--data-dir D]
 *       the policy evaluations as OPA decision-log events, one a line (core/opa-decision-log.ts)
 *   gatehouse audit export --nats URLS [--nats-namespace N] [--out F]
 *       the cluster's log read from its commit stream, as the verifiable NDJSON
 */
export const summary = 'verify the audit log (hash chain, tail, signed checkpoints) or export it as NDJSON';

const USAGE = `usage: gatehouse audit verify [--data-dir D] [--audit-key FILE | --public-key JWK ...] [--require-signed]
       gatehouse audit verify --export FILE --public-key JWK [--require-signed]
       gatehouse audit verify --nats URLS [--nats-namespace NAME]
       gatehouse audit export [--format gatehouse|opa] [--out FILE] [--data-dir D] [--audit-key FILE]
       gatehouse audit export --nats URLS [--nats-namespace NAME] [--out FILE]

  --audit-key FILE   GATEHOUSE_AUDIT_KEY   the checkpoint signing key (default: D/audit-signing-key.pem)
  --public-key JWK   a JWK file (or the JWK itself) to check signatures with, instead of the key file
  --format opa       policy evaluations as OPA decision-log events (NDJSON), for tools that read
                     OPA's decision logs; not verifiable (default: gatehouse, the verifiable export)
  --nats URLS        GATEHOUSE_NATS_URL    verify or export the cluster's chain from its commit stream, end to end,
                     whatever any instance holds (credentials and TLS as for serve: GATEHOUSE_NATS_*); such an
                     export is chained, not signed: each instance signs checkpoints over its own copy
  --require-signed   also fail when entries after the last checkpoint are not signed (a stopped
                     server has signed its last entry)`;

/** OPA's decision logs label each event with the agent that decided; these name Gatehouse. */
const OPA_LABELS = { app: 'gatehouse', version: (createRequire(import.meta.url)('gatehouse/package.json') as { version: string }).version };

/** Input the command cannot use: a usage problem, not a finding about the log. */
class InputError extends Error {}

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'data-dir': { type: 'string' },
      out: { type: 'string' },
      format: { type: 'string' },
      export: { type: 'string' },
      'audit-key': { type: 'string' },
      'public-key': { type: 'string', multiple: true },
      'require-signed': { type: 'boolean' },
      nats: { type: 'string' },
      'nats-namespace': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [verb] = positionals;
  if (values.help || (verb !== 'verify' && verb !== 'export')) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const format = values.format ?? 'gatehouse';
  if (format !== 'gatehouse' && format !== 'opa') {
    console.error(`gatehouse audit: --format ${format}: use gatehouse or opa`);
    return 2;
  }
  const dataDir = values['data-dir'] ?? process.env.GATEHOUSE_DATA_DIR ?? '.gatehouse';
  const keyPath = auditKeyPath(dataDir, values['audit-key'] ?? process.env.GATEHOUSE_AUDIT_KEY);
  try {
    if (verb === 'verify' && values.export !== undefined) {
      const keys = await publicKeys(values['public-key'] ?? []);
      if (keys.length === 0) {
        throw new InputError('verifying an export needs --public-key: the key you trust, obtained apart from the export (its own publicKey proves nothing to you)');
      }
      if (!existsSync(values.export)) throw new InputError(`no export at ${values.export}`);
      const lines = createInterface({ input: createReadStream(values.export), crlfDelay: Infinity });
      return report(await verifyExport(lines, keys), values['require-signed'] ?? false, null);
    }
    const cluster = clusterSettings(values.nats, values['nats-namespace'], process.env);
    if (cluster && verb === 'verify') return reportStream(await withClusterLink(cluster, verifyStreamAudit));
    if (cluster) {
      if (format !== 'gatehouse') throw new InputError('--nats exports the verifiable format only (--format gatehouse)');
      return await withClusterLink(cluster, (link, progress) => exportLog(streamExportLines(link, progress), values.out, null, ['entry']));
    }
    if (!existsSync(dataDir)) throw new InputError(`no data directory at ${dataDir}`);
    const signingKey = await readAuditSigningKey(keyPath);
    const store = Store.open({ dataDir });
    try {
      const audit = new AuditLog(store);
      const checkpoints = new AuditCheckpoints(store, audit);
      if (verb === 'export' && format === 'opa') return await exportLog(opaDecisionLines(audit, OPA_LABELS), values.out, null, ['decision']);
      if (verb === 'export') return await exportLog(exportLines(audit, checkpoints, signingKey?.jwk ?? null), values.out, signingKey ? null : keyPath, ['entry', 'checkpoint']);
      const given = await publicKeys(values['public-key'] ?? []);
      const keys = given.length ? given : signingKey ? [signingKey] : [];
      const beside = !given.length && signingKey && !relative(resolve(dataDir), resolve(keyPath)).startsWith('..') ? keyPath : null;
      return report(verifyAuditLog(audit, checkpoints, keys), values['require-signed'] ?? false, beside);
    } finally {
      await store.close();
    }
  } catch (error) {
    if (!(error instanceof InputError || error instanceof AuditKeyError || error instanceof ClusterJoinError || error instanceof AuditExportError || (error as NodeJS.ErrnoException).code)) throw error;
    console.error(`gatehouse audit: ${(error as Error).message}`);
    return error instanceof AuditExportError ? 1 : 2;
  }
}

/** Runs `work` over a link to the cluster's stream that reads only, reporting its progress on stderr. */
async function withClusterLink<T>(options: ClusterOptions, work: (link: ClusterLink, progress: (read: number, of: number) => void) => Promise<T>): Promise<T> {
  const link = await ClusterLink.connect({ ...options, nodeId: options.nodeId ?? `audit-${process.pid}` }, false);
  try {
    return await work(link, (read, of) => console.error(`read ${read} of ${of} commits`));
  } finally {
    await link.close();
  }
}

/** What the walk of the commit stream found; 1 when a link does not hold. */
function reportStream(result: StreamAuditVerification): number {
  if (result.ok) {
    console.log(`ok: ${result.entries} entries hold in ${result.commits} commits of the cluster's stream; head ${result.head}`);
    return 0;
  }
  console.log(`broken: entry ${result.broken!.seq} (in commit ${result.brokenCommit}): ${result.broken!.reason}`);
  console.log(`${result.entries} entries hold before it; head ${result.head}`);
  return 1;
}

/** `--public-key` values: JWK files, or JWKs given inline. */
async function publicKeys(given: string[]): Promise<AuditVerifyingKey[]> {
  return Promise.all(
    given.map(async (value) => {
      const text = value.trimStart().startsWith('{') ? value : readFileSync(value, 'utf8');
      let jwk: unknown;
      try {
        jwk = JSON.parse(text);
      } catch {
        throw new InputError(`--public-key ${value}: not a JSON JWK`);
      }
      return auditVerifyingKey(jwk);
    }),
  );
}

/** How the summary names each kind of line. */
const PLURALS: Record<string, string> = { entry: 'entries', checkpoint: 'checkpoints', decision: 'decisions' };

/** Writes the lines; with `file`, says how many of each of `kinds` it wrote. */
async function exportLog(lines: Iterable<{ kind: string; line: string }> | AsyncIterable<{ kind: string; line: string }>, file: string | undefined, missingKey: string | null, kinds: string[]): Promise<number> {
  if (missingKey) console.error(`gatehouse audit: no signing key at ${missingKey}: the export carries no public key`);
  const out = file ? createWriteStream(file) : process.stdout;
  const counts: Record<string, number> = {};
  for await (const { kind, line } of lines) {
    if (!out.write(`${line}\n`)) await once(out, 'drain');
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  if (file) {
    out.end();
    await once(out, 'finish');
    console.error(`exported ${kinds.map((kind) => `${counts[kind] ?? 0} ${PLURALS[kind]}`).join(' and ')} to ${file}`);
  }
  return 0;
}

/** Prints what holds, what is proven and what is not; the exit code. */
function report(result: AuditVerification, requireSigned: boolean, keyBesideData: string | null): number {
  const { chain, head, lastSigned, unsigned } = result;
  if (chain.broken) {
    console.error(`audit chain broken at entry ${chain.broken.seq}: ${chain.broken.reason} (${chain.entries} entries before it hold)`);
  } else {
    const state = result.ok ? 'intact' : 'links hold';
    console.log(`audit chain ${state}: ${chain.entries} entries, head ${chain.head}${chain.entries ? `, matching the tail record` : ''}`);
  }
  for (const problem of result.checkpointProblems) console.error(`audit ${problem}`);
  if (!result.ok) console.error('audit log tampered with or damaged: see above');
  if (lastSigned) {
    const checkpoints = result.signed === 1 ? '1 checkpoint' : `${result.signed} checkpoints`;
    console.log(`signed: ${checkpoints} by key ${result.keyIds.join(', ')} hold; the last covers entries 1–${lastSigned.seq} (signed ${lastSigned.at})`);
  } else if (result.keyIds.length === 0) {
    console.log('signed: no signing key to check checkpoints with (--audit-key, --public-key)');
  }
  if (unsigned > 0) {
    const from = head.seq - unsigned + 1;
    const range = unsigned === 1 ? `entry ${from}` : `entries ${from}–${head.seq}`;
    const after = lastSigned ? `after the last checkpoint (entry ${lastSigned.seq})` : 'with no checkpoint over them';
    console.log(`not proven: ${range} ${after} ${unsigned === 1 ? 'is' : 'are'} chained but not signed: someone with write access to the data could truncate or rewrite ${unsigned === 1 ? 'it' : 'them'} unnoticed`);
  } else if (head.seq > 0 && result.ok) {
    console.log('every entry is covered by a signed checkpoint');
  }
  if (keyBesideData) {
    console.log(`note: the signing key ${keyBesideData} is inside the data directory: whoever can write the data can read it and sign a shorter or rewritten log; keep it elsewhere (--audit-key) or keep exported checkpoints (docs/security.md)`);
  }
  if (!result.ok) return 1;
  if (requireSigned && unsigned > 0) {
    console.error(`audit log not fully signed: ${unsigned} entries after the last checkpoint (--require-signed)`);
    return 1;
  }
  return 0;
}
