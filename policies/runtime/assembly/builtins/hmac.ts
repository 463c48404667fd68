// HMAC (RFC 2104) over the digests of digest.ts, and the constant-time comparison of MACs.

import { Hash, MAX_BLOCK_SIZE, MAX_DIGEST_SIZE, blockSize, digestBegin, digestFinish, digestUpdate } from "./digest";

/** The key padded to a block, XORed with ipad, then with opad. */
const KEY_BLOCK = memory.data(MAX_BLOCK_SIZE, 8);
/** The inner hash H((K ⊕ ipad) ‖ text). */
const INNER = memory.data(MAX_DIGEST_SIZE, 8);

function xorKeyBlock(size: i32, pad: u8): void {
  for (let i = 0; i < size; i++) store<u8>(KEY_BLOCK + <usize>i, load<u8>(KEY_BLOCK + <usize>i) ^ pad);
}

/**
 * Writes HMAC-`alg` of the `len` bytes at `text` under the `keyLen` bytes at `key` to `out` and
 * returns its size. A key longer than a block is hashed first, as RFC 2104 prescribes.
 */
export function hmac(alg: Hash, key: usize, keyLen: i32, text: usize, len: i32, out: usize): i32 {
  const size = blockSize(alg);
  memory.fill(KEY_BLOCK, 0, <usize>size);
  if (keyLen > size) {
    digestBegin(alg);
    digestUpdate(key, keyLen);
    digestFinish(KEY_BLOCK);
  } else {
    memory.copy(KEY_BLOCK, key, <usize>keyLen);
  }
  xorKeyBlock(size, 0x36);
  digestBegin(alg);
  digestUpdate(KEY_BLOCK, size);
  digestUpdate(text, len);
  const n = digestFinish(INNER);
  // ipad ⊕ opad: undoes the first XOR and applies the second.
  xorKeyBlock(size, 0x36 ^ 0x5c);
  digestBegin(alg);
  digestUpdate(KEY_BLOCK, size);
  digestUpdate(INNER, n);
  return digestFinish(out);
}

/**
 * Whether two byte strings are equal, as Go's `hmac.Equal`: false at once for different lengths
 * (the length of a MAC is no secret), otherwise every byte is looked at whatever differs, so the
 * time taken tells nothing of where they differ.
 */
export function constantTimeEqual(a: usize, aLen: i32, b: usize, bLen: i32): bool {
  if (aLen != bLen) return false;
  let difference: u32 = 0;
  for (let i = 0; i < aLen; i++) difference |= <u32>(load<u8>(a + <usize>i) ^ load<u8>(b + <usize>i));
  return difference == 0;
}
