import type { EventLog } from '../events/event-log.ts';
import { AddressGuard } from '../ssrf-guard.ts';
import type { Store } from '../store.ts';
import { DeliveryStore } from './deliveries.ts';
import { Dispatcher } from './dispatcher.ts';
import { EndpointStore } from './endpoint.ts';
import { FanOut } from './fan-out.ts';
import { DEFAULT_RETRY_SCHEDULE_MS } from './retry-schedule.ts';
import { WebhookSender } from './sender.ts';
import { log } from '../log.ts';

/**
 * Webhooks, assembled: endpoints, the outbox, the fan-out from the event log and the
 * dispatcher, with their settings. The server starts it after opening the store and stops it
 * before closing the store.
 */
export interface WebhookOptions {
  /** Waits between attempts; the delivery is given up after the last. */
  retryScheduleMs: readonly number[];
  /** One attempt's bound, connection included. */
  attemptTimeoutMs: number;
  /** Failed attempts in a row that disable an endpoint. */
  disableAfterFailures: number;
  /** CIDRs, addresses or host names webhooks may reach despite the SSRF guard. */
  allow: readonly string[];
  /** How long a rotated-out secret keeps signing. */
  rotationGraceMs: number;
  pollMs: number;
}

export const WEBHOOK_DEFAULTS: WebhookOptions = {
  retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
  attemptTimeoutMs: 15_000,
  disableAfterFailures: 20,
  allow: [],
  rotationGraceMs: 24 * 60 * 60 * 1000,
  pollMs: 1_000,
};

/** Cluster mode's share-out of deliveries among instances (core/cluster/webhook-work.ts). */
export interface SharedDeliveries {
  /** `attemptTimeoutMs`: one attempt's bound, after which an instance that shows no progress has died. */
  start(dispatcher: Dispatcher, attemptTimeoutMs: number): void;
  /** Stops taking work; resolves once what this instance took is recorded or handed back. */
  stop(): Promise<void>;
}

export class Webhooks {
  readonly endpoints: EndpointStore;
  readonly deliveries: DeliveryStore;
  readonly fanOut: FanOut;
  readonly guard: AddressGuard;
  readonly dispatcher: Dispatcher;
  private stopped = false;
  private shared: SharedDeliveries | null = null;
  private started = false;

  constructor(
    private readonly store: Store,
    events: EventLog,
    readonly options: WebhookOptions,
  ) {
    this.endpoints = new EndpointStore(store);
    this.deliveries = new DeliveryStore(store);
    this.fanOut = new FanOut(store, events, this.endpoints, this.deliveries);
    this.guard = new AddressGuard({ allow: options.allow, allowSetting: 'GATEHOUSE_WEBHOOK_ALLOW' });
    const sender = new WebhookSender(this.guard, options.attemptTimeoutMs);
    this.dispatcher = new Dispatcher(store, events, this.endpoints, this.deliveries, sender, options);
    events.onCommitted(() => this.kick());
  }

  /**
   * Resumes pending deliveries (those left by a previous run included). With `shared`, in
   * cluster mode, the instances share them out instead: each delivery is attempted by the one
   * instance `shared` hands it to, and this dispatcher only makes the attempts.
   */
  start(shared: SharedDeliveries | null = null): void {
    this.started = true;
    this.shared = shared;
    if (shared) shared.start(this.dispatcher, this.options.attemptTimeoutMs);
    else this.dispatcher.start(() => this.kick());
  }

  /** Stops polling and starting attempts; resolves once what is in flight is recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.shared?.stop();
    await this.dispatcher.stop();
    await this.fanOut.settled();
  }

  /** The highest event cursor the log may prune: none the fan-out still has to read. */
  pruneFloor(): number {
    return this.endpoints.isEmpty() ? Number.MAX_SAFE_INTEGER : this.fanOut.position();
  }

  /** Fans out new events, then wakes the dispatcher for what that queued (and what routes queued). */
  private kick(): void {
    // Every committed call kicks; with no endpoint there is nothing to fan out or deliver, and
    // the first endpoint's own commit kicks again.
    if (this.stopped || this.endpoints.isEmpty()) return;
    // Only a started server fans out and delivers: in `--threads` mode thread 0 alone, which
    // this thread's commits then wake.
    if (!this.started) return this.store.wakeMainThread();
    const wake = () => {
      if (!this.shared) this.dispatcher.wake();
    };
    wake();
    void this.fanOut.run().then(
      wake,
      (error) => log.error({ err: error }, 'webhook fan-out failed'),
    );
  }
}
