import { BUILTINS, ZONE_OFFSET_BUILTIN } from '../builtins.ts';
import type { Block, Policy } from './ir.ts';

/**
 * The builtins a plan calls that run in JavaScript beside the module (policies/engine/
 * host-builtins.ts), by OPA name and sorted, with ZONE_OFFSET_BUILTIN where a time builtin may be
 * given a named zone: a module that needs them loads only where they are provided, which
 * `policies build` reports for each policy.
 */
export function hostBuiltinsUsed(policy: Policy): string[] {
  const found = new Set<string>();
  const visit = (block: Block): void => {
    for (const stmt of block.stmts) {
      if (stmt.op === 'Call' && BUILTINS[stmt.func]?.impl === 'host') found.add(stmt.func);
      else if (stmt.op === 'Call' && BUILTINS[stmt.func]?.asksHostForZones) found.add(ZONE_OFFSET_BUILTIN);
      else if (stmt.op === 'Block') stmt.blocks.forEach(visit);
      else if (stmt.op === 'Scan' || stmt.op === 'Not') visit(stmt.block);
    }
  };
  for (const func of policy.funcs) func.blocks.forEach(visit);
  for (const plan of policy.plans) plan.blocks.forEach(visit);
  return [...found].sort();
}
