// The OPA heap: a single bump pointer over the imported memory.
//
// The host resets the pointer between evaluations (`opa_heap_ptr_set`), which frees everything
// an evaluation allocated at once. AssemblyScript's own objects are allocated here too (see
// rt/bump-runtime.ts), so nothing ever needs to be freed individually.

import { abortWithMessage } from "./abort";

// @ts-ignore: decorator
@inline const ALIGN_MASK: usize = 7;

/** Next free byte. Not necessarily aligned: the host may set it to any address. */
let top: usize = (__heap_base + ALIGN_MASK) & ~ALIGN_MASK;

/** Cached end of memory; memory only grows, so a stale value is merely too small. */
let limit: usize = 0;

export function heapTop(): usize {
  return top;
}

/**
 * Counts heap resets, so that a cache of heap objects (compiled regular expressions) can tell
 * that they are gone: everything on the heap belongs to the evaluation that allocated it.
 */
export let heapEpoch: u32 = 0;

export function heapReset(ptr: usize): void {
  top = ptr;
  heapEpoch++;
}

/** Allocates `size` bytes aligned to 8. The memory is not zeroed. */
// @ts-ignore: decorator
@inline
export function alloc(size: usize): usize {
  const ptr = (top + ALIGN_MASK) & ~ALIGN_MASK;
  const end = ptr + size;
  if (end > limit) ensureMemory(end);
  top = end;
  return ptr;
}

/**
 * Grows the block at `ptr` from `oldSize` to `newSize` bytes in place when it is the most recent
 * allocation; returns false (and changes nothing) otherwise.
 */
export function extendInPlace(ptr: usize, oldSize: usize, newSize: usize): bool {
  if (ptr + oldSize != top) return false;
  const end = ptr + newSize;
  if (end > limit) ensureMemory(end);
  top = end;
  return true;
}

/** Resizes a block, in place when possible, else by copying it to a new one. */
export function realloc(ptr: usize, oldSize: usize, newSize: usize): usize {
  if (extendInPlace(ptr, oldSize, newSize)) return ptr;
  const fresh = alloc(newSize);
  memory.copy(fresh, ptr, min(oldSize, newSize));
  return fresh;
}

/**
 * Copies n bytes (regions must not overlap). Short copies are done inline: V8 compiles
 * `memory.copy` to a call into the engine, which costs more than copying a few bytes.
 */
// @ts-ignore: decorator
@inline
export function copyBytes(dst: usize, src: usize, n: usize): void {
  if (n <= 16) {
    for (let i: usize = 0; i < n; i++) store<u8>(dst + i, load<u8>(src + i));
  } else {
    memory.copy(dst, src, n);
  }
}

// Kept out of line: the common path of `alloc` is a compare and an add.
function ensureMemory(end: usize): void {
  let bytes = <usize>memory.size() << 16;
  if (end > bytes) {
    const needed = <i32>((end - bytes + 0xffff) >>> 16);
    // Grow by at least the current size, so a growing heap costs few grow calls.
    const current = memory.size();
    if (memory.grow(max(needed, current)) < 0 && memory.grow(needed) < 0) {
      abortWithMessage("out of memory");
    }
    bytes = <usize>memory.size() << 16;
  }
  limit = bytes;
}
