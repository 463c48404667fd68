import { abandoned } from './abandoned-work.ts';
import type { Database } from 'lmdb';
import type { AuditDraft, AuditLog } from './audit-log.ts';
import type { DecisionRecord } from './decision.ts';
import type { DecisionWorkflow, PolicyCheck } from './decision-workflow.ts';
import { GatehouseError } from './errors.ts';
import { sortableId } from './ids.ts';
import type { Principal } from './principal.ts';
import type { RouteRequestFacts } from './route-access.ts';
import type { Store } from './store.ts';
import { log } from './log.ts';

/**
 * Proxied requests a route policy held for a human (`gate` other than `auto`). Each one is stored
 * with the governed decision it became (subject `{type: "proxy-request", id}`, governed by the
 * route's policy) and follows it:
 *
 *   held ──approve…──> held ──execute──> pending ──(sent after the commit)──> complete | failed
 *     └──reject / cancel──> withdrawn
 *
 * Executing the decision marks the request `pending` in the same transaction, and only once that
 * is committed is the request handed to the sender the gateway registered (core does not speak
 * HTTP). `execute` does not wait for the upstream: its result lands later, with its own audit
 * entry. A request found `pending` at start-up was interrupted mid-send and is marked `failed`,
 * never sent again: the upstream may already have acted on it.
 */
export type HeldState = 'held' | 'pending' | 'complete' | 'failed' | 'withdrawn';

/** What is sent upstream once approved, captured when the request was held. */
export interface HeldForward {
  /** Path and query as received. */
  target: string;
  /** The headers to send, already stripped of hop-by-hop headers and the sidecar's credentials. */
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
}

export interface HeldResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The upstream sent more than the stored bound; `body` is its beginning. */
  truncated: boolean;
  latencyMs: number;
}

export type HeldOutcome =
  | { kind: 'response'; response: HeldResponse; at: string }
  | { kind: 'failure'; code: string; detail: string; at: string };

export interface HeldRequest {
  id: string;
  env: DecisionRecord['env'];
  decisionId: string;
  /** The decision's trace reference: the send is recorded under it. */
  auditTrail: string;
  requester: Principal;
  /** What the route policy saw; it sees the same on every action on the decision. */
  facts: RouteRequestFacts;
  forward: HeldForward;
  state: HeldState;
  outcome: HeldOutcome | null;
  createdAt: string;
  updatedAt: string;
  /** In cluster mode, the instance sending it (while `pending`). */
  sender?: string;
}

/** The gateway's side: send one held request and say what happened, with its audit entry. */
export interface HeldRequestSender {
  send(held: HeldRequest): Promise<{ outcome: HeldOutcome; audit: AuditDraft }>;
}

export const HELD_DATABASE = 'held-requests';

export class HeldRequests {
  private readonly db: Database<HeldRequest, string>;
  private sender: HeldRequestSender | null = null;
  private readonly sending = new Set<Promise<void>>();
  /** `--threads` mode, on a thread without the gateway: another thread sends (see `sendLearned`). */
  private sentElsewhere = false;

  constructor(
    private readonly store: Store,
    private readonly workflow: DecisionWorkflow,
    private readonly audit: AuditLog,
  ) {
    this.db = store.database<HeldRequest, string>(HELD_DATABASE);
    workflow.use({
      facts: (decision) => {
        const held = this.forDecision(decision);
        return held && { ...held.facts, requester: held.requester };
      },
      written: (record) => this.follow(record),
    });
  }

  /** The gateway registers itself as the sender while it runs. */
  setSender(sender: HeldRequestSender | null): void {
    this.sender = sender;
  }

  /**
   * `--threads` mode with a gateway, which runs on thread 0 alone (a Node HTTP server cannot
   * share its port between threads): the other threads leave the sending of the requests they
   * release to it (`leaveSending`), and thread 0 sends those it learns were released
   * (`sendLearned`), from the commit log of the threads (core/store.ts).
   */
  leaveSending(): void {
    this.sentElsewhere = true;
  }

  sendLearned(): void {
    this.store.onReplicated((writes) => {
      for (const write of writes) {
        const held = write.db === HELD_DATABASE ? (write.value() as HeldRequest | undefined) : undefined;
        if (held?.state === 'pending') this.dispatch(held.id);
      }
    });
  }

