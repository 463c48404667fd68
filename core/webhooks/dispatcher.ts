import type { EventLog } from '../events/event-log.ts';
import type { Store } from '../store.ts';
import type { Delivery, DeliveryStatus, DeliveryStore } from './deliveries.ts';
import { endpointView, signingSecrets, type EndpointStore, type WebhookEndpoint } from './endpoint.ts';
import { nextRevision } from '../revision.ts';
import { retryDelay } from './retry-schedule.ts';
import type { AttemptResult, WebhookSender } from './sender.ts';
import { signedHeaders } from './signing.ts';

/**
 * Sends the outbox. Each endpoint has at most one delivery in flight, always its oldest pending
 * one: a later message waits until the earlier one is delivered or given up, so a receiver sees
 * an endpoint's messages in order. Endpoints proceed independently of each other.
 *
 * Every attempt is committed (attempt log, next due time, the endpoint's failure run) before the
 * next one starts, so after a restart the dispatcher resumes exactly where the store says: it
 * reads the queue at start. A run of `disableAfterFailures` failed attempts disables the
 * endpoint and records a `webhook.endpoint_disabled` event in the same transaction.
 */
export interface DispatcherOptions {
  retryScheduleMs: readonly number[];
  disableAfterFailures: number;
  /** How often the queue is re-read for work queued by other processes or missed wake-ups. */
  pollMs: number;
}

/** What `step` did: nothing left, a wait before the next attempt, or an attempt made and recorded. */
export type StepOutcome = { kind: 'idle' } | { kind: 'wait'; ms: number } | { kind: 'attempted' };

const IDLE: StepOutcome = { kind: 'idle' };
const ATTEMPTED: StepOutcome = { kind: 'attempted' };
/** A delivery behind an older pending one looks again this much later. */
const AHEAD_WAIT_MS = 1000;
/** A single delivery of a disabled endpoint looks again this much later (it may be enabled again). */
const DISABLED_WAIT_MS = 60_000;

export class Dispatcher {
  private readonly active = new Map<string, Promise<void>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Told of each committed attempt and the status it left its delivery in (for metrics). */
  private attempted: (ok: boolean, status: DeliveryStatus) => void = () => {};

  constructor(
    private readonly store: Store,
    private readonly events: EventLog,
    private readonly endpoints: EndpointStore,
    private readonly deliveries: DeliveryStore,
    private readonly sender: WebhookSender,
    private readonly options: DispatcherOptions,
  ) {}

  onAttempt(listener: (ok: boolean, status: DeliveryStatus) => void): void {
    this.attempted = listener;
  }

  /** Resumes every pending delivery and keeps polling for new ones. */
  start(onPoll: () => void): void {
    this.poll = setInterval(() => {
      onPoll();
      this.wake();
    }, this.options.pollMs);
    this.poll.unref();
    this.wake();
  }

  /** Starts work on every endpoint with a due delivery that is not already being worked on. */
  wake(): void {
    if (this.stopped) return;
    for (const endpointId of this.deliveries.queuedEndpoints()) {
      if (this.active.has(endpointId)) continue;
      const timer = this.timers.get(endpointId);
      if (timer) clearTimeout(timer);
      this.timers.delete(endpointId);
      const work = this.drive(endpointId).finally(() => this.active.delete(endpointId));
      this.active.set(endpointId, work);
    }
  }

  /** Stops starting attempts and waits for those in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled(this.active.values());
    await this.sender.close();
  }

  /** Delivers an endpoint's queue in order until it is empty, waiting, or the endpoint is off. */
  private async drive(endpointId: string): Promise<void> {
    while (!this.stopped) {
      const outcome = await this.step(endpointId);
      if (outcome.kind === 'idle') return;
      if (outcome.kind === 'wait') {
        this.timers.set(
          endpointId,
          setTimeout(() => {
            this.timers.delete(endpointId);
            this.wake();
          }, outcome.ms),
        );
        return;
      }
    }
  }

  /**
   * One attempt at the endpoint's oldest pending delivery if it is due, recorded before this
   * resolves; otherwise how long to wait, or `idle` when nothing is left to do. With `deliveryId`,
   * only that delivery is attempted, and only once it is the oldest (cluster mode hands out
   * single deliveries: core/cluster/webhook-work.ts). `working` is called before the attempt.
   */
  async step(endpointId: string, deliveryId?: string, working?: () => void): Promise<StepOutcome> {
    const endpoint = this.endpoints.get(endpointId);
    if (!endpoint) return IDLE;
    const delivery = this.deliveries.head(endpointId);
    if (!delivery || (deliveryId !== undefined && delivery.id !== deliveryId)) {
      const mine = deliveryId === undefined ? undefined : this.deliveries.find(endpointId, deliveryId);
      return mine?.status === 'pending' ? { kind: 'wait', ms: AHEAD_WAIT_MS } : IDLE;
    }
    if (!endpoint.enabled) return deliveryId === undefined ? IDLE : { kind: 'wait', ms: DISABLED_WAIT_MS };
    const wait = Date.parse(delivery.nextAttemptAt ?? '') - Date.now();
    if (wait > 0) return { kind: 'wait', ms: wait };
    working?.();
    const headers = signedHeaders(delivery.messageId, new Date(), delivery.payload, signingSecrets(endpoint));
    const result = await this.sender.send(endpoint.url, headers, delivery.payload);
    await this.record(endpointId, delivery.id, result);
    return ATTEMPTED;
  }

  /** Commits one attempt and its consequences. */
  private async record(endpointId: string, deliveryId: string, result: AttemptResult): Promise<void> {
    const { ok, ...attempt } = result;
    let disabled = false;
    let status: DeliveryStatus | null = null;
    await this.store.commit(() => {
      const endpoint = this.endpoints.get(endpointId);
      const current = this.deliveries.head(endpointId);
      // Deleted, or the queue changed under us: the attempt has nothing left to update.
      if (!endpoint || !current || current.id !== deliveryId) return;
      const failures = current.attempts.filter((a) => !isSuccess(a.status)).length + (ok ? 0 : 1);
      const delay = ok ? null : retryDelay(this.options.retryScheduleMs, failures);
      const next: Delivery = {
        ...current,
        attempts: [...current.attempts, attempt],
        status: ok ? 'delivered' : delay === null ? 'failed' : 'pending',
        nextAttemptAt: !ok && delay !== null ? new Date(Date.now() + delay).toISOString() : null,
      };
      this.deliveries.updateInTransaction(next);
      status = next.status;
      const run = ok ? 0 : endpoint.consecutiveFailures + 1;
      let updated: WebhookEndpoint = Object.assign({}, endpoint, { consecutiveFailures: run });
      if (!ok && endpoint.enabled && run >= this.options.disableAfterFailures) {
        const reason = `${run} delivery attempts failed in a row; the last: ${attempt.error ?? `HTTP ${attempt.status}`}`;
        // A new revision: an API change read before the endpoint was disabled must not enable it again unseen.
        updated = Object.assign({}, updated, { enabled: false, disabledReason: reason, updatedAt: new Date().toISOString(), revision: nextRevision(endpoint) });
        this.events.appendInTransaction({
          kind: 'webhook.endpoint_disabled',
          topic: `webhooks/${endpoint.id}`,
          env: endpoint.env,
          data: endpointView(updated),
        });
        disabled = true;
      }
      this.endpoints.write(updated);
    });
    if (status) this.attempted(ok, status);
    if (disabled) this.events.announce();
  }
}

function isSuccess(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}
