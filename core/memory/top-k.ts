/**
 * The k highest-scoring entries of a stream, kept in a min-heap of size k: O(n log k) instead of
 * sorting every candidate of a 100k-item search.
 */
export interface Scored {
  doc: number;
  score: number;
}

export class TopK {
  private readonly heap: Scored[] = [];

  constructor(private readonly k: number) {}

  offer(doc: number, score: number): void {
    const heap = this.heap;
    if (heap.length < this.k) {
      heap.push({ doc, score });
      this.up(heap.length - 1);
    } else if (this.k > 0 && score > heap[0]!.score) {
      heap[0] = { doc, score };
      this.down(0);
    }
  }

  /** A score that cannot enter any more (the k-th best so far), or -Infinity while not full. */
  get floor(): number {
    return this.k > 0 && this.heap.length === this.k ? this.heap[0]!.score : this.k > 0 ? -Infinity : Infinity;
  }

  /** Whether k entries are held (a new one must beat `floor`). */
  get full(): boolean {
    return this.heap.length >= this.k;
  }

  /** Best first; ties broken by document number so results are deterministic. */
  sorted(): Scored[] {
    return [...this.heap].sort((a, b) => b.score - a.score || a.doc - b.doc);
  }

  private up(i: number): void {
    const heap = this.heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.score <= heap[i]!.score) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  private down(i: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && heap[left]!.score < heap[smallest]!.score) smallest = left;
      if (right < heap.length && heap[right]!.score < heap[smallest]!.score) smallest = right;
      if (smallest === i) return;
      [heap[smallest], heap[i]] = [heap[i]!, heap[smallest]!];
      i = smallest;
    }
  }
}
