import { randomBytes } from 'node:crypto';
import type { Database } from 'lmdb';
import { sha256Hex } from './canonical-json.ts';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import { sortableId } from './ids.ts';
import type { Principal } from './principal.ts';
import { assertFollows, nextRevision, type Revisioned } from './revision.ts';
import type { Store } from './store.ts';

/**
 * API keys. The secret is shown once, when issued; only its SHA-256 is stored. A 256-bit random
 * secret makes a plain hash enough (there is nothing to brute-force), and a hash lookup keeps
 * authentication to one read. Production keys start `pending_review` until a security review
 * approves them (core/key-review.ts).
 */
export type KeyStatus = 'active' | 'pending_review' | 'revoked' | 'rejected';

export interface KeyRecord extends Revisioned {
  id: string;
  env: Env;
  name: string | null;
  scopes: string[];
  roles: string[];
  status: KeyStatus;
  hash: string;
  createdAt: string;
  createdBy: string | null;
  reviewDecisionId: string | null;
  updatedAt: string;
}

/** What the API shows of a key: never the hash. */
export type KeyView = Omit<KeyRecord, 'hash' | 'updatedAt' | 'revision'>;

export interface IssueKeyRequest {
  env: Env;
  scopes: string[];
  roles?: string[];
  name?: string | null;
  createdBy: string | null;
}

const SECRET_PREFIX: Record<Env, string> = { sandbox: 'gh_test_', production: 'gh_live_' };
const BOOTSTRAP_META = 'bootstrap-admin-key';

export function hashSecret(secret: string): string {
  return sha256Hex(secret);
}

export function keyView(record: KeyRecord): KeyView {
  const { hash: _hash, updatedAt: _updatedAt, revision: _revision, ...view } = record;
  return view;
}

export function principalOf(record: KeyRecord): Principal {
  return { env: record.env, keyId: record.id, roles: record.roles, scopes: record.scopes };
}

export class KeyRegistry {
  private readonly keys: Database<KeyRecord, string>;
  private readonly byHash: Database<string, string>;
  private readonly meta: Database<string, string>;

  constructor(store: Store) {
    this.keys = store.database<KeyRecord, string>('keys');
    this.byHash = store.database<string, string>('key-hashes');
    this.meta = store.database<string, string>('meta');
  }

  /**
   * A new key and its secret, not yet stored: the caller writes it with `write` inside the same
   * transaction as the audit entry that records its creation.
   */
  draft(request: IssueKeyRequest): { record: KeyRecord; secret: string } {
    const secret = SECRET_PREFIX[request.env] + randomBytes(32).toString('base64url');
    const now = new Date().toISOString();
    const record: KeyRecord = {
      id: sortableId('key_'),
      env: request.env,
      name: request.name ?? null,
      scopes: [...new Set(request.scopes)],
      roles: [...new Set(request.roles ?? [])],
      status: request.env === 'production' ? 'pending_review' : 'active',
      hash: hashSecret(secret),
      createdAt: now,
      createdBy: request.createdBy,
      reviewDecisionId: null,
      updatedAt: now,
    };
    return { record, secret };
  }

  /** Stores a key record; call inside `store.commit`. */
  write(record: KeyRecord): void {
    this.keys.put(record.id, record);
    this.byHash.put(record.hash, record.id);
  }

  get(id: string): KeyRecord | undefined {
    return this.keys.get(id);
  }

  /**
   * The principal a presented secret authenticates, or `unauthenticated` saying why not (unknown,
   * pending security review, revoked, rejected).
   */
  authenticate(secret: string): Principal {
    const record = this.lookup(secret);
    if (!record || record.status !== 'active') {
      const why = !record ? 'is not known' : record.status === 'pending_review' ? 'is pending security review' : `is ${record.status}`;
      throw new GatehouseError('unauthenticated', `this API key ${why}`);
    }
    return principalOf(record);
  }

  /** The record for a presented secret, whatever its status (the caller tells the states apart). */
  lookup(secret: string): KeyRecord | undefined {
    const id = this.byHash.get(hashSecret(secret));
    return id === undefined ? undefined : this.keys.get(id);
  }

  list(envs: readonly Env[]): KeyRecord[] {
    const out: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) if (envs.includes(value.env)) out.push(value);
    return out;
  }

  /** The record with a new status; write it with `write`. */
  withStatus(record: KeyRecord, status: KeyStatus): KeyRecord {
    return Object.assign({}, record, { status, updatedAt: new Date().toISOString(), revision: nextRevision(record) });
  }

  /** Refuses (409) `next` when another request changed the key since `next` was derived; call inside `store.commit` before writing. */
  assertCurrent(next: KeyRecord): void {
    assertFollows(this.keys.get(next.id), next, `key ${next.id}`);
  }

  revoke(id: string): KeyRecord {
    const record = this.keys.get(id);
    if (!record) throw new GatehouseError('not_found', `no key ${id}`);
    if (record.status === 'revoked') throw new GatehouseError('conflict', `key ${id} is already revoked`);
    return this.withStatus(record, 'revoked');
  }

  /**
   * The operator's admin key. With a configured secret, the stored bootstrap key takes that
   * secret (rotating any earlier one); without one, the first start generates a secret and
   * returns it so it can be printed once. Later starts return `generated: null`. `audit` runs in
   * the same transaction so the issue or rotation is on the record.
   */
  async ensureBootstrapAdmin(
    store: Store,
    configured: string | undefined,
    audit: (record: KeyRecord) => void,
  ): Promise<{ id: string; generated: string | null }> {
    const existingId = this.meta.get(BOOTSTRAP_META);
    const existing = existingId === undefined ? undefined : this.keys.get(existingId);
    if (existing && existing.status === 'active' && (!configured || existing.hash === hashSecret(configured))) {
      return { id: existing.id, generated: null };
    }
    const secret = configured ?? SECRET_PREFIX.production + randomBytes(32).toString('base64url');
    const now = new Date().toISOString();
    const record: KeyRecord = {
      id: existing?.id ?? sortableId('key_'),
      env: 'production',
      name: 'bootstrap admin',
      scopes: ['admin'],
      roles: ['admin'],
      status: 'active',
      hash: hashSecret(secret),
      createdAt: existing?.createdAt ?? now,
      createdBy: null,
      reviewDecisionId: null,
      updatedAt: now,
    };
    await store.commit(() => {
      if (existing) this.byHash.remove(existing.hash);
      this.write(record);
      this.meta.put(BOOTSTRAP_META, record.id);
      audit(record);
    });
    return { id: record.id, generated: configured ? null : secret };
  }
}
