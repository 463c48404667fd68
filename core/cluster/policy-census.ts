import { Kvm, type KV } from '@nats-io/kv';
import { log } from '../log.ts';
import type { PolicyEvaluator } from '../policy-evaluator.ts';
import type { ClusterLink } from './cluster-link.ts';

/** How often an instance re-announces its policies and reads the others'. */
const REFRESH_MS = 10_000;
/** An instance that stopped announcing (it died) drops out of the census this long after. */
const ANNOUNCEMENT_TTL_MS = 60_000;

/** How another instance's policies differ from this one's. */
export interface PolicyDifference {
  node: string;
  /** Loaded here, not there. */
  missing: string[];
  /** Loaded there, not here. */
  extra: string[];
  /** Loaded in both, from different modules. */
  changed: string[];
}

interface Announcement {
  node: string;
  /** Policy name → module hash. */
  policies: Record<string, string>;
}

/**
 * Which policies each instance of the cluster has loaded. Policies are files each instance
 * compiles from its own policies directory, so a cluster serves the same rules only if every
 * instance is given the same files; the census makes a difference visible: each instance
 * announces its policies' module hashes in a key-value bucket (at start, after each reload, and
 * every `REFRESH_MS`), reads the others', and `/readyz` reports how they differ (docs/cluster.md).
 */
export class PolicyCensus {
  private others: Announcement[] = [];
  private timer: NodeJS.Timeout | null = null;
  private stopListening: (() => void) | null = null;
  /** The differences last logged, so a lasting one is logged once. */
  private reported = '[]';

  private constructor(
    private readonly bucket: KV,
    private readonly node: string,
    private readonly evaluator: PolicyEvaluator,
  ) {}

  static async start(link: ClusterLink, evaluator: PolicyEvaluator): Promise<PolicyCensus> {
    const bucket = await new Kvm(link.nc).create(`${link.namespace}_policies`, { ttl: ANNOUNCEMENT_TTL_MS, history: 1, replicas: link.replicas });
    const census = new PolicyCensus(bucket, link.nodeId, evaluator);
    await census.refresh();
    census.timer = setInterval(() => void census.refresh(), REFRESH_MS).unref();
    census.stopListening = evaluator.onReload?.(() => void census.refresh()) ?? null;
    return census;
  }

  /** How each other live instance's policies differ from this one's (only those that differ). */
  differences(): PolicyDifference[] {
    const mine = this.loaded();
    const out: PolicyDifference[] = [];
    for (const other of this.others) {
      const difference: PolicyDifference = {
        node: other.node,
        missing: Object.keys(mine).filter((name) => !(name in other.policies)),
        extra: Object.keys(other.policies).filter((name) => !(name in mine)),
        changed: Object.keys(mine).filter((name) => name in other.policies && other.policies[name] !== mine[name]),
      };
      if (difference.missing.length + difference.extra.length + difference.changed.length > 0) out.push(difference);
    }
    return out;
  }

  /** Whether `node` is this instance or another that announced itself within the last minute. */
  alive(node: string): boolean {
    return node === this.node || this.others.some((other) => other.node === node);
  }

  /** Stops announcing, and withdraws this instance's announcement. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.stopListening?.();
    await this.bucket.delete(this.key(this.node)).catch(() => {});
  }

  private loaded(): Record<string, string> {
    const policies: Record<string, string> = {};
    for (const name of this.evaluator.names()) policies[name] = this.evaluator.info(name)?.moduleHash ?? '';
    return policies;
  }

  private key(node: string): string {
    return node.replace(/[^A-Za-z0-9_-]/g, '_');
  }

  private async refresh(): Promise<void> {
    try {
      const mine: Announcement = { node: this.node, policies: this.loaded() };
      await this.bucket.put(this.key(this.node), JSON.stringify(mine));
      const others: Announcement[] = [];
      for await (const key of await this.bucket.keys()) {
        if (key === this.key(this.node)) continue;
        const entry = await this.bucket.get(key);
        if (entry && entry.operation === 'PUT') others.push(entry.json<Announcement>());
      }
      this.others = others;
      const differing = this.differences();
      const report = JSON.stringify(differing);
      if (report !== this.reported && differing.length) log.warn({ differences: differing }, 'instances of this cluster serve different policies');
      this.reported = report;
    } catch (error) {
      log.warn({ err: error }, 'the policy census could not be refreshed');
    }
  }
}
