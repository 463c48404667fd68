import type { Block, Local, Stmt } from '../plan/ir.ts';
import { forEachStmt } from '../plan/walk.ts';

type Dot = Extract<Stmt, { op: 'Dot' }>;

/**
 * The Dot statements whose value cannot change during one call of a function: a constant key
 * looked up in a parameter that no statement writes (input, data, a function's arguments), or in
 * a local whose only write is such a Dot. Values are immutable once generated code holds them,
 * so the emitter can look each (source, key) pair up once per call: `input.action` inside
 * `some p in data.permissions` then costs one lookup, not one per permission.
 */
export function invariantDots(blocks: readonly Block[], params: readonly Local[]): Set<Dot> {
  const writes = new Map<Local, number>();
  const dots: Dot[] = [];
  const write = (local: Local): void => {
    writes.set(local, (writes.get(local) ?? 0) + 1);
  };
  const visit = (stmt: Stmt): void => {
    switch (stmt.op) {
      case 'Scan':
        write(stmt.key);
        write(stmt.value);
        return;
      case 'Dot':
        dots.push(stmt);
        write(stmt.target);
        return;
      case 'Assign':
      case 'AssignOnce':
      case 'ResetLocal':
      case 'Len':
      case 'Call':
      case 'MakeArray':
      case 'MakeObject':
      case 'MakeSet':
        write(stmt.target);
        return;
      // Mutating a collection changes what lookups in it return.
      case 'ArrayAppend':
        write(stmt.array);
        return;
      case 'ObjectInsert':
      case 'ObjectInsertOnce':
        write(stmt.object);
        return;
      case 'SetAdd':
        write(stmt.set);
        return;
      case 'Block':
      case 'Not':
      case 'Break':
      case 'Equal':
      case 'NotEqual':
      case 'IsDefined':
      case 'IsUndefined':
      case 'IsArray':
      case 'IsObject':
      case 'IsSet':
      case 'ResultSetAdd':
        return;
      default:
        throw new Error(`unknown statement ${JSON.stringify(stmt satisfies never)}`);
    }
  };
  forEachStmt(blocks, visit);

  const stable = new Set(params.filter((local) => !writes.has(local)));
  const invariant = new Set<Dot>();
  // A chain `input.a.b` becomes invariant link by link, so repeat until nothing changes.
  for (let grew = true; grew; ) {
    grew = false;
    for (const dot of dots) {
      if (invariant.has(dot) || !('const' in dot.key) || !('local' in dot.source) || !stable.has(dot.source.local)) continue;
      invariant.add(dot);
      if (writes.get(dot.target) === 1) stable.add(dot.target);
      grew = true;
    }
  }
  return invariant;
}
