import type { SignatureSummary } from '../core/audit-log.ts';
import type { PolicyCheck } from '../core/decision-workflow.ts';
import type { DecisionRecord } from '../core/decision.ts';
import type { EventDraft } from '../core/events/event.ts';
import type { IdempotencyKey } from '../core/idempotency.ts';
import type { KeyRecord } from '../core/keys.ts';
import type { SignatureFacts } from '../core/policy-input.ts';
import type { Principal } from '../core/principal.ts';
import type { RouteDef } from './route.ts';
import type { Services } from './services.ts';
import type { RequestTrace } from './tracing.ts';

/**
 * Everything one request accumulates on its way through the pipeline (proxy/pipeline.ts). Each
 * stage reads what earlier stages set and adds its own part.
 */
export interface RequestContext {
  readonly services: Services;
  readonly requestId: string;
  readonly startedAt: number;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  /** The query string as sent, without `?`: signatures cover it byte for byte. */
  readonly rawQuery: string;
  readonly headers: Record<string, string>;
  readonly params: Record<string, string>;
  readonly route: RouteDef | undefined;
  /** The pattern that matched, or `unmatched`: the label for metrics and the audit entry. */
  readonly routeLabel: string;
  /** Methods the path accepts, when the route matched the path but not the method. */
  readonly allowed: string[];
  /** Arrived after shutdown began: answered 503 so the drain can finish. */
  readonly lateForShutdown: boolean;
  /** Why the request head is malformed (proxy/http/request-head.ts), or null: answered 400 and the connection closed. */
  readonly malformed: string | null;
  /**
   * The peer's address as the socket reports it (IPv6 in full); unauthenticated refusals are
   * limited by it. Read when asked: only a refusal of an unauthenticated caller needs it, and
   * reading it for every request cost about 3% of a decision's CPU.
   */
  readonly remoteAddress: () => string;
  rawBody: Buffer | null;
  bodyTooLarge: boolean;
  /** The validated body and query, typed by the route that declared their schemas. */
  body: unknown;
  queryValues: unknown;
  principal: Principal | null;
  signature: SignatureFacts;
  /** What the signature stage concluded, for the audit entry. */
  signatureSummary: SignatureSummary | null;
  idempotency: { key: IdempotencyKey; fingerprint: string } | null;
  replayed: boolean;
  policyCheck: PolicyCheck | null;
  /** The stored decision this call concerns (loaded by id, or created by it). */
  decision: DecisionRecord | null;
  /** A decision being created, until the policy lets it be stored; its trace still records a refusal. */
  draft: DecisionRecord | null;
  /** A key being issued, with its secret. */
  issuedKey: { record: KeyRecord; secret: string } | null;
  /**
   * Run first inside the committing transaction, before any write: each throws to refuse the
   * request when what it read has changed since (core/revision.ts).
   */
  checks: Array<() => void>;
  /** Writes that commit with the audit entry, in one transaction. */
  writes: Array<() => void>;
  /** Events that commit with the writes (the audit stage numbers them); the emit stage announces them. */
  events: EventDraft[];
  /** Headers added by stages (rate limits, WWW-Authenticate, Allow), sent with any reply. */
  responseHeaders: Record<string, string>;
  errorCode: string | null;
  closeConnection: boolean;
  /** Where the stages began, when tracing is on (proxy/tracing.ts); null when it is off. */
  trace: RequestTrace | null;
}
