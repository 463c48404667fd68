/**
 * The governed floor: the least work a governed decision needs, done with Gatehouse's own parts
 * and nothing else. A raw uWebSockets.js handler authenticates the bearer key (KeyRegistry),
 * validates the body against the same schema, drafts the decision and asks decision-gate-v1
 * through DecisionWorkflow (canonical input, digest, Wasm evaluation), then commits the decision
 * and its hash-chained audit entry in one group commit (Store, DecisionStore, AuditLog) before
 * answering with the decision's JSON.
 *
 * What it leaves out is everything else a Gatehouse call does: the pipeline's stages and
 * problem documents, idempotency, metrics, events and their stream and webhooks, decision
 * memory. Measured beside Gatehouse, it says how much of the gap to the raw handler is the
 * governed work itself and how much is the rest.
 */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import uWS from 'uWebSockets.js';
import { AuditLog, verdictSummary } from '../../core/audit-log.ts';
import { decisionView } from '../../core/decision.ts';
import { DecisionStore } from '../../core/decision-store.ts';
import { DecisionWorkflow, type CreateDecision } from '../../core/decision-workflow.ts';
import { requestId } from '../../core/ids.ts';
import { KeyRegistry } from '../../core/keys.ts';
import { UNSIGNED } from '../../core/policy-input.ts';
import { Store } from '../../core/store.ts';
import { CreateDecisionBody } from '../../proxy/schemas.ts';
import { validate } from '../../proxy/validation.ts';
import { listenUws, type BaselineServer } from './baseline-servers.ts';
import { openBundledPolicies } from './scenario-gatehouse.ts';

const ROUTE = 'POST /v1/decisions';

export interface GovernedFloor extends BaselineServer {
  /** `Authorization: Bearer <secret>` of the sandbox key it issued itself. */
  auth: { authorization: string };
}

/** Starts the floor with the bundled policies, on its own data directory under `workDir`. */
export async function startGovernedFloor(workDir: string): Promise<GovernedFloor> {
  const dir = mkdtempSync(path.join(workDir, 'floor-'));
  const engine = await openBundledPolicies(dir);
  const store = Store.open({ dataDir: dir });
  const keys = new KeyRegistry(store);
  const decisions = new DecisionStore(store);
  const audit = new AuditLog(store);
  const workflow = new DecisionWorkflow(decisions, engine);
  const issued = keys.draft({ env: 'sandbox', scopes: ['decisions:write'], createdBy: 'floor' });
  await store.commit(() => keys.write(issued.record));

  const app = uWS.App();
  app.post('/v1/decisions', (res, req) => {
    const authorization = req.getHeader('authorization');
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const answer = (status: string, body: string) => {
      if (!aborted) res.cork(() => res.writeStatus(status).writeHeader('content-type', 'application/json').end(body));
    };
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory once this callback returns.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      try {
        const principal = keys.authenticate(authorization.replace(/^Bearer /, ''));
        const body = validate<CreateDecision>(CreateDecisionBody, JSON.parse(Buffer.concat(chunks).toString('utf8')), 'body');
        const draft = workflow.draft(principal.env, principal, body);
        const check = workflow.check('create', draft, principal, { method: 'POST', path: '/v1/decisions', signature: UNSIGNED });
        const created = workflow.applyCreate(draft, check);
        store
          .commit(() => {
            workflow.write(created);
            audit.appendInTransaction({
              at: new Date().toISOString(),
              requestId: requestId(),
              keyId: principal.keyId,
              env: principal.env,
              method: 'POST',
              route: ROUTE,
              path: '/v1/decisions',
              status: 200,
              code: null,
              decisionId: created.id,
              traceRef: created.auditTrail,
              policy: check.policy,
              moduleHash: check.moduleHash,
              inputDigest: check.inputDigest,
              result: verdictSummary(check.verdict),
              traceparent: null,
              replayed: false,
            });
          })
          .then(
            () => answer('200 OK', JSON.stringify(decisionView(created))),
            (error: unknown) => answer('500 Internal Server Error', JSON.stringify({ detail: String(error) })),
          );
      } catch (error) {
        answer('500 Internal Server Error', JSON.stringify({ detail: error instanceof Error ? error.message : String(error) }));
      }
    });
  });
  const server = await listenUws(app, 'governed floor');
  return {
    origin: server.origin,
    auth: { authorization: `Bearer ${issued.secret}` },
    close: async () => {
      await server.close();
      await store.close();
      await engine.close();
    },
  };
}
