import { GatehouseError } from '../errors.ts';
import type { SharedClaims } from '../idempotency.ts';
import type { ThreadCommits } from '../store.ts';
import { BUCKET_FIELDS } from '../rate-limiter.ts';
import { REPLAY_FIELDS } from '../signatures/replay-guard.ts';
import { SharedTable, type SharedTableMemory } from './shared-table.ts';

/**
 * The threads of one `--threads N` process (docs/api.md, *Threads*): each runs the whole
 * API on one port and one LMDB environment, and what must be one across them lives here, in
 * shared memory: the Idempotency-Keys in flight, the rate limits' buckets, the signature replay
 * markers not yet stored, how far thread 0 has read the threads' commit log (what may be
 * pruned), and who is to be woken. Thread 0 (the main thread)
 * creates the group and hands `memory` to each worker in its `workerData`; the threads also talk
 * over BroadcastChannels named after it: wakes, metrics gathered for a scrape, and the requests
 * workers hand to thread 0.
 */
export interface ThreadGroupMemory {
  size: number;
  channel: string;
  claims: SharedTableMemory;
  keyBuckets: SharedTableMemory;
  addressBuckets: SharedTableMemory;
  replayMarks: SharedTableMemory;
  /** How far thread 0 has read the commit log: what may be pruned. */
  learned: SharedArrayBuffer;
  /** Per thread: a wake message is on its way (1) or not (0), and how many of its readers want to be woken. */
  signals: SharedArrayBuffer;
}

/** Slots per table; a table holds at most three quarters as many entries (SharedTable.insert). */
const CLAIM_SLOTS = 1 << 14;
const BUCKET_SLOTS = 1 << 16;
const REPLAY_SLOTS = 1 << 16;

type GatherMessage = { kind: 'ask'; id: number } | { kind: 'answer'; id: number; value: unknown };
type CallMessage = { kind: 'call'; id: number; payload: unknown } | { kind: 'answer'; id: number; value: unknown } | { kind: 'failed'; id: number; message: string };

/** How long `gather` waits for the other threads. */
const GATHER_TIMEOUT_MS = 1000;

