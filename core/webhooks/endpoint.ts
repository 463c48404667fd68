import { randomBytes } from 'node:crypto';
import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { assertFollows, nextRevision, type Revisioned } from '../revision.ts';
import type { Store } from '../store.ts';

/**
 * Webhook endpoints: where an environment's events are delivered, which kinds, and the secrets
 * that sign them. A secret is kept (it must be, to sign) but shown only when it is created or
 * rotated. After a rotation the previous secret stays valid until its grace period ends: every
 * delivery meanwhile carries a signature by each, as Standard Webhooks allows, so a receiver can
 * switch secrets without losing a message.
 */
export interface WebhookSecret {
  secret: string;
  createdAt: string;
  /** When a rotated-out secret stops signing; null for the current one. */
  expiresAt: string | null;
}

export interface WebhookEndpoint extends Revisioned {
  id: string;
  env: Env;
  url: string;
  /** Event kinds: exact (`decision.created`), a family (`decision.*`) or everything (`*`). */
  events: string[];
  description: string | null;
  enabled: boolean;
  /** Why the dispatcher disabled it, until it is enabled again. */
  disabledReason: string | null;
  /** Newest first. */
  secrets: WebhookSecret[];
  /** Failed attempts in a row; a success resets it, reaching the configured bound disables. */
  consecutiveFailures: number;
  /** The event log's cursor when the endpoint was created: only later events are delivered. */
  sinceCursor: number;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** What the API shows: never a secret. */
export type EndpointView = Omit<WebhookEndpoint, 'secrets' | 'env' | 'sinceCursor' | 'revision'> & { secretRotatedAt: string; previousSecretExpiresAt: string | null };

export function endpointView(endpoint: WebhookEndpoint, now = Date.now()): EndpointView {
  const { secrets, env: _env, sinceCursor: _sinceCursor, revision: _revision, ...rest } = endpoint;
  const previous = secrets.slice(1).find((s) => s.expiresAt !== null && Date.parse(s.expiresAt) > now);
  return Object.assign({}, rest, { secretRotatedAt: secrets[0]!.createdAt, previousSecretExpiresAt: previous?.expiresAt ?? null });
}

/** A signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The secrets that sign a delivery made at `now`: the current one and any still in grace. */
export function signingSecrets(endpoint: WebhookEndpoint, now = Date.now()): string[] {
  return endpoint.secrets.filter((s) => s.expiresAt === null || Date.parse(s.expiresAt) > now).map((s) => s.secret);
}

/** Whether the endpoint asked for events of `kind`. */
export function subscribes(endpoint: WebhookEndpoint, kind: string): boolean {
  return endpoint.events.some((pattern) => pattern === '*' || pattern === kind || (pattern.endsWith('.*') && kind.startsWith(pattern.slice(0, -1))));
}

/** The endpoint with a fresh secret; the old one signs too until `graceMs` has passed. */
export function withRotatedSecret(endpoint: WebhookEndpoint, secret: string, graceMs: number, now = Date.now()): WebhookEndpoint {
  const at = new Date(now).toISOString();
  const expiresAt = new Date(now + graceMs).toISOString();
  // Secrets already past their grace are dropped; the one being replaced gets its grace.
  const kept = endpoint.secrets
    .map((s, i) => (i === 0 ? Object.assign({}, s, { expiresAt }) : s))
    .filter((s) => s.expiresAt !== null && Date.parse(s.expiresAt) > now);
  return { ...endpoint, secrets: [{ secret, createdAt: at, expiresAt: null }, ...kept], updatedAt: at, revision: nextRevision(endpoint) };
}

export class EndpointStore {
  private readonly endpoints: Database<WebhookEndpoint, string>;

  constructor(store: Store) {
    this.endpoints = store.database<WebhookEndpoint, string>('webhook-endpoints');
  }

  /** The endpoint a key may see: only in its own environment. */
  load(env: Env, id: string): WebhookEndpoint {
    const endpoint = this.endpoints.get(id);
    if (!endpoint || endpoint.env !== env) throw new GatehouseError('not_found', `no webhook endpoint ${id}`);
    return endpoint;
  }

  get(id: string): WebhookEndpoint | undefined {
    return this.endpoints.get(id);
  }

  list(env: Env): WebhookEndpoint[] {
    return this.all().filter((e) => e.env === env);
  }

  all(): WebhookEndpoint[] {
    return [...this.endpoints.getRange()].map(({ value }) => value);
  }

  isEmpty(): boolean {
    for (const _ of this.endpoints.getKeys({ limit: 1 })) return false;
    return true;
  }

  /**
   * Refuses (409) `next` when another request, or a delivery's outcome, changed the endpoint
   * since `next` was derived from it; call inside `store.commit` before writing.
   */
  assertCurrent(next: WebhookEndpoint): void {
    assertFollows(this.endpoints.get(next.id), next, `webhook endpoint ${next.id}`);
  }

  /** Call inside `store.commit`. */
  write(endpoint: WebhookEndpoint): void {
    this.endpoints.put(endpoint.id, endpoint);
  }

  /** Call inside `store.commit`. */
  remove(id: string): void {
    this.endpoints.remove(id);
  }
}
