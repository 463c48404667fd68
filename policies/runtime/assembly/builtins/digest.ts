// The one driver of every hash the builtins use: MD5 (RFC 1321), SHA-1, SHA-256, SHA-384 and
// SHA-512 (FIPS 180-4) differ only in their block and state size, compression function, initial
// state and byte order; padding, buffering and output are the same steps. One digest is computed
// at a time, in static memory, so hashing allocates nothing.

import { MD5_INITIAL, md5Block } from "./md5";
import { SHA1_INITIAL, sha1Block } from "./sha1";
import { SHA256_INITIAL, SHA384_INITIAL, SHA512_INITIAL, sha256Block, sha512Block } from "./sha2";

/** The algorithms, numbered so that those of 128-byte blocks come last. */
export const enum Hash {
  MD5,
  SHA1,
  SHA256,
  SHA384,
  SHA512,
}

/** The largest digest (SHA-512's) and block (SHA-384's and SHA-512's), in bytes. */
export const MAX_DIGEST_SIZE: i32 = 64;
export const MAX_BLOCK_SIZE: i32 = 128;

/** The chaining state: up to eight 64-bit words. */
const STATE = memory.data(64, 8);
/** The bytes of a block not yet complete. */
const PENDING = memory.data(MAX_BLOCK_SIZE, 8);

let algorithm = Hash.MD5;
let pending: i32 = 0;
let total: u64 = 0;

/** The bytes an algorithm hashes at a time: 128 for SHA-384 and SHA-512, 64 for the others. */
export function blockSize(alg: Hash): i32 {
  return alg >= Hash.SHA384 ? 128 : 64;
}

/** The bytes of an algorithm's digest. */
export function digestSize(alg: Hash): i32 {
  switch (alg) {
    case Hash.MD5: return 16;
    case Hash.SHA1: return 20;
    case Hash.SHA256: return 32;
    case Hash.SHA384: return 48;
  }
  return 64;
}

function compress(block: usize): void {
  switch (algorithm) {
    case Hash.MD5: md5Block(STATE, block); break;
    case Hash.SHA1: sha1Block(STATE, block); break;
    case Hash.SHA256: sha256Block(STATE, block); break;
    default: sha512Block(STATE, block);
  }
}

/** Starts a digest with algorithm `alg`, forgetting any other in progress. */
export function digestBegin(alg: Hash): void {
  algorithm = alg;
  pending = 0;
  total = 0;
  switch (alg) {
    case Hash.MD5: memory.copy(STATE, MD5_INITIAL, 16); break;
    case Hash.SHA1: memory.copy(STATE, SHA1_INITIAL, 20); break;
    case Hash.SHA256: memory.copy(STATE, SHA256_INITIAL, 32); break;
    case Hash.SHA384: memory.copy(STATE, SHA384_INITIAL, 64); break;
    default: memory.copy(STATE, SHA512_INITIAL, 64);
  }
}

/** Hashes `len` more bytes at `p`. */
export function digestUpdate(p: usize, len: i32): void {
  const size = blockSize(algorithm);
  total += <u64>len;
  let i = 0;
  if (pending > 0) {
    i = min(size - pending, len);
    memory.copy(PENDING + <usize>pending, p, <usize>i);
    pending += i;
    if (pending < size) return;
    compress(PENDING);
    pending = 0;
  }
  for (; i + size <= len; i += size) compress(p + <usize>i);
  if (i < len) {
    pending = len - i;
    memory.copy(PENDING, p + <usize>i, <usize>pending);
  }
}

/**
 * Pads the message (a 1 bit, zeros, and its length in bits in the last 8 or 16 bytes of a block),
 * writes the digest to `out` and returns its size.
 */
export function digestFinish(out: usize): i32 {
  const size = blockSize(algorithm);
  const lengthAt = size - (size >> 3);
  store<u8>(PENDING + <usize>pending, 0x80);
  pending++;
  if (pending > lengthAt) {
    memory.fill(PENDING + <usize>pending, 0, <usize>(size - pending));
    compress(PENDING);
    pending = 0;
  }
  memory.fill(PENDING + <usize>pending, 0, <usize>(size - pending));
  const bits = total << 3;
  if (algorithm == Hash.MD5) {
    store<u64>(PENDING + <usize>(size - 8), bits);
  } else {
    store<u64>(PENDING + <usize>(size - 8), bswap<u64>(bits));
    if (size == 128) store<u64>(PENDING + <usize>(size - 16), bswap<u64>(total >> 61));
  }
  compress(PENDING);
  const n = digestSize(algorithm);
  if (algorithm == Hash.MD5) {
    memory.copy(out, STATE, <usize>n);
  } else if (size == 64) {
    for (let i = 0; i < n; i += 4) store<u32>(out + <usize>i, bswap<u32>(load<u32>(STATE + <usize>i)));
  } else {
    for (let i = 0; i < n; i += 8) store<u64>(out + <usize>i, bswap<u64>(load<u64>(STATE + <usize>i)));
  }
  return n;
}
