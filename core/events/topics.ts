import type { Env } from '../env.ts';
import type { Scope } from '../scopes.ts';

/**
 * Topic paths and who may subscribe to them. An event has one topic path, e.g.
 * `decisions/dec_…`; a subscription to a path receives the events at that path and below it, so
 * `decisions` covers every decision and `decisions/dec_…` one. What a key may subscribe to is
 * decided by the path's first segment (the table below) and always limited to the key's own
 * environment.
 */
const ROOT_SCOPE: Record<string, Scope> = {
  decisions: 'decisions:read',
  keys: 'admin',
  audit: 'admin',
  webhooks: 'webhooks:manage',
  agents: 'agents:run',
};

export const TOPIC_ROOTS = Object.keys(ROOT_SCOPE);

/** One or two segments: a root, and optionally an id of letters, digits, `_`, `-` or `.`. */
const TOPIC_SHAPE = /^([a-z]+)(?:\/([A-Za-z0-9_.-]{1,128}))?$/;

/** The scope a subscription to `topic` needs, or null when the path is not a known topic. */
export function topicScope(topic: string): Scope | null {
  const match = TOPIC_SHAPE.exec(topic);
  return match ? (ROOT_SCOPE[match[1]!] ?? null) : null;
}

/** Whether a subscription to `subscription` receives an event published at `topic`. */
export function covers(subscription: string, topic: string): boolean {
  return topic === subscription || topic.startsWith(`${subscription}/`);
}

/** Every path whose subscribers receive an event at `topic`: `decisions`, `decisions/dec_1`. */
export function topicPaths(topic: string): string[] {
  const parts = topic.split('/');
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** The name a topic has inside one environment, so that environments never share a channel. */
export function envTopic(env: Env, topic: string): string {
  return `${env}:${topic}`;
}
