import type { EngineLog } from '../../policies/engine/index.ts';

/** What the policy engine logged, each entry its message and fields. */
export interface LoggedEntry {
  message: string;
  fields: Record<string, unknown>;
}

export function capturingLog(): EngineLog & { infos: LoggedEntry[]; errors: LoggedEntry[] } {
  const infos: LoggedEntry[] = [];
  const errors: LoggedEntry[] = [];
  return { infos, errors, info: (fields, message) => infos.push({ message, fields }), error: (fields, message) => errors.push({ message, fields }) };
}
