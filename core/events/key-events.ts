import { keyView, type KeyRecord } from '../keys.ts';
import type { EventDraft } from './event.ts';

/**
 * API key lifecycle events, under `keys/{id}` in the key's own environment, carrying the key as
 * the API shows it (never its hash): issued, activated or rejected by its security review,
 * revoked.
 */
export type KeyEventKind = 'key.created' | 'key.activated' | 'key.rejected' | 'key.revoked';

export function keyEvent(kind: KeyEventKind, record: KeyRecord): EventDraft {
  return { kind, topic: `keys/${record.id}`, env: record.env, data: keyView(record) };
}
