// The Pike VM: runs a program over UTF-8 text in one pass, holding at most one thread per
// instruction, so a search takes time linear in the text (times the program's size) whatever the
// pattern. Threads are kept in priority order and a match cuts off the threads below it, which
// gives Go's leftmost-first matches and submatches. An invalid byte of the text reads as U+FFFD
// of width 1, as in Go.

import { alloc } from "../heap";
import { decodeLastRune, decodeRune, runeSize } from "../builtins/utf8";
import { rangesContain } from "./rune-class";
import { Program, INST_CHARS, INST_MATCH, INST_SPLIT, INST_JUMP, INST_SAVE, INST_ASSERT } from "./program";
import {
  EMPTY_BEGIN_LINE, EMPTY_END_LINE, EMPTY_BEGIN_TEXT, EMPTY_END_TEXT, EMPTY_WORD_BOUNDARY,
  EMPTY_NO_WORD_BOUNDARY,
} from "./syntax";

/** A set of threads in priority order: a sparse set of instructions, each with its capture slots. */
class Queue {
  sparse: usize;
  dense: usize;
  caps: usize;
  size: i32 = 0;

  constructor(n: i32, slots: i32) {
    this.sparse = alloc(<usize>n << 2);
    this.dense = alloc(<usize>n << 2);
    this.caps = alloc(<usize>(n * slots) << 2);
  }

  has(pc: i32): bool {
    const j = load<i32>(this.sparse + (<usize>pc << 2));
    return <u32>j < <u32>this.size && load<i32>(this.dense + (<usize>j << 2)) == pc;
  }

  /** Adds pc; returns its entry index. */
  add(pc: i32): i32 {
    const j = this.size++;
    store<i32>(this.sparse + (<usize>pc << 2), j);
    store<i32>(this.dense + (<usize>j << 2), pc);
    return j;
  }

  pcAt(j: i32): i32 {
    return load<i32>(this.dense + (<usize>j << 2));
  }
}

// @ts-ignore: decorator
@inline
function isWordChar(r: i32): bool {
  return (r >= 0x30 && r <= 0x39) || (r >= 0x41 && r <= 0x5a) || (r >= 0x61 && r <= 0x7a) || r == 0x5f;
}

/**
 * A Pike VM for one program, tracking `slots` capture positions (2 per group, the whole match
 * first; 0 when only whether there is a match matters). Its memory is allocated once and reused
 * by every search.
 */
export class Machine {
  private clist: Queue;
  private nlist: Queue;
  /** The capture slots of the thread being followed. */
  private working: usize;
  /** Pending work of `addThread`: pairs (pc, 0) to visit or (-1 - slot, position) to restore. */
  private stack: usize;
  /** The slots of the match found by the last `search`. */
  readonly matched: usize;
  private text: usize = 0;
  private len: i32 = 0;

  constructor(private prog: Program, readonly slots: i32) {
    const n = prog.length;
    this.clist = new Queue(n, slots);
    this.nlist = new Queue(n, slots);
    this.working = alloc(<usize>max(slots, 1) << 2);
    // Every instruction is visited once per closure; each visit pushes at most one restore and
    // two instructions.
    this.stack = alloc(<usize>(3 * n + 2) << 3);
    this.matched = alloc(<usize>max(slots, 1) << 2);
  }

  /** Capture slot `i` of the last match: a byte offset, or -1 for a group that did not take part. */
  slot(i: i32): i32 {
    return load<i32>(this.matched + (<usize>i << 2));
  }

