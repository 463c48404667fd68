import { execFile } from 'node:child_process';
import { cpSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import t from 'tap';
import { AuditCheckpoints, checkpointPayload, type AuditCheckpoint } from '../core/audit-checkpoints.ts';
import { exportLines, verifyExport } from '../core/audit-export.ts';
import { AuditLog, entryHash, type AuditEntry } from '../core/audit-log.ts';
import { AUDIT_KEY_FILE, openAuditSigningKey, readAuditSigningKey, type AuditVerifyingKey } from '../core/audit-signing-key.ts';
import { verifyAuditLog, type AuditVerification } from '../core/audit-verification.ts';
import { Store } from '../core/store.ts';
import { issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';

/**
 * Issue 20 item 5: every way of tampering with the end of the log, or with all of it, that the
 * hash chain alone let pass is detected by the tail record or by the signed checkpoints. Each case
 * tampers a copy of one log written by a real server, straight in LMDB, as an attacker with write
 * access to the data file would.
 */

const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;

interface Cli {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a child process, killed (by its PID) if it outlives the bound. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Cli> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
    t.teardown(() => {
      if (child.exitCode === null && child.pid) process.kill(child.pid);
    });
  });
}

/** A data directory holding a log of 10 entries written by a server, checkpointed every 4 entries and at shutdown. */
async function writeLog(): Promise<string> {
  const dataDir = tempDir(t);
  const { url, admin, server } = await startTestServer(t, { dataDir, auditCheckpoints: { everyEntries: 4, everyMs: 60_000 } });
  for (let i = 0; i < 9; i++) await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  await server.close();
  return dataDir;
}

const original = await writeLog();
const key = (await readAuditSigningKey(join(original, AUDIT_KEY_FILE)))!;

/** A fresh copy of the original log (its signing key included). */
function copy(): string {
  const dir = tempDir(t);
  cpSync(original, dir, { recursive: true });
  return dir;
}

interface Tables {
  entries: ReturnType<Store['database']>;
  meta: ReturnType<Store['database']>;
  checkpoints: ReturnType<Store['database']>;
}

/** Opens the copy's store, lets `change` write to it directly (no chain rules), closes it. */
async function tamper(dir: string, change: (tables: Tables) => void): Promise<void> {
  const store = Store.open({ dataDir: dir });
  try {
    change({ entries: store.database('audit'), meta: store.database('meta'), checkpoints: store.database('audit-checkpoints') });
  } finally {
    await store.close();
  }
}

async function verify(dir: string, keys: AuditVerifyingKey[] = [key]): Promise<AuditVerification> {
  const store = Store.open({ dataDir: dir });
  try {
    const audit = new AuditLog(store);
    return verifyAuditLog(audit, new AuditCheckpoints(store, audit), keys);
  } finally {
    await store.close();
  }
}

/** Rewrites entries `from`… with `edit` applied to the first, every hash recomputed, the chain linked again. */
function rehash(entries: Tables['entries'], from: number, edit: (entry: AuditEntry) => AuditEntry): AuditEntry {
  let prevHash = (entries.get(from) as AuditEntry).prevHash;
  let last!: AuditEntry;
  for (let seq = from; entries.get(seq) !== undefined; seq++) {
    const stored = entries.get(seq) as AuditEntry;
    const { hash: _hash, ...rest } = seq === from ? edit(stored) : stored;
    const linked = { ...rest, prevHash };
    last = { ...linked, hash: entryHash(linked) };
    entries.putSync(seq, last);
    prevHash = last.hash;
  }
  return last;
}

/** The next entry after `tail`, linked and hashed as the log would write it. */
function forgedAfter(tail: AuditEntry): AuditEntry {
  const { hash: _hash, ...rest } = { ...tail, seq: tail.seq + 1, prevHash: tail.hash, requestId: 'req_forged', status: 200 };
  return { ...rest, hash: entryHash(rest) };
}

const HEAD = 10;

