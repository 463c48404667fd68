import type { JsonWebKey } from 'node:crypto';
import type { AuditCheckpoints } from './audit-checkpoints.ts';
import type { Transaction } from 'lmdb';
import { ChainWalk, tailRecord, type AuditEntry, type AuditLog, type ChainTail } from './audit-log.ts';
import type { AuditVerifyingKey } from './audit-signing-key.ts';
import { CheckpointCheck, type AuditVerification } from './audit-verification.ts';

/**
 * The audit log as NDJSON for a third party, who can verify it with the public key alone
 * (`gatehouse audit verify --export FILE --public-key JWK`). Line 1 is the header, then every
 * checkpoint, then every entry exactly as stored:
 *
 *   {"type":"gatehouse-audit-export","version":1,"exportedAt":…,"tail":{seq,hash}|null,"publicKey":JWK|null}
 *   {"type":"checkpoint","seq":…,"hash":…,"at":…,"keyId":…,"signature":…}
 *   {"seq":1,…,"prevHash":…,"hash":…}
 *
 * Checkpoints come first so a verifier reading the entries once checks each against them as it
 * passes. The header's public key says which key signed; a verifier must get the key it trusts
 * elsewhere, since whoever can rewrite the export can replace that one too.
 */
export const EXPORT_TYPE = 'gatehouse-audit-export';

export interface ExportHeader {
  type: typeof EXPORT_TYPE;
  version: 1;
  exportedAt: string;
  tail: ChainTail | null;
  publicKey: JsonWebKey | null;
}

/** An export that cannot be written or read, with a message fit for an operator. */
export class AuditExportError extends Error {}

/** One line of an export and what it holds. */
export interface ExportLine {
  kind: 'header' | 'checkpoint' | 'entry';
  line: string;
}

/**
 * The export's lines, from one read snapshot of the store. An entry or checkpoint that cannot be
 * decoded ends it with an AuditExportError (`gatehouse audit verify` names what is damaged).
 */
export function* exportLines(audit: AuditLog, checkpoints: AuditCheckpoints, publicKey: JsonWebKey | null): Generator<ExportLine, void, undefined> {
  const snapshot = audit.snapshot();
  try {
    const tail = audit.recordedTail(snapshot);
    const header: ExportHeader = { type: EXPORT_TYPE, version: 1, exportedAt: new Date().toISOString(), tail: tail && 'damaged' in tail ? null : tail, publicKey };
    yield { kind: 'header', line: JSON.stringify(header) };
    for (const record of checkpoints.stored(snapshot)) {
      if (record.error !== undefined) throw new AuditExportError(`the checkpoint stored under ${String(record.key)} cannot be decoded (${record.error})`);
      yield { kind: 'checkpoint', line: JSON.stringify({ type: 'checkpoint', ...record.value }) };
    }
    for (const entry of decodedEntries(audit, snapshot)) yield { kind: 'entry', line: JSON.stringify(entry) };
  } finally {
    snapshot.done();
  }
}

/** The entries of a snapshot, oldest first; one that cannot be decoded ends them with an AuditExportError. */
export function* decodedEntries(audit: AuditLog, snapshot: Transaction): Generator<AuditEntry, void, undefined> {
  for (const record of audit.stored(snapshot)) {
    if (record.error !== undefined) throw new AuditExportError(`the entry stored under ${String(record.key)} cannot be decoded (${record.error})`);
    yield record.value;
  }
}

/** Verifies an export's lines against the trusted keys, as `verifyAuditLog` does the store. */
export async function verifyExport(lines: AsyncIterable<string>, keys: readonly AuditVerifyingKey[]): Promise<AuditVerification> {
  const check = new CheckpointCheck(keys);
  let walk: ChainWalk | null = null;
  let number = 0;
  for await (const line of lines) {
    number++;
    if (walk === null) {
      walk = new ChainWalk(tailRecord(header(line).tail));
      continue;
    }
    if (line.trim() === '') continue;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(line) as Record<string, unknown>;
    } catch {
      walk.unreadable(walk.head.seq + 1, `line ${number} is not JSON`);
      break;
    }
    if (value?.type === 'checkpoint') {
      check.add(`checkpoint on line ${number}`, value);
      continue;
    }
    const seq = typeof value?.seq === 'number' ? value.seq : walk.head.seq + 1;
    if (!walk.entry(seq, value)) break;
    check.reach(walk.head);
  }
  if (walk === null) throw new AuditExportError('the export is empty');
  return check.result(walk.result());
}

function header(line: string): ExportHeader {
  let value: Partial<ExportHeader> | null = null;
  try {
    value = JSON.parse(line) as Partial<ExportHeader>;
  } catch {
    // Reported below with the rest of what line 1 may be.
  }
  if (value?.type !== EXPORT_TYPE) throw new AuditExportError(`not a Gatehouse audit export: line 1 is not its header (exports written before checkpoints have none: export again)`);
  if (value.version !== 1) throw new AuditExportError(`an audit export of version ${String(value.version)}, which this version cannot read`);
  return value as ExportHeader;
}