  /**
   * Searches `text` (`len` bytes) for the leftmost-first match starting at or after byte `from`;
   * the text before `from` still counts for `^`, `\b` and the like. Sets the match's slots.
   */
  search(text: usize, len: i32, from: i32): bool {
    this.text = text;
    this.len = len;
    const prog = this.prog;
    const insts = prog.insts.dataStart;
    const ranges = prog.ranges.dataStart;
    const slots = this.slots;
    let found = false;
    this.clist.size = 0;
    let pos = from;
    while (true) {
      if (this.clist.size == 0 && (found || (prog.anchored && pos > 0))) break;
      if (!found && (!prog.anchored || pos == 0)) {
        for (let i = 0; i < slots; i++) store<i32>(this.working + (<usize>i << 2), -1);
        this.addThread(this.clist, 0, pos, this.assertionsAt(pos));
      }
      let r = -1;
      let width = 0;
      if (pos < len) {
        r = decodeRune(text + <usize>pos, text + <usize>len);
        width = runeSize;
      }
      const next = pos + width;
      let nextAssertions = -1;
      const clist = this.clist;
      const nlist = this.nlist;
      nlist.size = 0;
      for (let j = 0; j < clist.size; j++) {
        const pc = clist.pcAt(j);
        const inst = insts + (<usize>pc << 4);
        const op = load<i32>(inst);
        const threadCaps = clist.caps + (<usize>(j * slots) << 2);
        if (op == INST_MATCH) {
          memory.copy(this.matched, threadCaps, <usize>slots << 2);
          found = true;
          if (slots == 0) return true;
          break; // threads after this one have lower priority
        }
        if (r < 0 || !rangesContain(ranges + (<usize>load<i32>(inst, 8) << 2), load<i32>(inst, 12), r)) continue;
        if (nextAssertions < 0) nextAssertions = this.assertionsAt(next);
        memory.copy(this.working, threadCaps, <usize>slots << 2);
        this.addThread(nlist, load<i32>(inst, 4), next, nextAssertions);
      }
      this.clist = nlist;
      this.nlist = clist;
      if (pos >= len) break;
      pos = next;
    }
    return found;
  }

  /** The assertions that hold at byte `pos`, from the code points on either side. */
  private assertionsAt(pos: i32): i32 {
    const text = this.text;
    const len = this.len;
    const before = pos > 0 ? decodeLastRune(text, text + <usize>pos) : -1;
    const after = pos < len ? decodeRune(text + <usize>pos, text + <usize>len) : -1;
    let bits = 0;
    if (pos == 0) bits |= EMPTY_BEGIN_TEXT | EMPTY_BEGIN_LINE;
    else if (before == 0x0a) bits |= EMPTY_BEGIN_LINE;
    if (pos == len) bits |= EMPTY_END_TEXT | EMPTY_END_LINE;
    else if (after == 0x0a) bits |= EMPTY_END_LINE;
    bits |= isWordChar(before) != isWordChar(after) ? EMPTY_WORD_BOUNDARY : EMPTY_NO_WORD_BOUNDARY;
    return bits;
  }

  /**
   * Adds the thread at `pc0` (with the working capture slots) to `q`, following jumps, splits,
   * saves and assertions in priority order; instructions already in `q` are not added again.
   */
  private addThread(q: Queue, pc0: i32, pos: i32, assertions: i32): void {
    const insts = this.prog.insts.dataStart;
    const slots = this.slots;
    const working = this.working;
    let top = this.stack;
    store<i32>(top, pc0);
    top += 8;
    while (top > this.stack) {
      top -= 8;
      const pc = load<i32>(top);
      if (pc < 0) {
        store<i32>(working + (<usize>(-1 - pc) << 2), load<i32>(top, 4));
        continue;
      }
      if (q.has(pc)) continue;
      const j = q.add(pc);
      const inst = insts + (<usize>pc << 4);
      const op = load<i32>(inst);
      if (op == INST_CHARS || op == INST_MATCH) {
        memory.copy(q.caps + (<usize>(j * slots) << 2), working, <usize>slots << 2);
      } else if (op == INST_JUMP) {
        store<i32>(top, load<i32>(inst, 4));
        top += 8;
      } else if (op == INST_SPLIT) {
        store<i32>(top, load<i32>(inst, 8));
        store<i32>(top, load<i32>(inst, 4), 8);
        top += 16;
      } else if (op == INST_SAVE) {
        const slot = load<i32>(inst, 8);
        if (slot < slots) {
          const at = working + (<usize>slot << 2);
          store<i32>(top, -1 - slot);
          store<i32>(top, load<i32>(at), 4);
          top += 8;
          store<i32>(at, pos);
        }
        store<i32>(top, load<i32>(inst, 4));
        top += 8;
      } else if (op == INST_ASSERT) {
        if ((load<i32>(inst, 8) & ~assertions) == 0) {
          store<i32>(top, load<i32>(inst, 4));
          top += 8;
        }
      }
    }
  }
}
