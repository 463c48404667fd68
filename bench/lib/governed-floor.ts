/**
 * The lean governed floor: the governed work of `POST /v1/decisions` written with the least code
 * and none of Gatehouse's own classes, so that it measures the work and not Gatehouse's way of
 * doing it. Per request, a raw uWebSockets.js handler:
 *
 * - looks the API key up by the SHA-256 of its bearer secret in a Map (401 when unknown);
 * - parses the body with JSON.parse and checks it against Gatehouse's own schema,
 *   `CreateDecisionBody`, compiled once with TypeBox's TypeCompiler (400);
 * - drafts the decision and builds decision-gate-v1's input in the shape Gatehouse builds it
 *   (core/policy-input.ts: action, the decision with its contextValues, principal, request,
 *   now_ns), serialises it once, takes its SHA-256 and evaluates the real bundled policy,
 *   compiled by the project's compiler, through `@open-policy-agent/opa-wasm` `loadPolicy`
 *   (403 when it does not allow);
 * - queues the decision's JSON bytes and its audit entry; once per event-loop turn one LMDB
 *   write transaction (no child transactions; the environment opened with `noSync`, like
 *   Gatehouse's `commit` durability) chains each entry to the one before (SHA-256 over the
 *   previous hash and the entry's canonical JSON) and stores the entry and the decision;
 * - once committed, answers 200 with the very bytes it stored.
 *
 * It leaves out everything else a Gatehouse call does: problem documents, rate limits,
 * idempotency, request signatures, metrics, events and their stream and webhooks, decision
 * memory, the audit log's trace index, reading the chain's tail back from storage (it is the
 * environment's only writer), policies other than decision-gate-v1 and their hot reload, and
 * recovering a policy module that trapped. Ids are unique by a counter, not by random bits.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { open, TransactionFlags } from 'lmdb';
import uWS from 'uWebSockets.js';
import { CreateDecisionBody } from '../../proxy/schemas.ts';
import { listenUws, type BaselineServer } from './baseline-servers.ts';
import { compileBundledPolicy } from './scenario-gatehouse.ts';

const POLICY = 'decision-gate-v1';
export const GENESIS = '0'.repeat(64);
/** Commit before the call returns; `noSync` leaves writing the pages out to the OS. */
export const COMMIT_NOW = TransactionFlags.SYNCHRONOUS_COMMIT | TransactionFlags.NO_SYNC_FLUSH;

export interface GovernedFloor extends BaselineServer {
  /** `Authorization: Bearer <secret>` of the sandbox key it issued itself. */
  auth: { authorization: string };
}

export interface Principal {
  env: string;
  keyId: string;
  roles: string[];
  scopes: string[];
}

interface Verdict {
  allow: boolean;
  gate: string;
  nextAction: string;
  reasons: string[];
  approvals: { roles: string[]; count: number };
}

/** A decision waiting for the turn's transaction, and how to answer once it is stored. */
export interface Pending {
  decisionId: string;
  decision: Buffer;
  /** The audit entry's canonical JSON up to `seq`, the one member only the transaction knows. */
  entryHead: string;
  answer(status: string, body: Buffer | string): void;
}

export const sha256Hex = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

/** The flat map decision policies read (`"ns:name": value`), in sorted order as Gatehouse sends it. */
export function contextValues(context: CreateDecisionBody['context']): Record<string, number> {
  if (!Array.isArray(context)) return {};
  const sorted = [...context].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
  return Object.fromEntries(sorted.map((entry) => [entry.source, entry.value]));
}

/** Starts the floor with decision-gate-v1, on its own LMDB environment under `workDir`. */
export async function startGovernedFloor(workDir: string): Promise<GovernedFloor> {
  const dir = mkdtempSync(path.join(workDir, 'floor-'));
  const { policy, moduleHash, checkBody } = await loadFloorPolicy(dir);
  const root = open({ path: path.join(dir, 'floor.mdb'), maxDbs: 2, noSync: true });
  const decisions = root.openDB<Uint8Array, string>({ name: 'decisions', encoding: 'binary' });
  const audit = root.openDB<string, number>({ name: 'audit', encoding: 'string' });

  const secret = randomBytes(24).toString('base64url');
  const keys = new Map<string, Principal>([[sha256Hex(secret), { env: 'sandbox', keyId: 'key_floor', roles: [], scopes: ['decisions:write'] }]]);

  let lastId = 0;
  let tail = { seq: 0, hash: GENESIS };
  let queue: Pending[] = [];
  const commitQueued = () => {
    const batch = queue;
    queue = [];
    const linked = linkEntries(tail, batch);
    try {
      root.transactionSync(() => {
        let seq = tail.seq;
        for (const [decisionId, decision, entry] of linked.entries) {
          audit.putSync(++seq, entry);
          decisions.putSync(decisionId, decision);
        }
      }, COMMIT_NOW);
    } catch (error) {
      for (const pending of batch) pending.answer('500 Internal Server Error', JSON.stringify({ detail: String(error) }));
      return;
    }
    tail = linked.tail;
    for (const pending of batch) pending.answer('200 OK', pending.decision);
  };

  const decide = floorDecider(policy, moduleHash, () => `${Date.now().toString(36)}${(++lastId).toString(36).padStart(6, '0')}`, (pending) => {
    if (queue.length === 0) setImmediate(commitQueued);
    queue.push(pending);
  });

  const app = floorApp(keys, checkBody, decide);
  const server = await listenUws(app, 'governed floor');
  return {
    origin: server.origin,
    auth: { authorization: `Bearer ${secret}` },
    close: async () => {
      await server.close();
      await root.close();
    },
  };
}

