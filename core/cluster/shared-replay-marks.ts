import { Kvm, type KV } from '@nats-io/kv';
import { sha256Hex } from '../canonical-json.ts';
import { log } from '../log.ts';
import type { SharedReplayMarks } from '../signatures/replay-guard.ts';
import { createFirst, type ClusterLink } from './cluster-link.ts';

/**
 * Signature replay markers across the cluster (core/signatures/replay-guard.ts): a key-value
 * bucket where claiming a marker is a `create`, refused when any instance created it first. The
 * bucket forgets a marker after its time to live, which covers a signature's whole window of
 * acceptance (twice the allowed clock skew, since `created` may lie ahead of or behind the
 * clock, and a second). Keys are SHA-256 of the markers: a nonce may hold characters a key may not.
 */
export class ClusterReplayMarks implements SharedReplayMarks {
  private constructor(private readonly kv: KV) {}

  /**
   * Opens the bucket, creating it with a time to live of `windowMs` on first use. A bucket an
   * instance with another window created is used as it is, and a shorter one is reported.
   */
  static async open(link: ClusterLink, windowMs: number): Promise<ClusterReplayMarks> {
    const name = `${link.namespace}_signature_replay`;
    const kv = await new Kvm(link.nc).create(name, { replicas: link.replicas, ttl: windowMs, history: 1 });
    const { ttl } = await kv.status();
    if (ttl > 0 && ttl < windowMs) {
      log.warn({ bucket: name, ttlMs: ttl, windowMs }, 'the cluster forgets signature replay markers sooner than this instance accepts signatures: a replay later than that is refused only by the instance that saw the signature (align --signature-skew across instances)');
    }
    return new ClusterReplayMarks(kv);
  }

  async claim(markers: string[], until: number): Promise<boolean> {
    const created = await Promise.all(markers.map((marker) => createFirst(this.kv, sha256Hex(marker), String(until))));
    return created.every(Boolean);
  }
}