export class ThreadGroup {
  readonly claims: SharedTable;
  readonly keyBuckets: SharedTable;
  readonly addressBuckets: SharedTable;
  readonly replayMarks: SharedTable;
  private readonly learnedByMain: BigInt64Array;
  private readonly signals: Int32Array;
  /** This thread's wake messages, and each other thread's (opened when first woken). */
  private readonly channel: BroadcastChannel;
  private readonly peers = new Map<number, BroadcastChannel>();
  /** Requests for each thread's metrics and their answers (`gather`). */
  private readonly metricsChannel: BroadcastChannel;
  private readonly gathering = new Map<number, { answers: unknown[]; done: () => void }>();
  private nextGather = 0;
  private answer: (() => Promise<unknown>) | null = null;
  /** Calls to thread 0 (`call`): their channel, and this thread's calls awaiting an answer. */
  private readonly calls: BroadcastChannel;
  private readonly awaiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void; timer: NodeJS.Timeout }>();
  private nextCall = 0;

  private constructor(
    readonly memory: ThreadGroupMemory,
    /** This thread's place in the group: 0 is the main thread, which runs the work done once per process. */
    readonly index: number,
  ) {
    this.claims = SharedTable.attach(memory.claims, 1);
    this.keyBuckets = SharedTable.attach(memory.keyBuckets, BUCKET_FIELDS);
    this.addressBuckets = SharedTable.attach(memory.addressBuckets, BUCKET_FIELDS);
    this.replayMarks = SharedTable.attach(memory.replayMarks, REPLAY_FIELDS);
    this.learnedByMain = new BigInt64Array(memory.learned);
    this.signals = new Int32Array(memory.signals);
    this.channel = this.channelOf(index);
    this.metricsChannel = new BroadcastChannel(`${memory.channel}-metrics`);
    (this.metricsChannel as BroadcastChannel & { unref(): void }).unref();
    this.metricsChannel.onmessage = (event: MessageEvent<GatherMessage>) => void this.onGatherMessage(event.data);
    this.calls = new BroadcastChannel(`${memory.channel}-calls`);
    (this.calls as BroadcastChannel & { unref(): void }).unref();
    if (index !== 0) this.calls.onmessage = (event: MessageEvent<CallMessage>) => this.onAnswer(event.data);
  }

  /** A group of `size` threads, seen from thread 0. */
  static create(size: number): ThreadGroup {
    return new ThreadGroup(
      {
        size,
        channel: `gatehouse-threads-${process.pid}-${Math.random().toString(36).slice(2)}`,
        claims: SharedTable.create(CLAIM_SLOTS, 1).memory,
        keyBuckets: SharedTable.create(BUCKET_SLOTS, BUCKET_FIELDS).memory,
        addressBuckets: SharedTable.create(BUCKET_SLOTS, BUCKET_FIELDS).memory,
        replayMarks: SharedTable.create(REPLAY_SLOTS, REPLAY_FIELDS).memory,
        learned: new SharedArrayBuffer(8),
        signals: new SharedArrayBuffer(size * 2 * 4),
      },
      0,
    );
  }

  /** The group seen from worker thread `index`. */
  static join(memory: ThreadGroupMemory, index: number): ThreadGroup {
    return new ThreadGroup(memory, index);
  }

  get size(): number {
    return this.memory.size;
  }

  /**
   * How the store tells the other threads of its commits and learns theirs (core/store.ts). A
   * thread is woken only while something on it wants to hear of commits at once (`want`: a
   * stream subscriber, say), or when another thread names it (`wake`: work only it does), and
   * then once for however many commits came meanwhile: a message, and the turn of the event loop
   * it costs the woken thread, cost more than the commit it reports at a thousand a second.
   */
  commits(): ThreadCommits {
    return {
      node: `thread-${this.index}`,
      announce: () => {
        for (let i = 0; i < this.size; i++) if (i !== this.index && Atomics.load(this.signals, i * 2 + 1) > 0) this.wake(i);
      },
      wake: (index) => this.wake(index),
      want: (on) => void Atomics.add(this.signals, this.index * 2 + 1, on ? 1 : -1),
      // Only thread 0 reads what the log carries; the others read it only to number their entries.
      learned: (seq) => void (this.index === 0 && Atomics.store(this.learnedByMain, 0, BigInt(seq))),
      onAnnounced: (listener) => {
        this.channel.onmessage = () => {
          // Cleared first: a commit made while the listener runs wakes this thread again.
          Atomics.store(this.signals, this.index * 2, 0);
          listener();
        };
      },
      learnedByMain: () => Number(Atomics.load(this.learnedByMain, 0)),
    };
  }

  /** Wakes thread `index` unless a wake is already on its way to it. */
  private wake(index: number): void {
    if (index === this.index || Atomics.exchange(this.signals, index * 2, 1) === 1) return;
    let peer = this.peers.get(index);
    if (!peer) this.peers.set(index, (peer = this.channelOf(index)));
    peer.postMessage(0);
  }

  /** Thread `index`'s wake channel; it must not keep a thread alive once its server has closed. */
  private channelOf(index: number): BroadcastChannel {
    const channel = new BroadcastChannel(`${this.memory.channel}-${index}`);
    (channel as BroadcastChannel & { unref(): void }).unref();
    return channel;
  }

  /**
   * Idempotency-Keys in flight in any thread. Once claimed, `sync` makes the thread's next read
   * see every commit made so far, a reply another thread stored for the key included.
   */
  idempotencyClaims(refreshReads: () => void): SharedClaims {
    const table = this.claims;
    return {
      claim: (id) =>
        Promise.resolve(
          table.locked(() => {
            if (table.find(id) >= 0) return false;
            if (table.insert(id) < 0) throw new GatehouseError('not_ready', 'too many requests with an Idempotency-Key are in flight; retry shortly');
            return true;
          }),
        ),
      release: (id) =>
        table.locked(() => {
          const slot = table.find(id);
          if (slot >= 0) table.remove(slot);
        }),
      sync: () => {
        refreshReads();
        return Promise.resolve();
      },
    };
  }

  /**
   * What every thread's `provide` gives: this one's first, then the others' as they answer. A
   * thread that has not answered within `timeoutMs` (stopping, or stuck) is left out.
   */
  async gather(timeoutMs = GATHER_TIMEOUT_MS): Promise<unknown[]> {
    if (!this.answer) throw new Error('this thread provides nothing to gather');
    const answers = [await this.answer()];
    if (this.size === 1) return answers;
    const id = this.index * 2 ** 32 + this.nextGather++;
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.gathering.delete(id);
        resolve(answers);
      };
      const timer = setTimeout(finish, timeoutMs);
      this.gathering.set(id, { answers, done: finish });
      this.metricsChannel.postMessage({ kind: 'ask', id } satisfies GatherMessage);
    });
  }

  /** What this thread gives when one gathers (`gather`): its metrics. */
  provide(answer: () => Promise<unknown>): void {
    this.answer = answer;
  }

  private async onGatherMessage(message: GatherMessage): Promise<void> {
    if (message.kind === 'ask') {
      if (this.answer) this.metricsChannel.postMessage({ kind: 'answer', id: message.id, value: await this.answer() } satisfies GatherMessage);
      return;
    }
    const gathering = this.gathering.get(message.id);
    if (!gathering) return;
    gathering.answers.push(message.value);
    if (gathering.answers.length === this.size) gathering.done();
  }

  /**
   * Asks thread 0 to work `payload` out (`answerCalls`); resolves to its answer, rejects after
   * `timeoutMs` or with thread 0's error.
   */
  call(payload: unknown, timeoutMs: number): Promise<unknown> {
    const id = this.index * 2 ** 32 + this.nextCall++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.awaiting.delete(id);
        reject(new Error(`thread 0 did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.awaiting.set(id, { resolve, reject, timer });
      this.calls.postMessage({ kind: 'call', id, payload } satisfies CallMessage);
    });
  }

  /** On thread 0: works out the other threads' calls with `handle`. */
  answerCalls(handle: (payload: unknown) => Promise<unknown>): void {
    this.calls.onmessage = (event: MessageEvent<CallMessage>) => {
      const message = event.data;
      if (message.kind !== 'call') return;
      void handle(message.payload).then(
        (value) => this.calls.postMessage({ kind: 'answer', id: message.id, value } satisfies CallMessage),
        (error: unknown) => this.calls.postMessage({ kind: 'failed', id: message.id, message: (error as Error).message } satisfies CallMessage),
      );
    };
  }

  private onAnswer(message: CallMessage): void {
    if (message.kind === 'call') return;
    const awaiting = this.awaiting.get(message.id);
    if (!awaiting) return;
    this.awaiting.delete(message.id);
    clearTimeout(awaiting.timer);
    if (message.kind === 'answer') awaiting.resolve(message.value);
    else awaiting.reject(new Error(message.message));
  }

  close(): void {
    this.calls.close();
    this.channel.close();
    for (const peer of this.peers.values()) peer.close();
    this.metricsChannel.close();
  }
}
