/**
 * A list that only grows at its end, held in blocks of 4,096 entries, for memory's per-document
 * columns and posting lists (hundreds of thousands of entries once decisions are recorded).
 *
 * Why not an array: V8 grows a full array by copying it into one half as long again, in one go.
 * Memory's columns grow in lockstep (every decision adds a document to each, and to the posting
 * lists of the words and items every decision shares), so one event-loop turn paid for copying
 * them all: 36 ms at 257,594 documents, 101 ms at 579,629, 167 ms at 869,461, every request
 * waiting (measured adding decision-like items to core/memory/space.ts). A block that fills is
 * left as it is and a new one begun.
 */
const SHIFT = 12;
const BLOCK = 1 << SHIFT;
const MASK = BLOCK - 1;

export class AppendList<T> {
  private readonly blocks: T[][];
  private size: number;

  /**
   * An empty list, or one holding `first`. Most lists stay short (the links to an item only
   * one other item links to), and an array begun empty reserves 17 slots at its first push:
   * built from literals, a list of one entry takes two arrays of one slot.
   */
  constructor(...first: [] | [T]) {
    this.blocks = first.length === 0 ? [] : [[first[0]]];
    this.size = first.length;
  }

  get length(): number {
    return this.size;
  }

  get(index: number): T {
    return this.blocks[index >>> SHIFT]![index & MASK]!;
  }

  set(index: number, value: T): void {
    this.blocks[index >>> SHIFT]![index & MASK] = value;
  }

  /** The last entry, if any. */
  last(): T | undefined {
    return this.size === 0 ? undefined : this.get(this.size - 1);
  }

  push(value: T): void {
    if ((this.size & MASK) === 0) this.blocks.push([value]);
    else this.blocks[this.blocks.length - 1]!.push(value);
    this.size++;
  }

  /** The entries block by block, in order: a loop over every entry without a lookup per entry. */
  chunks(): readonly (readonly T[])[] {
    return this.blocks;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (const block of this.blocks) yield* block;
  }
}
