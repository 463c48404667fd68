/**
 * Fixed-length vectors stored as rows in blocks of about a megabyte each, rather than in one
 * contiguous Float32Array. A contiguous matrix doubles by copying: at 131,072 rows of 100
 * dimensions that allocated 100 MB and copied 50 MB in one event-loop turn, which with the
 * garbage collection it set off held every request for 170–210 ms (the decisions bench, recording
 * decisions into memory). Here a new row past the last block costs one block's allocation, and
 * nothing already stored moves.
 *
 * A row is read where it lies: `block(row)` holds it from `base(row)` for `dimensions` floats,
 * which is what the dot products of core/memory/similarity.ts take, so a scan allocates nothing.
 */
const BLOCK_BYTES = 1 << 20;

export class VectorRows {
  /** Rows per block: a power of two, so a row's block and offset are a shift and a mask. */
  private readonly shift: number;
  private readonly mask: number;
  private readonly blocks: Float32Array[] = [];

  constructor(readonly dimensions: number) {
    this.shift = Math.max(0, Math.floor(Math.log2(BLOCK_BYTES / (4 * dimensions))));
    this.mask = (1 << this.shift) - 1;
  }

  /** Rows each block holds. */
  get rowsPerBlock(): number {
    return 1 << this.shift;
  }

  /** The block holding `row`: its floats start at `base(row)`. */
  block(row: number): Float32Array {
    return this.blocks[row >>> this.shift]!;
  }

  /** Where `row` starts in its block. */
  base(row: number): number {
    return (row & this.mask) * this.dimensions;
  }

  /**
   * Stores the `dimensions` floats of `vector` from `offset` on (a vector of its own, or a row of
   * another block) as `row`, adding blocks up to the one that holds it.
   */
  set(row: number, vector: Float32Array, offset = 0): void {
    while (this.blocks.length <= row >>> this.shift) this.blocks.push(new Float32Array(this.rowsPerBlock * this.dimensions));
    const block = this.block(row);
    const base = this.base(row);
    for (let i = 0; i < this.dimensions; i++) block[base + i] = vector[offset + i]!;
  }
}
