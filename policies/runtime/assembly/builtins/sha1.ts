// SHA-1's compression function (FIPS 180-4, section 6.1.2): one 64-byte block into the five-word
// state, words big-endian.

import { SCHEDULE } from "./sha2";

/** H(0) of section 5.3.1. */
export const SHA1_INITIAL = memory.data<u32>([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0]);

/** Mixes the 64 bytes at `block` into the state at `state`. */
export function sha1Block(state: usize, block: usize): void {
  const w = SCHEDULE;
  for (let t = 0; t < 16; t++) store<u32>(w + (<usize>t << 2), bswap<u32>(load<u32>(block + (<usize>t << 2))));
  for (let t = 16; t < 80; t++) {
    const at = w + (<usize>t << 2);
    store<u32>(at, rotl<u32>(load<u32>(at - 12) ^ load<u32>(at - 32) ^ load<u32>(at - 56) ^ load<u32>(at - 64), 1));
  }
  let a = load<u32>(state);
  let b = load<u32>(state, 4);
  let c = load<u32>(state, 8);
  let d = load<u32>(state, 12);
  let e = load<u32>(state, 16);
  for (let t = 0; t < 80; t++) {
    let f: u32;
    let k: u32;
    if (t < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (t < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (t < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    const temp = rotl<u32>(a, 5) + f + e + k + load<u32>(w + (<usize>t << 2));
    e = d;
    d = c;
    c = rotl<u32>(b, 30);
    b = a;
    a = temp;
  }
  store<u32>(state, load<u32>(state) + a);
  store<u32>(state, load<u32>(state, 4) + b, 4);
  store<u32>(state, load<u32>(state, 8) + c, 8);
  store<u32>(state, load<u32>(state, 12) + d, 12);
  store<u32>(state, load<u32>(state, 16) + e, 16);
}