t.test('the log as written: 10 entries, checkpoints every 4 entries and at shutdown', async (t) => {
  const result = await verify(original);
  t.ok(result.ok);
  t.equal(result.chain.entries, HEAD);
  t.equal(result.lastSigned?.seq, HEAD, 'the shutdown checkpoint signs the last entry');
  t.ok(result.signed >= 2, `checkpoints before the head too (${result.signed})`);
  t.equal(result.unsigned, 0);
  t.equal(statSync(join(original, AUDIT_KEY_FILE)).mode & 0o777, 0o600, 'the key file is private to its owner');

  const intact = await cli(['audit', 'verify', '--data-dir', original]);
  t.equal(intact.code, 0, intact.stderr);
  t.match(intact.stdout, /audit chain intact: 10 entries/);
  t.match(intact.stdout, /every entry is covered by a signed checkpoint/);
  t.match(intact.stdout, /is inside the data directory/, 'says the key beside the data proves nothing against its holder');
});

t.test('deleting the last entries', async (t) => {
  const dir = copy();
  await tamper(dir, ({ entries }) => {
    entries.removeSync(HEAD);
    entries.removeSync(HEAD - 1);
  });
  t.match((await verify(dir)).chain.broken, { seq: HEAD - 1, reason: /tail record names entry 10, but the log ends at entry 8/ }, 'the tail record names the lost end');

  await tamper(dir, ({ entries, meta }) => {
    const last = entries.get(HEAD - 2) as AuditEntry;
    meta.putSync('audit-tail', { seq: last.seq, hash: last.hash });
  });
  const result = await verify(dir);
  t.ok(result.chain.ok, 'with the tail record rewritten too, the chain alone holds');
  t.notOk(result.ok);
  t.match(result.checkpointProblems.at(-1), /checkpoint at entry 10: the log ends at entry 8: signed entries were removed/);
});

t.test('deleting every entry', async (t) => {
  const dir = copy();
  await tamper(dir, ({ entries }) => {
    for (let seq = 1; seq <= HEAD; seq++) entries.removeSync(seq);
  });
  const kept = await verify(dir);
  t.match(kept.chain.broken, { seq: 1, reason: /no entry is left/ });

  await tamper(dir, ({ meta }) => meta.removeSync('audit-tail'));
  const result = await verify(dir);
  t.ok(result.chain.ok, 'an empty log without a tail record is a valid chain');
  t.notOk(result.ok);
  t.ok(result.checkpointProblems.length >= 2 && result.checkpointProblems.every((p) => /the log ends at entry 0: signed entries were removed/.test(p)));

  const cliResult = await cli(['audit', 'verify', '--data-dir', dir]);
  t.equal(cliResult.code, 1);
  t.match(cliResult.stderr, /audit checkpoint at entry 10: the log ends at entry 0/);
});

