import type { AuditEntry } from '../audit-log.ts';
import type { EventDraft } from './event.ts';

/**
 * Every audit entry recorded for a key's environment is also an `audit.appended` event under the
 * topic `audit`, so an operator can watch calls as they happen. Entries without an environment
 * (unauthenticated calls, operator commands) belong to no environment's stream. The event refers
 * to the entry by its number; readers of the event log see the entry itself as its data.
 */
export function auditEvent(entry: AuditEntry): EventDraft | null {
  if (!entry.env) return null;
  return { kind: 'audit.appended', topic: 'audit', env: entry.env, data: null, auditSeq: entry.seq };
}
