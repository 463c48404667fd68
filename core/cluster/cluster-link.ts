import { hostname } from 'node:os';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, DeliverPolicy, DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { log } from '../log.ts';

/**
 * How an instance joins a cluster (docs/cluster.md). Everything but the servers has a default.
 */
export interface ClusterOptions {
  /** NATS URLs, e.g. `nats://h1:4222`; the client fails over between them. */
  servers: string[];
  /** This instance's name in the cluster (default: host name and process id). */
  nodeId?: string;
  /**
   * Prefix of the stream and buckets: clusters that share a NATS account need one each
   * (default `gatehouse`; letters, digits, `-` and `_`).
   */
  namespace?: string;
  /** Replicas of the stream and buckets (default 3 on a NATS cluster, 1 on a single server). */
  replicas?: number;
  /** Credentials, as the `nats` client takes them. */
  user?: string;
  pass?: string;
  token?: string;
  /** TLS options passed to the client (`ca`, `cert`, `key` file paths), or null. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string } | null;
}

/** This instance could not join the cluster: NATS unreachable, or a data directory of another cluster. */
export class ClusterJoinError extends Error {}

/** How long a publish may take before the cluster is taken to be unreachable for it. */
export const PUBLISH_TIMEOUT_MS = 2000;
/** How long a commit keeps being offered to a cluster that does not answer (a leader election takes a few seconds). */
export const PUBLISH_DEADLINE_MS = 5000;
/** The pause before a commit that timed out is offered again. */
export const PUBLISH_RETRY_MS = 100;
/** A commit retried after a timeout within this window is recognised as the same message. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1e9;
/** One commit message at most (a batch of writes): NATS's own default message limit is 1 MiB. */
export const MAX_COMMIT_BYTES = 8 * 1024 * 1024;
/** How long an idempotency key stays claimed by a request in flight on some instance. */
export const IN_FLIGHT_TTL_MS = 60_000;

/**
 * Creates `key` in `kv` unless it exists: the compare-and-set that lets only one instance win a
 * claim. Resolves to true when this call created it, false when it existed; rejects when the
 * cluster could not answer.
 */
export async function createFirst(kv: KV, key: string, value: string): Promise<boolean> {
  try {
    await kv.create(key, value);
    return true;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) return false;
    throw error;
  }
}

const NAMESPACE_SHAPE = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * The connection to the NATS cluster and the JetStream resources cluster mode lives on: one
 * stream of commits (every write of every instance, in one order) and one key-value bucket of
 * idempotency keys in flight. Created on first start, reused after.
 */
export class ClusterLink {
  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly nodeId: string,
    /** The commit stream's name, and its subjects: commits that queue webhook deliveries, and the others. */
    readonly stream: string,
    readonly subjects: { writes: string; deliveries: string },
    readonly namespace: string,
    /** Replicas of the stream and buckets. */
    readonly replicas: number,
    readonly inFlight: KV,
  ) {}

  /**
   * Connects; creates the stream and bucket when they are missing unless `create` is false (a
   * reader such as `audit verify`, for which a missing stream is an error, not an empty log).
   */
  static async connect(options: ClusterOptions, create = true): Promise<ClusterLink> {
    const namespace = options.namespace ?? 'gatehouse';
    if (!NAMESPACE_SHAPE.test(namespace)) throw new Error(`cluster namespace "${namespace}" must be 1-32 letters, digits, "-" or "_"`);
    if (options.servers.length === 0) throw new Error('cluster mode needs at least one NATS server URL');
    const nodeId = options.nodeId ?? `${hostname()}-${process.pid}`;
    const nc = await connect({
      servers: options.servers,
      name: `gatehouse ${nodeId}`,
      // Keep trying for ever: an instance cut off from NATS refuses writes (503) until it is back.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // A server that stops answering (frozen, cut off) is left after three missed pings, about
      // 6 s, rather than the client's default of minutes: writes move to a live server.
      pingInterval: 2000,
      maxPingOut: 3,
      timeout: 5000,
      ...(options.user !== undefined ? { user: options.user, pass: options.pass } : {}),
      ...(options.token !== undefined ? { token: options.token } : {}),
      ...(options.tls ? { tls: options.tls } : {}),
    });
    try {
      const jsm = await jetstreamManager(nc, { timeout: PUBLISH_TIMEOUT_MS * 2 });
      const js = jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS });
      const replicas = options.replicas ?? (nc.info?.cluster ? 3 : 1);
      const stream = `${namespace.toUpperCase()}_COMMITS`;
      const subjects = { writes: `${namespace}.commits.writes`, deliveries: `${namespace}.commits.deliveries` };
      if (!create) {
        await jsm.streams.info(stream).catch((error: unknown) => {
          if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) throw new ClusterJoinError(`no stream ${stream} on this NATS cluster (wrong namespace?)`);
          throw error;
        });
        return new ClusterLink(nc, js, jsm, nodeId, stream, subjects, namespace, replicas, await new Kvm(nc).open(`${namespace}_idempotency_in_flight`));
      }
      await ensureStream(jsm, {
        name: stream,
        subjects: [`${namespace}.commits.>`],
        num_replicas: replicas,
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.New,
        duplicate_window: DUPLICATE_WINDOW_NS,
        max_msg_size: MAX_COMMIT_BYTES,
      });
      const inFlight = await new Kvm(nc).create(`${namespace}_idempotency_in_flight`, { replicas, ttl: IN_FLIGHT_TTL_MS, history: 1 });
      return new ClusterLink(nc, js, jsm, nodeId, stream, subjects, namespace, replicas, inFlight);
    } catch (error) {
      await nc.close().catch(() => {});
      throw error;
    }
  }

  /** The stream's state now (its last sequence is what a caught-up instance has applied). */
  info(): Promise<StreamInfo> {
    return this.jsm.streams.info(this.stream);
  }

  /**
   * The commits from `sequence` on, in order (an ordered consumer: it resumes by itself after a
   * failover). Close the iterator to stop reading.
   */
  async commitsFrom(sequence: number): Promise<ConsumerMessages> {
    const consumer = await this.js.consumers.get(this.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: sequence });
    // Short pulls and heartbeats: a reader whose server died notices within about two seconds
    // (two missed heartbeats) instead of the client's default half minute, and reads on elsewhere.
    return consumer.consume({ max_messages: 512, expires: 4000, idle_heartbeat: 1000 });
  }

  async close(): Promise<void> {
    await this.nc.drain().catch(() => {});
  }
}

/** Creates the stream, or checks that the one found is usable as it is. */
async function ensureStream(jsm: JetStreamManager, config: Parameters<JetStreamManager['streams']['add']>[0]): Promise<void> {
  try {
    const found = await jsm.streams.info(config.name!);
    if (found.config.num_replicas !== config.num_replicas) {
      log.warn({ stream: config.name, replicas: found.config.num_replicas, wanted: config.num_replicas }, 'the commit stream keeps the replica count it was created with');
    }
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    await jsm.streams.add(config);
  }
}