t.test('editing the last entry and recomputing its hash', async (t) => {
  const dir = copy();
  let edited!: AuditEntry;
  await tamper(dir, ({ entries }) => {
    edited = rehash(entries, HEAD, (entry) => ({ ...entry, status: 500 }));
  });
  t.match((await verify(dir)).chain.broken, { seq: HEAD, reason: /does not match the tail record/ });

  await tamper(dir, ({ meta }) => meta.putSync('audit-tail', { seq: edited.seq, hash: edited.hash }));
  const result = await verify(dir);
  t.ok(result.chain.ok);
  t.notOk(result.ok);
  t.match(result.checkpointProblems, [/checkpoint at entry 10: signed for hash [0-9a-f]{64}, but the entry's hash is/]);
});

t.test('appending a forged entry', async (t) => {
  const dir = copy();
  let forged!: AuditEntry;
  await tamper(dir, ({ entries }) => {
    forged = forgedAfter(entries.get(HEAD) as AuditEntry);
    entries.putSync(forged.seq, forged);
  });
  t.match((await verify(dir)).chain.broken, { seq: HEAD + 1, reason: /beyond the tail record's last entry 10/ });

  // With the tail record rewritten as well, nothing breaks: the entry is only not signed.
  await tamper(dir, ({ meta }) => meta.putSync('audit-tail', { seq: forged.seq, hash: forged.hash }));
  const result = await verify(dir);
  t.ok(result.ok);
  t.equal(result.unsigned, 1);
  const strict = await cli(['audit', 'verify', '--data-dir', dir, '--require-signed']);
  t.equal(strict.code, 1, 'a stopped server signed its last entry: an unsigned one fails --require-signed');
  t.match(strict.stdout, /not proven: entry 11 after the last checkpoint \(entry 10\) is chained but not signed/);
  t.match(strict.stderr, /not fully signed: 1 entries after the last checkpoint/);
});

t.test('re-hashing the chain after an edit', async (t) => {
  const dir = copy();
  await tamper(dir, ({ entries, meta }) => {
    const last = rehash(entries, 2, (entry) => ({ ...entry, status: 201, keyId: 'key_attacker' }));
    meta.putSync('audit-tail', { seq: last.seq, hash: last.hash });
  });
  const result = await verify(dir);
  t.ok(result.chain.ok, 'every link holds after the rewrite');
  t.notOk(result.ok);
  t.equal(result.signed, 0, 'no checkpoint holds: each signed the entries before the rewrite');
  t.match(result.checkpointProblems[0], /checkpoint at entry \d+: signed for hash/);
  t.equal(result.lastSigned, null);
});

t.test('forged and altered checkpoints', async (t) => {
  const dir = copy();
  const attacker = (await openAuditSigningKey(join(tempDir(t), 'attacker.pem'))).key;
  await tamper(dir, ({ entries, meta, checkpoints }) => {
    const last = rehash(entries, HEAD, (entry) => ({ ...entry, status: 500 }));
    meta.putSync('audit-tail', { seq: last.seq, hash: last.hash });
    const unsigned = { seq: last.seq, hash: last.hash, at: new Date().toISOString(), keyId: key.keyId };
    // Signed by another key, but naming the real one; then by another key under its own name.
    checkpoints.putSync(last.seq, { ...unsigned, signature: attacker.sign(checkpointPayload(unsigned)) });
  });
  t.match((await verify(dir)).checkpointProblems, [/checkpoint at entry 10: the signature does not hold/]);

  await tamper(dir, ({ checkpoints }) => {
    const stored = checkpoints.get(HEAD) as AuditCheckpoint;
    const unsigned = { seq: stored.seq, hash: stored.hash, at: stored.at, keyId: attacker.keyId };
    checkpoints.putSync(HEAD, { ...unsigned, signature: attacker.sign(checkpointPayload(unsigned)) });
  });
  t.match((await verify(dir)).checkpointProblems, [new RegExp(`checkpoint at entry 10: signed by key ${attacker.keyId}, which is not a trusted key`)]);
});

t.test('a damaged entry is named, never thrown over', async (t) => {
  const undecodable = copy();
  const raw = open({ path: join(undecodable, 'gatehouse.mdb'), maxDbs: 32 });
  raw.openDB({ name: 'audit', encoding: 'binary' }).putSync(5, Buffer.from([0xc1, 0xff, 0x00]));
  await raw.close();
  t.match((await verify(undecodable)).chain.broken, { seq: 5, reason: /the stored value cannot be decoded/ });
  const shown = await cli(['audit', 'verify', '--data-dir', undecodable]);
  t.equal(shown.code, 1);
  t.match(shown.stderr, /audit chain broken at entry 5: the stored value cannot be decoded \(.+\) \(4 entries before it hold\)/);
  t.notMatch(shown.stderr, /\n\s+at /, 'no stack trace');
  const exported = await cli(['audit', 'export', '--data-dir', undecodable, '--out', join(undecodable, 'out.ndjson')]);
  t.equal(exported.code, 1);
  t.match(exported.stderr, /gatehouse audit: the entry stored under 5 cannot be decoded/);
  t.notMatch(exported.stderr, /\n\s+at /, 'no stack trace');

  const missing = copy();
  await tamper(missing, ({ entries }) => {
    const { hash: _hash, ...rest } = entries.get(3) as AuditEntry;
    entries.putSync(3, rest);
    entries.putSync(4, 'not an entry');
  });
  t.match((await verify(missing)).chain.broken, { seq: 3, reason: 'not an audit entry: hash missing or malformed' });

  const tail = copy();
  await tamper(tail, ({ meta }) => meta.putSync('audit-tail', { seq: 'ten' }));
  t.match((await verify(tail)).chain.broken, { seq: HEAD + 1, reason: /the tail record is damaged/ });
});

t.test('an export verifies with the public key alone, and its own tampering is detected', async (t) => {
  const dir = copy();
  const file = join(dir, 'audit.ndjson');
  const exported = await cli(['audit', 'export', '--data-dir', dir, '--out', file]);
  t.equal(exported.code, 0, exported.stderr);
  t.match(exported.stderr, /exported 10 entries and \d+ checkpoints/);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  const header = JSON.parse(lines[0]!);
  t.same(header.publicKey, key.jwk, 'the header carries the public key');
  const jwkFile = join(tempDir(t), 'audit-key.jwk');
  writeFileSync(jwkFile, JSON.stringify(header.publicKey));

  // No data directory: only the export and the public key.
  const verified = await cli(['audit', 'verify', '--export', file, '--public-key', jwkFile, '--data-dir', join(dir, 'absent')]);
  t.equal(verified.code, 0, verified.stderr);
  t.match(verified.stdout, /audit chain intact: 10 entries/);
  t.match(verified.stdout, /every entry is covered by a signed checkpoint/);

  const other = (await openAuditSigningKey(join(tempDir(t), 'other.pem'))).key;
  const untrusted = await cli(['audit', 'verify', '--export', file, '--public-key', JSON.stringify(other.jwk)]);
  t.equal(untrusted.code, 1, 'checkpoints by a key other than the one given prove nothing');
  t.match(untrusted.stderr, /which is not a trusted key/);

  const noKey = await cli(['audit', 'verify', '--export', file]);
  t.equal(noKey.code, 2);
  t.match(noKey.stderr, /needs --public-key/);

  // The export rewritten from entry 3 on, every hash recomputed and the header's tail with it.
  const entries = lines.map((l) => JSON.parse(l)).filter((r) => r.type === undefined) as AuditEntry[];
  let prevHash = entries[1]!.hash;
  const rewritten = entries.slice(2).map((entry, i) => {
    const { hash: _hash, ...rest } = i === 0 ? { ...entry, status: 418 } : entry;
    const linked = { ...rest, prevHash };
    prevHash = entryHash(linked);
    return JSON.stringify({ ...linked, hash: prevHash });
  });
  const forged = [
    JSON.stringify({ ...header, tail: { seq: HEAD, hash: prevHash } }),
    ...lines.filter((l) => JSON.parse(l).type === 'checkpoint'),
    ...lines.filter((l) => JSON.parse(l).type === undefined).slice(0, 2),
    ...rewritten,
  ];
  const result = await verifyExport(lineSource(forged), [key]);
  t.ok(result.chain.ok);
  t.notOk(result.ok);
  t.match(result.checkpointProblems, [/signed for hash/]);
  t.match((await verifyExport(lineSource(lines.slice(0, -1)), [key])).chain.broken, { seq: HEAD, reason: /entries were removed from the end/ }, 'a cut export');
});

t.test('the same lines from the store verify in process', async (t) => {
  const store = Store.open({ dataDir: copy() });
  t.teardown(() => store.close());
  const audit = new AuditLog(store);
  const lines = [...exportLines(audit, new AuditCheckpoints(store, audit), key.jwk)].map((l) => l.line);
  const result = await verifyExport(lineSource(lines), [key]);
  t.ok(result.ok);
  t.equal(result.unsigned, 0);
});

t.test('checkpoints are signed T after entries were added, and with a key configured outside the data directory', async (t) => {
  const dataDir = tempDir(t);
  const keyFile = join(tempDir(t), 'audit.pem');
  const { url, admin, server } = await startTestServer(t, { dataDir, auditKeyFile: keyFile, auditCheckpoints: { everyEntries: 1000, everyMs: 50 } });
  await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const { audit, store } = server.services;
  const checkpoints = new AuditCheckpoints(store, audit);
  const head = audit.tail().seq;
  for (let i = 0; i < 200 && checkpoints.lastSeq() < head; i++) await new Promise((r) => setTimeout(r, 25));
  t.equal(checkpoints.lastSeq(), head, 'signed while the server runs, long before 1000 entries');
  await server.close();
  t.equal(statSync(keyFile).mode & 0o777, 0o600);
  t.throws(() => statSync(join(dataDir, AUDIT_KEY_FILE)), 'no key was created in the data directory');
  const result = await cli(['audit', 'verify', '--data-dir', dataDir], { GATEHOUSE_AUDIT_KEY: keyFile });
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, /every entry is covered by a signed checkpoint/);
  t.notMatch(result.stdout, /inside the data directory/);
});

async function* lineSource(lines: string[]): AsyncIterable<string> {
  yield* lines;
}
