import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The client a careful service is towards a Gatehouse cluster: every decision it creates carries
 * an Idempotency-Key, and a request left unanswered (503, a refused or cut connection, a
 * timeout, the key still in flight on another instance, 429) is sent again with the same key
 * to the next instance, until one answers 200 or the request's deadline passes. Every attempt is
 * kept, so a fault test can say which were answered, where, and when.
 */
export interface Instance {
  name: string;
  url: string;
}

export interface Attempt {
  instance: string;
  sentAt: number;
  /** null: no HTTP answer (connection refused or cut, timed out). */
  status: number | null;
  /** The problem's `code`, or the client-side error. */
  code: string;
}

export interface Write {
  title: string;
  idempotencyKey: string;
  attempts: Attempt[];
  /** The 200 that settled it; null when every attempt before the deadline went unanswered, or one was refused for good. */
  answer: { instance: string; id: string; at: number; replayed: boolean } | null;
}

/** A decision body whose title names the write (titles are unique: a duplicate shows in a list). */
function decisionBody(title: string): unknown {
  return { title, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 10 }] };
}

/** What one POST /v1/decisions was answered; status null when no answer came (refused, cut, timed out). */
export interface Answered {
  status: number | null;
  /** The problem's `code`, or the client-side error's. */
  code: string;
  detail: string;
  contentType: string | null;
  id: string | null;
  replayed: boolean;
  ms: number;
}

/**
 * Creates a decision titled `title` once, waiting up to `timeoutMs` for the answer (the shared
 * `call` helper gives up after 10 s; an instance cut off from its cluster may take longer to
 * refuse). Sandbox keys need not sign.
 */
export async function postDecision(url: string, key: string, title: string, options: { idempotencyKey?: string; timeoutMs: number }): Promise<Answered> {
  const started = Date.now();
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  try {
    const response = await fetch(`${url}/v1/decisions`, { method: 'POST', headers, body: JSON.stringify(decisionBody(title)), signal: AbortSignal.timeout(options.timeoutMs) });
    const text = await response.text();
    let json: { id?: string; code?: string; detail?: string } | undefined;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return {
      status: response.status,
      code: json?.code ?? '',
      detail: json?.detail ?? '',
      contentType: response.headers.get('content-type'),
      id: response.status === 200 ? (json?.id ?? null) : null,
      replayed: response.headers.get('idempotent-replayed') === 'true',
      ms: Date.now() - started,
    };
  } catch (error) {
    const code = (error as Error).name === 'TimeoutError' ? 'timeout' : String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
    return { status: null, code, detail: (error as Error).message, contentType: null, id: null, replayed: false, ms: Date.now() - started };
  }
}

/** Answers that say "not now": retried with the same key. */
function retriable({ status, code }: Answered): boolean {
  return status === null || status === 503 || status === 429 || (status === 409 && code === 'idempotency_in_flight');
}

export interface WriteOptions {
  /** Index of the instance the first attempt goes to. */
  first: number;
  /** Epoch ms after which no attempt is started. */
  deadline: number;
  idempotencyKey?: string;
  /** Counts requests sent and not yet answered, by instance name. */
  inFlight?: Map<string, number>;
}

/** How long one attempt waits for its answer: longer than an instance takes to give up on its cluster. */
const ATTEMPT_TIMEOUT_MS = 30_000;

/**
 * Creates one decision titled `title`, first on `instances[first]`, then on the next instance
 * after each unanswered attempt, until a 200 or the deadline. Keeps every attempt.
 */
export async function createUntilAnswered(instances: Instance[], key: string, title: string, options: WriteOptions): Promise<Write> {
  const { first, deadline, idempotencyKey = `k-${randomBytes(8).toString('hex')}`, inFlight = new Map<string, number>() } = options;
  const write: Write = { title, idempotencyKey, attempts: [], answer: null };
  for (let i = first; Date.now() < deadline; i++) {
    const instance = instances[i % instances.length]!;
    const sentAt = Date.now();
    inFlight.set(instance.name, (inFlight.get(instance.name) ?? 0) + 1);
    const answered = await postDecision(instance.url, key, title, { idempotencyKey, timeoutMs: ATTEMPT_TIMEOUT_MS }).finally(() => inFlight.set(instance.name, inFlight.get(instance.name)! - 1));
    write.attempts.push({ instance: instance.name, sentAt, status: answered.status, code: answered.code });
    if (answered.status === 200) {
      write.answer = { instance: instance.name, id: answered.id!, at: Date.now(), replayed: answered.replayed };
      return write;
    }
    if (!retriable(answered)) return write;
    // A key in flight elsewhere is worth a longer pause than a moment's unavailability.
    await sleep(answered.status === 409 ? 250 : 50);
  }
  return write;
}

