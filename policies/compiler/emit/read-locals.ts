import type { Block, Local, Operand, Stmt } from '../plan/ir.ts';
import { forEachStmt } from '../plan/walk.ts';

/**
 * The IR locals some statement reads (or `after` lists), so the emitter can skip producing values
 * nobody looks at (a scan's key in `xs[_]`).
 */
export function readLocals(blocks: readonly Block[], after: readonly Local[]): Set<Local> {
  const read = new Set<Local>(after);
  const operands = (...ops: Operand[]): void => {
    for (const op of ops) if ('local' in op) read.add(op.local);
  };
  const visit = (stmt: Stmt): void => {
    switch (stmt.op) {
      case 'Scan':
        read.add(stmt.source);
        return;
      case 'Block':
      case 'Not':
      case 'Break':
      case 'ResetLocal':
      case 'MakeArray':
      case 'MakeObject':
      case 'MakeSet':
        return;
      case 'Assign':
      case 'Len':
        operands(stmt.source);
        return;
      case 'AssignOnce':
        operands(stmt.source);
        read.add(stmt.target);
        return;
      case 'Dot':
        operands(stmt.source, stmt.key);
        return;
      case 'Call':
        operands(...stmt.args);
        return;
      case 'Equal':
      case 'NotEqual':
        operands(stmt.a, stmt.b);
        return;
      case 'IsDefined':
      case 'IsUndefined':
        read.add(stmt.source);
        return;
      case 'IsArray':
      case 'IsObject':
      case 'IsSet':
        operands(stmt.source);
        return;
      case 'ArrayAppend':
        operands({ local: stmt.array }, stmt.value);
        return;
      case 'ObjectInsert':
      case 'ObjectInsertOnce':
        operands({ local: stmt.object }, stmt.key, stmt.value);
        return;
      case 'SetAdd':
        operands({ local: stmt.set }, stmt.value);
        return;
      case 'ResultSetAdd':
        read.add(stmt.value);
        return;
    }
  };
  forEachStmt(blocks, visit);
  return read;
}
