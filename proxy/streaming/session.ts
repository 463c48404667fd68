import type { WebSocket } from 'uWebSockets.js';
import type { EventLog } from '../../core/events/event-log.ts';
import type { StoredEvent } from '../../core/events/event.ts';
import { covers, envTopic, topicScope } from '../../core/events/topics.ts';
import type { Principal } from '../../core/principal.ts';
import { hasScope } from '../../core/scopes.ts';
import {
  errorMessage,
  eventMessage,
  parseClientMessage,
  StreamError,
  subscribedMessage,
  unsubscribedMessage,
  type ClientMessage,
} from './protocol.ts';
import type { Publisher } from './publisher.ts';
import { log } from '../../core/log.ts';

/**
 * One stream connection: its subscriptions, and the replay of a `subscribe` with `since`.
 *
 * Subscriptions are topic paths; a path covers the paths below it. The connection is subscribed
 * in uWebSockets.js to the smallest set of channels that covers its paths (`decisions` alone, not
 * also `decisions/dec_1`), so an event reaches it once even when several of its paths cover it.
 * Channels carry the environment (`sandbox:decisions`): a key only ever joins its own.
 *
 * A replay sends the log's events (since, publishedCursor] that the new paths cover, then joins
 * their channels, all without yielding to the event loop between the last read and the join: no
 * event can be published in between, so the stream continues with publishedCursor + 1, live.
 * A long replay is sent in pieces: when the socket's send buffer passes `highWaterBytes` the
 * replay stops and resumes on `drain`, reading on from where it stopped up to the publishedCursor
 * of that moment, and joins only once it has caught up. Meanwhile the client's further
 * subscribe and unsubscribe messages wait their turn, so they apply in the order sent.
 */
export interface StreamSocketData {
  principal: Principal;
  session: Session | null;
}

export interface SessionOptions {
  events: EventLog;
  publisher: Publisher;
  /** Send buffer level at which a replay pauses until the socket drains. */
  highWaterBytes: number;
}

const REPLAY_BATCH = 256;

interface Replay {
  /** What the client asked for, as it will be acknowledged. */
  requested: string[];
  /** The paths this replay adds. */
  topics: string[];
  /** The paths the connection already had: their events arrived live and are not sent again. */
  already: string[];
  position: number;
  sent: number;
}

export class Session {
  private readonly topics = new Set<string>();
  private readonly waiting: ClientMessage[] = [];
  private replay: Replay | null = null;
  private closed = false;

  constructor(
    private readonly ws: WebSocket<StreamSocketData>,
    private readonly principal: Principal,
    private readonly options: SessionOptions,
  ) {}

  /** A frame from the client. */
  receive(frame: ArrayBuffer, isBinary: boolean): void {
    let message: ClientMessage;
    try {
      message = parseClientMessage(frame, isBinary);
    } catch (error) {
      this.refuse(error);
      return;
    }
    if (this.replay) this.waiting.push(message);
    else this.apply(message);
  }

  /** The send buffer drained: go on with a paused replay. */
  drained(): void {
    if (this.replay) this.continueReplay();
  }

  closedByPeer(): void {
    this.closed = true;
    this.replay = null;
  }

  private apply(message: ClientMessage): void {
    try {
      if (message.type === 'subscribe') this.subscribe(message.topics, message.since);
      else this.unsubscribe(message.topics);
    } catch (error) {
      this.refuse(error);
    }
  }

  private subscribe(topics: string[], since: number | undefined): void {
    for (const topic of topics) {
      const scope = topicScope(topic);
      if (!scope) throw new StreamError('unknown_topic', `no topic ${topic}; topics are decisions, decisions/{id}, keys, keys/{id}, audit, webhooks, webhooks/{id}, agents, agents/{id}`);
      if (!hasScope(this.principal.scopes, scope)) throw new StreamError('insufficient_scope', `subscribing to ${topic} needs the ${scope} scope`);
    }
    const fresh = topics.filter((t) => !this.topics.has(t));
    const { events, publisher } = this.options;
    if (since === undefined) {
      this.join(fresh);
      this.send(subscribedMessage(topics, publisher.publishedCursor, null));
      return;
    }
    if (since < events.prunedThrough()) {
      throw new StreamError('cursor_expired', `events up to ${events.prunedThrough()} have been pruned; subscribe without since, or with since ≥ ${events.prunedThrough()}`);
    }
    if (since > publisher.publishedCursor) {
      throw new StreamError('invalid_cursor', `cursor ${since} is ahead of this server's stream (at ${publisher.publishedCursor})`);
    }
    this.replay = { requested: topics, topics: fresh, already: [...this.topics], position: since, sent: 0 };
    this.continueReplay();
  }

  /** Sends replayed events until caught up (then joins) or until the send buffer is full. */
  private continueReplay(): void {
    const replay = this.replay!;
    const { events, publisher, highWaterBytes } = this.options;
    while (!this.closed) {
      if (this.ws.getBufferedAmount() > highWaterBytes) return;
      const upTo = publisher.publishedCursor;
      if (replay.position >= upTo) break;
      const batch = events.after(replay.position, REPLAY_BATCH);
      // Nothing stored up to upTo (pruned meanwhile): there is nothing more to send.
      if (batch.length === 0) replay.position = upTo;
      for (const event of batch) {
        if (event.cursor > upTo) break;
        replay.position = event.cursor;
        if (this.wants(replay, event)) {
          this.send(eventMessage(event));
          replay.sent++;
          if (this.ws.getBufferedAmount() > highWaterBytes) break;
        }
      }
    }
    if (this.closed) return;
    // Caught up to publishedCursor in this very turn: join now, and the next event comes live.
    this.replay = null;
    this.join(replay.topics);
    this.send(subscribedMessage(replay.requested, replay.position, replay.sent));
    while (!this.replay && this.waiting.length > 0) this.apply(this.waiting.shift()!);
  }

  private wants(replay: Replay, event: StoredEvent): boolean {
    return (
      event.env === this.principal.env &&
      replay.topics.some((t) => covers(t, event.topic)) &&
      !replay.already.some((t) => covers(t, event.topic))
    );
  }

  private unsubscribe(topics: string[]): void {
    for (const topic of topics) this.topics.delete(topic);
    this.resubscribe();
    this.send(unsubscribedMessage(topics));
  }

  private join(topics: string[]): void {
    for (const topic of topics) this.topics.add(topic);
    this.resubscribe();
  }

  /** Makes the connection's channels the smallest set covering its paths. */
  private resubscribe(): void {
    const paths = [...this.topics];
    const wanted = new Set(
      paths.filter((p) => !paths.some((other) => other !== p && covers(other, p))).map((p) => envTopic(this.principal.env, p)),
    );
    const prefix = `${this.principal.env}:`;
    for (const channel of wanted) if (!this.ws.isSubscribed(channel)) this.ws.subscribe(channel);
    for (const channel of this.ws.getTopics()) if (channel.startsWith(prefix) && !wanted.has(channel)) this.ws.unsubscribe(channel);
  }

  /** A refused message gets an error; anything else is a bug, logged, and the client told so. */
  private refuse(error: unknown): void {
    if (error instanceof StreamError) return this.send(errorMessage(error));
    log.error({ err: error }, 'stream message failed');
    this.send(errorMessage(new StreamError('internal', 'the server could not handle this message')));
  }

  private send(message: string): void {
    if (!this.closed) this.ws.send(message, false);
  }
}
