// Compiles a parsed expression to a program for the Pike VM (machine.ts), as Go's regexp/syntax
// does: repetitions `x{n,m}` are expanded to copies of x (Go's `Simplify`), and a star over an
// expression that can match empty is compiled as `(x+)?`, which keeps the priority of the
// alternatives right (Go's compiler does the same).

import {
  Node, Syntax, OP_EMPTY, OP_CHARS, OP_ASSERT, OP_CAPTURE, OP_CONCAT, OP_ALTERNATE, OP_STAR,
  OP_PLUS, OP_QUEST, OP_REPEAT, EMPTY_BEGIN_TEXT,
} from "./syntax";

// Instructions: four i32 each, [op, out, arg, arg2].
export const INST_CHARS: i32 = 0; // consume a code point within ranges [arg, arg + 2 * arg2) of `ranges`
export const INST_MATCH: i32 = 1;
export const INST_SPLIT: i32 = 2; // continue at out, then (lower priority) at arg
export const INST_JUMP: i32 = 3; // continue at out
export const INST_SAVE: i32 = 4; // record the position in capture slot arg
export const INST_ASSERT: i32 = 5; // continue if the assertion bits in arg hold here

/** A compiled expression. */
export class Program {
  insts: Array<i32> = new Array<i32>();
  /** The classes' ranges, flat [lo, hi] pairs. */
  ranges: Array<i32> = new Array<i32>();
  /** Whether every match must start at the beginning of the text (`^` or `\A` first). */
  anchored: bool = false;

  get length(): i32 {
    return this.insts.length >> 2;
  }

  emit(op: i32, out: i32, arg: i32, arg2: i32): i32 {
    const pc = this.length;
    this.insts.push(op);
    this.insts.push(out);
    this.insts.push(arg);
    this.insts.push(arg2);
    return pc;
  }

  setOut(pc: i32, out: i32): void {
    this.insts[pc << 2 | 1] = out;
  }

  setArg(pc: i32, arg: i32): void {
    this.insts[pc << 2 | 2] = arg;
  }
}

/** The program of a parsed pattern; it starts at instruction 0. */
export function compile(syntax: Syntax): Program {
  const prog = new Program();
  emitNode(prog, syntax.root);
  prog.emit(INST_MATCH, 0, 0, 0);
  prog.anchored = startsAnchored(prog);
  return prog;
}

/** Emits code for `node` whose continuation is the instruction emitted next. */
function emitNode(prog: Program, node: Node): void {
  switch (node.op) {
    case OP_EMPTY:
      return;
    case OP_CHARS: {
      // The copies of a repeated class share one set of ranges: `\pL{1000}` holds its ranges once.
      const ranges = node.chars!.ranges;
      if (node.rangesAt < 0) {
        node.rangesAt = prog.ranges.length;
        for (let i = 0; i < ranges.length; i++) prog.ranges.push(ranges[i]);
      }
      prog.emit(INST_CHARS, prog.length + 1, node.rangesAt, ranges.length >> 1);
      return;
    }
    case OP_ASSERT:
      prog.emit(INST_ASSERT, prog.length + 1, node.assertion, 0);
      return;
    case OP_CAPTURE:
      prog.emit(INST_SAVE, prog.length + 1, node.cap * 2, 0);
      emitNode(prog, node.subs[0]);
      prog.emit(INST_SAVE, prog.length + 1, node.cap * 2 + 1, 0);
      return;
    case OP_CONCAT:
      for (let i = 0; i < node.subs.length; i++) emitNode(prog, node.subs[i]);
      return;
    case OP_ALTERNATE:
      emitAlternate(prog, node.subs);
      return;
    case OP_STAR:
      if (node.subs[0].nullable()) {
        emitQuest(prog, node.subs[0], node.greedy, true);
      } else {
        emitStar(prog, node.subs[0], node.greedy);
      }
      return;
    case OP_PLUS:
      emitPlus(prog, node.subs[0], node.greedy);
      return;
    case OP_QUEST:
      emitQuest(prog, node.subs[0], node.greedy, false);
      return;
    case OP_REPEAT:
      emitRepeat(prog, node);
      return;
  }
}

function emitAlternate(prog: Program, subs: Array<Node>): void {
  const jumps = new Array<i32>();
  for (let i = 0; i < subs.length - 1; i++) {
    const split = prog.emit(INST_SPLIT, prog.length + 1, 0, 0);
    emitNode(prog, subs[i]);
    jumps.push(prog.emit(INST_JUMP, 0, 0, 0));
    prog.setArg(split, prog.length);
  }
  emitNode(prog, subs[subs.length - 1]);
  for (let i = 0; i < jumps.length; i++) prog.setOut(jumps[i], prog.length);
}

/** A split preferring `first` when greedy, `second` otherwise. */
function setSplit(prog: Program, split: i32, first: i32, second: i32, greedy: bool): void {
  prog.setOut(split, greedy ? first : second);
  prog.setArg(split, greedy ? second : first);
}

function emitStar(prog: Program, sub: Node, greedy: bool): void {
  const split = prog.emit(INST_SPLIT, 0, 0, 0);
  emitNode(prog, sub);
  prog.emit(INST_JUMP, split, 0, 0);
  setSplit(prog, split, split + 1, prog.length, greedy);
}

function emitPlus(prog: Program, sub: Node, greedy: bool): void {
  const start = prog.length;
  emitNode(prog, sub);
  const split = prog.emit(INST_SPLIT, 0, 0, 0);
  setSplit(prog, split, start, split + 1, greedy);
}

/** `x?`, or `(x+)?` when `plus`. */
function emitQuest(prog: Program, sub: Node, greedy: bool, plus: bool): void {
  const split = prog.emit(INST_SPLIT, 0, 0, 0);
  if (plus) emitPlus(prog, sub, greedy);
  else emitNode(prog, sub);
  setSplit(prog, split, split + 1, prog.length, greedy);
}

/** `x{n,m}` as Go's Simplify writes it: n copies, then `x+` or nested `(x(x)?)?`. */
function emitRepeat(prog: Program, node: Node): void {
  const sub = node.subs[0];
  const min = node.min;
  const max = node.max;
  if (max == -1) {
    for (let i = 0; i < min - 1; i++) emitNode(prog, sub);
    if (min == 0) {
      const star = Node.withSub(OP_STAR, sub);
      star.greedy = node.greedy;
      emitNode(prog, star);
    } else {
      emitPlus(prog, sub, node.greedy);
    }
    return;
  }
  for (let i = 0; i < min; i++) emitNode(prog, sub);
  // The optional copies nest: each split's skip target is the end of all of them.
  const splits = new Array<i32>();
  for (let i = min; i < max; i++) {
    splits.push(prog.emit(INST_SPLIT, 0, 0, 0));
    emitNode(prog, sub);
  }
  const end = prog.length;
  for (let i = 0; i < splits.length; i++) setSplit(prog, splits[i], splits[i] + 1, end, node.greedy);
}

/** Whether the program can only match at the start of the text (it begins with `\A`). */
function startsAnchored(prog: Program): bool {
  let pc = 0;
  while (true) {
    const op = prog.insts[pc << 2];
    if (op == INST_SAVE || op == INST_JUMP) {
      pc = prog.insts[pc << 2 | 1];
      continue;
    }
    return op == INST_ASSERT && (prog.insts[pc << 2 | 2] & EMPTY_BEGIN_TEXT) != 0;
  }
}