export interface SteadyLoad {
  /** Every write settled so far, in the order they settled. */
  readonly writes: Write[];
  /** Requests sent and not yet answered, per instance name. */
  inFlight(instance: string): number;
  /** Resolves once a write first sent after `since` is answered 200; rejects after `timeoutMs`. */
  answeredAfter(since: number, timeoutMs: number): Promise<Write>;
  /** Stops starting writes and resolves once every client's last write has settled. */
  stop(): Promise<Write[]>;
}

/**
 * `clients` concurrent clients, each creating decisions one after another (titled
 * `${prefix}-<client>-<n>`) with `pauseMs` between them; client i sends each first attempt to
 * instance i mod n. Each write may take until `writeTimeoutMs` to be answered.
 */
export function steadyLoad(options: { instances: Instance[]; key: string; clients: number; pauseMs: number; prefix: string; writeTimeoutMs: number }): SteadyLoad {
  const { instances, key, clients, pauseMs, prefix, writeTimeoutMs } = options;
  const writes: Write[] = [];
  const inFlight = new Map<string, number>();
  const listeners = new Set<() => void>();
  let stopped = false;
  const runs = Array.from({ length: clients }, async (_, client) => {
    for (let n = 0; !stopped; n++) {
      const write = await createUntilAnswered(instances, key, `${prefix}-${client}-${n}`, { first: client, deadline: Date.now() + writeTimeoutMs, inFlight });
      writes.push(write);
      for (const listener of listeners) listener();
      await sleep(pauseMs);
    }
  });
  return {
    writes,
    inFlight: (instance) => inFlight.get(instance) ?? 0,
    answeredAfter(since, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = writes.find((write) => write.answer && write.attempts[0]!.sentAt > since);
          if (!found) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no write sent after ${new Date(since).toISOString()} was answered 200 within ${timeoutMs} ms`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async stop() {
      stopped = true;
      await Promise.all(runs);
      return writes;
    },
  };
}

/** The longest time between two successive 200s among `writes` answered within [from, to]. */
export function longestGap(writes: Write[], from: number, to: number): { ms: number; after: number } {
  const times = writes.flatMap((write) => (write.answer && write.answer.at >= from && write.answer.at <= to ? [write.answer.at] : [])).sort((x, y) => x - y);
  let gap = { ms: 0, after: from };
  for (let i = 1; i < times.length; i++) if (times[i]! - times[i - 1]! > gap.ms) gap = { ms: times[i]! - times[i - 1]!, after: times[i - 1]! };
  return gap;
}

/**
 * Every decision `key` can list on `url`, page by page (bounded). A page answered 503 or not at
 * all (the instance still catching up after a fault) is asked again until `deadline`.
 */
export async function listAllDecisions(url: string, key: string, deadline = Date.now() + 60_000, maxPages = 200): Promise<Array<{ id: string; title: string }>> {
  const listed: Array<{ id: string; title: string }> = [];
  let cursor: string | null = null;
  for (let page = 0; page < maxPages; ) {
    const path = `/v1/decisions?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const answer = await fetch(url + path, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(30_000) }).then(
      async (response) => ({ status: response.status, text: await response.text() }),
      (error: Error) => ({ status: null, text: error.message }),
    );
    if (answer.status !== 200) {
      if ((answer.status === null || answer.status === 503) && Date.now() < deadline) {
        await sleep(200);
        continue;
      }
      throw new Error(`listing decisions on ${url}: ${answer.status} ${answer.text}`);
    }
    const body = JSON.parse(answer.text) as { data: Array<{ id: string; title: string }>; nextCursor: string | null };
    listed.push(...body.data.map(({ id, title }) => ({ id, title })));
    cursor = body.nextCursor;
    if (!cursor) return listed;
    page++;
  }
  throw new Error(`more than ${maxPages} pages of decisions on ${url}`);
}
