import { sha256Hex } from '../canonical-json.ts';
import { GatehouseError } from '../errors.ts';
import type { SharedClaims } from '../idempotency.ts';
import { log } from '../log.ts';
import { createFirst, type ClusterLink } from './cluster-link.ts';
import type { Replica } from './replica.ts';

/**
 * Idempotency keys in flight across the cluster: a key-value bucket where a claim is a `create`
 * (refused while another instance's claim stands) and a release a delete. Claims expire with the
 * bucket's time to live (`IN_FLIGHT_TTL_MS`), so an instance that dies holding one blocks its
 * retries only that long; the commit still refuses a second reply for the key.
 */
export class ClusterClaims implements SharedClaims {
  constructor(
    private readonly link: ClusterLink,
    private readonly replica: Replica,
  ) {}

  async claim(id: string): Promise<boolean> {
    return createFirst(this.link.inFlight, sha256Hex(id), this.link.nodeId).catch((error: unknown) => {
      throw new GatehouseError('not_ready', `the cluster could not register the Idempotency-Key (${(error as Error).message})`);
    });
  }

  release(id: string): void {
    this.link.inFlight.delete(sha256Hex(id)).catch((error: unknown) => log.warn({ err: error }, 'an Idempotency-Key claim was not released; it expires by itself'));
  }

  async sync(): Promise<void> {
    await this.replica.catchUp().catch((error: unknown) => {
      throw new GatehouseError('not_ready', `this instance could not catch up with the cluster (${(error as Error).message})`);
    });
  }
}
