import type { Block, Stmt } from './ir.ts';

/**
 * Calls `visit` on every statement of `blocks` in order, depth first: a Block, Scan or Not
 * statement first, then the statements nested in it. For analyses that look at each statement
 * on its own (which locals are read, which are written).
 */
export function forEachStmt(blocks: readonly Block[], visit: (stmt: Stmt) => void): void {
  const walk = (block: Block): void => {
    for (const stmt of block.stmts) {
      visit(stmt);
      if (stmt.op === 'Block') stmt.blocks.forEach(walk);
      else if (stmt.op === 'Scan' || stmt.op === 'Not') walk(stmt.block);
    }
  };
  blocks.forEach(walk);
}
