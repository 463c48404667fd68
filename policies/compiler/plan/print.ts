import type { Block, Const, Func, Operand, Plan, Policy, Stmt } from './ir.ts';

/** Constants longer than this are shown by index only inside statements. */
const INLINE_CONST_LENGTH = 32;

/**
 * The IR as text for debugging (`gatehouse policies build --ir`): the constants, then every
 * function and plan with one statement per line and nested blocks indented.
 *
 *   func data.pkg.allow(l0, l1) -> l2  locals=4 cacheable  # pkg.rego:3
 *     block
 *       Dot l0[c0 "user"] -> l3
 *       Equal l3 c1 "alice"
 */
export function printPolicy(policy: Policy): string {
  const lines: string[] = [`consts (${policy.consts.length})`];
  policy.consts.forEach((text, i) => lines.push(`  c${i} = ${text}`));
  const printer = new Printer(policy.consts, lines);
  for (const func of policy.funcs) printer.func(func);
  for (const plan of policy.plans) printer.plan(plan);
  return lines.join('\n') + '\n';
}

class Printer {
  constructor(
    private readonly consts: readonly Const[],
    private readonly lines: string[],
  ) {}

  func(func: Func): void {
    const params = func.params.map(local).join(', ');
    const flags = func.cacheable ? ' cacheable' : '';
    const origin = func.origin ? `  # ${func.origin}` : '';
    this.lines.push(`func ${func.name}(${params}) -> ${local(func.result)}  locals=${func.locals}${flags}${origin}`);
    for (const block of func.blocks) this.block(block, 1);
  }

  plan(plan: Plan): void {
    this.lines.push(`plan ${plan.name}  locals=${plan.locals}`);
    for (const block of plan.blocks) this.block(block, 1);
  }

  private block(block: Block, depth: number): void {
    this.line(depth, 'block');
    for (const stmt of block.stmts) this.stmt(stmt, depth + 1);
  }

  private stmt(stmt: Stmt, depth: number): void {
    const o = (operand: Operand): string => this.operand(operand);
    switch (stmt.op) {
      case 'Block':
        this.line(depth, 'Block');
        for (const block of stmt.blocks) this.block(block, depth + 1);
        return;
      case 'Scan':
        this.line(depth, `Scan ${local(stmt.source)} key ${local(stmt.key)} value ${local(stmt.value)}`);
        this.block(stmt.block, depth + 1);
        return;
      case 'Not':
        this.line(depth, 'Not');
        this.block(stmt.block, depth + 1);
        return;
      case 'Break':
        return this.line(depth, `Break ${stmt.index}`);
      case 'Assign':
        return this.line(depth, `Assign ${o(stmt.source)} -> ${local(stmt.target)}`);
      case 'AssignOnce':
        return this.line(depth, `AssignOnce ${o(stmt.source)} -> ${local(stmt.target)}  conflict ${JSON.stringify(stmt.message)}`);
      case 'ResetLocal':
        return this.line(depth, `ResetLocal ${local(stmt.target)}`);
      case 'Dot':
        return this.line(depth, `Dot ${o(stmt.source)}[${o(stmt.key)}] -> ${local(stmt.target)}`);
      case 'Len':
        return this.line(depth, `Len ${o(stmt.source)} -> ${local(stmt.target)}`);
      case 'Call':
        return this.line(depth, `Call ${stmt.func}(${stmt.args.map(o).join(', ')}) -> ${local(stmt.target)}`);
      case 'Equal':
      case 'NotEqual':
        return this.line(depth, `${stmt.op} ${o(stmt.a)} ${o(stmt.b)}`);
      case 'IsDefined':
      case 'IsUndefined':
        return this.line(depth, `${stmt.op} ${local(stmt.source)}`);
      case 'IsArray':
      case 'IsObject':
      case 'IsSet':
        return this.line(depth, `${stmt.op} ${o(stmt.source)}`);
      case 'MakeArray':
        return this.line(depth, `MakeArray capacity=${stmt.capacity} -> ${local(stmt.target)}`);
      case 'MakeObject':
      case 'MakeSet':
        return this.line(depth, `${stmt.op} -> ${local(stmt.target)}`);
      case 'ArrayAppend':
        return this.line(depth, `ArrayAppend ${local(stmt.array)} <- ${o(stmt.value)}`);
      case 'ObjectInsert':
        return this.line(depth, `ObjectInsert ${local(stmt.object)}[${o(stmt.key)}] <- ${o(stmt.value)}`);
      case 'ObjectInsertOnce':
        return this.line(
          depth,
          `ObjectInsertOnce ${local(stmt.object)}[${o(stmt.key)}] <- ${o(stmt.value)}  conflict ${JSON.stringify(stmt.message)}`,
        );
      case 'SetAdd':
        return this.line(depth, `SetAdd ${local(stmt.set)} <- ${o(stmt.value)}`);
      case 'ResultSetAdd':
        return this.line(depth, `ResultSetAdd ${local(stmt.value)}`);
    }
  }

  /** `l3`, or `c2 "text"` with short constant texts shown inline. */
  private operand(operand: Operand): string {
    if ('local' in operand) return local(operand.local);
    const text = this.consts[operand.const];
    if (text === undefined) return `c${operand.const} <missing>`;
    return text.length <= INLINE_CONST_LENGTH ? `c${operand.const} ${text}` : `c${operand.const}`;
  }

  private line(depth: number, text: string): void {
    this.lines.push('  '.repeat(depth) + text);
  }
}

function local(index: number): string {
  return `l${index}`;
}