  /**
   * A held request and the decision it becomes, judged by `check` (the route policy's verdict on
   * the request). Not stored: the caller writes both with `write` and `workflow.write` in the
   * transaction that also records the audit entry.
   */
  hold(requester: Principal | null, facts: RouteRequestFacts, forward: HeldForward, check: PolicyCheck): { held: HeldRequest; decision: DecisionRecord } {
    if (!requester) {
      throw new GatehouseError('policy_denied', 'a request held for approval needs an authenticated caller', {
        reasons: ['anonymous requests cannot be held for approval'],
        policy: check.policy,
      });
    }
    const id = sortableId('hold_');
    const draft = this.workflow.draft(
      requester.env,
      requester,
      {
        title: `${facts.method} ${facts.path} via proxy route ${facts.route.name}`,
        policy: check.policy,
        context: `Held proxied request ${id}: ${facts.method} ${forward.target} to ${facts.route.upstream}.`,
      },
      { type: 'proxy-request', id },
    );
    const decision = this.workflow.applyCreate(draft, check);
    const now = new Date().toISOString();
    const held: HeldRequest = {
      id,
      env: requester.env,
      decisionId: decision.id,
      auditTrail: decision.auditTrail,
      requester,
      facts,
      forward,
      state: 'held',
      outcome: null,
      createdAt: now,
      updatedAt: now,
    };
    return { held, decision };
  }

  /** Stores a held request; call inside `store.commit`. */
  write(held: HeldRequest): void {
    this.db.put(held.id, held);
  }

  /** The held request behind a decision, if the decision governs one. */
  forDecision(decision: DecisionRecord): HeldRequest | undefined {
    if (decision.subject?.type !== 'proxy-request') return undefined;
    const held = this.db.get(decision.subject.id);
    return held && held.env === decision.env ? held : undefined;
  }

  /**
   * Marks requests interrupted mid-send by a stopped process as failed; returns how many. In
   * cluster mode only those this instance was sending, or an instance no longer alive (`alive`).
   */
  async failInterrupted(alive: (node: string) => boolean = () => false): Promise<number> {
    const interrupted: HeldRequest[] = [];
    for (const { value } of this.db.getRange()) if (value.state === 'pending' && abandoned(value.sender, this.store.nodeId, alive)) interrupted.push(value);
    if (interrupted.length === 0) return 0;
    const at = new Date().toISOString();
    await this.store.commit(() => {
      for (const held of interrupted) {
        const outcome: HeldOutcome = {
          kind: 'failure',
          code: 'interrupted',
          detail: 'the server stopped before the upstream answered; the request is not sent again',
          at,
        };
        this.write(Object.assign({}, held, { state: 'failed', outcome, updatedAt: at }));
      }
    });
    return interrupted.length;
  }

  /** Resolves once every send started so far has stored its outcome. */
  async idle(): Promise<void> {
    while (this.sending.size) await Promise.all(this.sending);
  }

  /** Moves the held request along with its decision; runs inside the decision's write transaction. */
  private follow(record: DecisionRecord): void {
    const held = this.forDecision(record);
    if (!held || held.state !== 'held') return;
    const updatedAt = record.updatedAt;
    if (record.status === 'executed') {
      const pending: HeldRequest = Object.assign({}, held, { state: 'pending' as const, updatedAt });
      if (this.store.nodeId !== null) pending.sender = this.store.nodeId;
      this.write(pending);
      this.store.afterCommit(() => this.dispatch(held.id));
    } else if (record.status === 'rejected' || record.status === 'cancelled') {
      this.write(Object.assign({}, held, { state: 'withdrawn', updatedAt }));
    }
  }

  private dispatch(id: string): void {
    if (this.sentElsewhere) return this.store.wakeMainThread();
    const sending = this.send(id).catch((error) => log.error({ heldRequest: id, err: error }, 'a held request could not be recorded'));
    this.sending.add(sending);
    void sending.finally(() => this.sending.delete(sending));
  }

  private async send(id: string): Promise<void> {
    const held = this.db.get(id);
    if (!held || held.state !== 'pending') return;
    const sender = this.sender;
    if (!sender) {
      const at = new Date().toISOString();
      const outcome: HeldOutcome = { kind: 'failure', code: 'upstream_unavailable', detail: 'no proxy gateway is running to send it', at };
      await this.store.commit(() => this.write(Object.assign({}, held, { state: 'failed', outcome, updatedAt: at })));
      return;
    }
    const { outcome, audit } = await sender.send(held);
    await this.store.commit(() => {
      this.write(Object.assign({}, held, { state: outcome.kind === 'response' ? 'complete' : 'failed', outcome, updatedAt: outcome.at }));
      this.audit.appendInTransaction(audit);
    });
  }
}