/** The chain's last entry: its number and hash. */
export interface FloorTail {
  seq: number;
  hash: string;
}

/**
 * A batch's audit entries chained behind `tail` (SHA-256 over the previous hash and the entry's
 * canonical JSON), each with its decision: [decision id, record, stored entry], and the new tail.
 */
export function linkEntries(tail: FloorTail, batch: ReadonlyArray<{ decisionId: string; decision: Uint8Array; entryHead: string }>): { entries: Array<[string, Uint8Array, string]>; tail: FloorTail } {
  let { seq, hash } = tail;
  const entries: Array<[string, Uint8Array, string]> = [];
  for (const pending of batch) {
    seq++;
    const entry = `${pending.entryHead},"seq":${seq},"status":200}`;
    const prevHash = hash;
    hash = sha256Hex(prevHash + entry);
    entries.push([pending.decisionId, pending.decision, `{"entry":${entry},"hash":"${hash}","prevHash":"${prevHash}"}`]);
  }
  return { entries, tail: { seq, hash } };
}

/** decision-gate-v1 compiled by the project's compiler into `dir` and loaded, and the body's schema check. */
export async function loadFloorPolicy(dir: string) {
  const wasm = await compileBundledPolicy(dir, POLICY);
  return { policy: await loadPolicy(wasm), moduleHash: `sha256:${sha256Hex(wasm)}`, checkBody: TypeCompiler.Compile(CreateDecisionBody) };
}

type FloorPolicy = Awaited<ReturnType<typeof loadFloorPolicy>>;

/**
 * The governed work of one decision: the policy input in the shape Gatehouse builds it, its
 * digest, the policy's verdict, the record and the audit entry's head, handed to `queue`; or the
 * refusal, answered at once. `suffix` names each decision uniquely.
 */
export function floorDecider(policy: FloorPolicy['policy'], moduleHash: string, suffix: () => string, queue: (pending: Pending) => void) {
  const encoder = new TextEncoder();
  return (principal: Principal, body: CreateDecisionBody, answer: Pending['answer']): void => {
    const now = Date.now();
    const at = new Date(now).toISOString();
    const unique = suffix();
    const id = `dec_${unique}`;
    const inputs = body.inputs ?? [];
    const objectives = body.objectives ?? [];
    // Members in sorted order, so this text is canonical JSON: what the policy reads is what the digest covers.
    const input = encoder.encode(
      JSON.stringify({
        action: 'create',
        decision: { approvals: [], context: body.context, contextValues: contextValues(body.context), createdAt: at, createdBy: principal.keyId, id, inputs, objectives, policy: POLICY, status: 'created', title: body.title },
        now_ns: now * 1e6,
        principal,
        request: { method: 'POST', path: '/v1/decisions', signature: { alg: null, covered: [], keyId: null, label: null, verified: false } },
      }),
    );
    const inputDigest = sha256Hex(input);
    const verdict = (policy.evaluate(input.buffer as ArrayBuffer, 0) as Array<{ result: Verdict }> | null)?.[0]?.result;
    if (verdict?.allow !== true) return answer('403 Forbidden', JSON.stringify({ detail: `${POLICY} denied create`, reasons: verdict?.reasons ?? [] }));
    const result = { allow: true, gate: verdict.gate, nextAction: verdict.nextAction, reasons: verdict.reasons };
    const decision = {
      id, title: body.title, policy: POLICY, moduleHash, context: body.context, inputs, objectives, status: 'created', gate: verdict.gate, nextAction: verdict.nextAction,
      reasons: verdict.reasons, requiredApprovals: verdict.approvals, approvals: [], history: [{ action: 'create', keyId: principal.keyId, at, status: 'created', comment: null }],
      createdBy: principal.keyId, createdAt: at, updatedAt: at, auditTrail: `trace_${unique}`, revision: 1, subject: null,
    };
    const entryHead = JSON.stringify({ at, decisionId: id, env: principal.env, inputDigest, keyId: principal.keyId, method: 'POST', moduleHash, path: '/v1/decisions', policy: POLICY, result }).slice(0, -1);
    queue({ decisionId: id, decision: Buffer.from(JSON.stringify(decision)), entryHead, answer });
  };
}

/** The floor's HTTP side: POST /v1/decisions, its key lookup, body parse and schema check, then `decide`. */
export function floorApp(keys: ReadonlyMap<string, Principal>, checkBody: FloorPolicy['checkBody'], decide: (principal: Principal, body: CreateDecisionBody, answer: Pending['answer']) => void): uWS.TemplatedApp {
  const app = uWS.App();
  app.post('/v1/decisions', (res, req) => {
    const principal = keys.get(sha256Hex(req.getHeader('authorization').replace(/^Bearer /, '')));
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const answer = (status: string, body: Buffer | string) => {
      if (!aborted) res.cork(() => res.writeStatus(status).writeHeader('content-type', 'application/json').end(body));
    };
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory once this callback returns.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      if (!principal) return answer('401 Unauthorized', '{"detail":"unknown API key"}');
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return answer('400 Bad Request', '{"detail":"the body is not JSON"}');
      }
      if (!checkBody.Check(body)) return answer('400 Bad Request', '{"detail":"the body does not match the schema"}');
      if (body.policy !== POLICY) return answer('422 Unprocessable Entity', `{"detail":"only ${POLICY} is loaded"}`);
      decide(principal, body, answer);
    });
  });
  return app;
}
