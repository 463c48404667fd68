// AssemblyScript's runtime interface implemented on the OPA heap (../heap.ts), so that the
// standard library's objects share the bump allocator the host resets between evaluations.
// Nothing is collected or freed: everything goes when the heap is reset. Objects keep the
// standard header layout (rtId and rtSize just before the payload), which the standard library
// reads.

import { alloc, extendInPlace } from "../heap";

// Block size word + object header (gcInfo, gcInfo2, rtId, rtSize): the payload is 8-aligned.
// @ts-ignore: decorator
@inline const HEADER: usize = 24;

// @ts-ignore: decorator
@unsafe @global
function __alloc(size: usize): usize {
  const block = alloc(size + 8);
  store<usize>(block, size, 4);
  return block + 8;
}

// @ts-ignore: decorator
@unsafe @global
function __realloc(ptr: usize, size: usize): usize {
  const old = load<usize>(ptr - 4);
  if (size <= old || extendInPlace(ptr, old, size)) {
    store<usize>(ptr - 4, max(old, size));
    return ptr;
  }
  const fresh = __alloc(size);
  memory.copy(fresh, ptr, old);
  return fresh;
}

// @ts-ignore: decorator
@unsafe @global
function __free(ptr: usize): void {}

// @ts-ignore: decorator
@unsafe @global
function __reset(): void {}

// @ts-ignore: decorator
@unsafe @global
function __new(size: usize, id: u32): usize {
  const payload = alloc(size + HEADER) + HEADER;
  store<u32>(payload - 16, 0);
  store<u32>(payload - 12, 0);
  store<u32>(payload - 8, id);
  store<u32>(payload - 4, <u32>size);
  return payload;
}

// @ts-ignore: decorator
@unsafe @global
function __renew(oldPtr: usize, size: usize): usize {
  const oldSize = <usize>load<u32>(oldPtr - 4);
  if (size <= oldSize || extendInPlace(oldPtr, oldSize, size)) {
    store<u32>(oldPtr - 4, <u32>size);
    return oldPtr;
  }
  const fresh = __new(size, load<u32>(oldPtr - 8));
  memory.copy(fresh, oldPtr, oldSize);
  return fresh;
}

// @ts-ignore: decorator
@global @unsafe
function __link(parentPtr: usize, childPtr: usize, expectMultiple: bool): void {}

// @ts-ignore: decorator
@global @unsafe
function __pin(ptr: usize): usize {
  return ptr;
}

// @ts-ignore: decorator
@global @unsafe
function __unpin(ptr: usize): void {}

// @ts-ignore: decorator
@global @unsafe
function __visit(ptr: usize, cookie: u32): void {}

// @ts-ignore: decorator
@global @unsafe
function __collect(): void {}
