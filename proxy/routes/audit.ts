import { Type, type Static } from '@sinclair/typebox';
import type { AuditLog } from '../../core/audit-log.ts';
import { json } from '../http/reply.ts';
import { keyRefusals, type RouteDef } from '../route.ts';

/**
 * GET /v1/audit/status — the audit chain checked now, as `gatehouse audit verify` does: how far
 * it holds (the last verified entry) and, if it is broken, where and why. It walks every entry,
 * so it is an operator's call (`admin`), not one to poll; the walk yields to other requests as it
 * goes, and calls made while one runs share its answer.
 */
export const AuditStatus = Type.Object({
  ok: Type.Boolean(),
  verifiedAt: Type.String({ format: 'date-time' }),
  entries: Type.Integer({ description: 'Entries in the log (its last entry number).' }),
  lastVerified: Type.Object({ seq: Type.Integer(), hash: Type.String() }, { description: 'The last entry the chain holds up to (seq 0 when none does).' }),
  broken: Type.Union([Type.Object({ seq: Type.Integer(), reason: Type.String() }), Type.Null()]),
});

const status: RouteDef = {
  method: 'GET',
  path: '/v1/audit/status',
  operationId: 'auditStatus',
  summary: "Verify the audit chain now: the last entry it holds up to, and the first broken link if any.",
  scope: 'admin',
  audited: true,
  responses: {
    200: { description: 'The verification.', schema: AuditStatus },
    ...keyRefusals('admin'),
  },
  async handle(ctx) {
    return json(200, await sharedStatus(ctx.services.audit));
  },
};

/** The verification under way, per audit log: concurrent calls wait for the same walk. */
const running = new WeakMap<AuditLog, Promise<Static<typeof AuditStatus>>>();

function sharedStatus(audit: AuditLog): Promise<Static<typeof AuditStatus>> {
  let status = running.get(audit);
  if (!status) {
    status = checkNow(audit).finally(() => running.delete(audit));
    running.set(audit, status);
  }
  return status;
}

async function checkNow(audit: AuditLog): Promise<Static<typeof AuditStatus>> {
  const entries = audit.tail().seq;
  const verification = await audit.verifyYielding();
  return {
    ok: verification.ok,
    verifiedAt: new Date().toISOString(),
    entries,
    lastVerified: { seq: verification.entries, hash: verification.head },
    broken: verification.broken,
  };
}

export const auditRoutes: RouteDef[] = [status];
