// The compression functions of SHA-256 and of SHA-384/SHA-512 (FIPS 180-4, sections 6.2.2 and
// 6.4.2): one block into the eight-word state, words big-endian.

/** The message schedule W of the block being mixed: 80 words of up to 8 bytes (SHA-1's too). */
export const SCHEDULE = memory.data(80 * 8, 8);

/** SHA-256's H(0) (section 5.3.3). */
export const SHA256_INITIAL = memory.data<u32>([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

/** SHA-384's H(0) (section 5.3.4). */
export const SHA384_INITIAL = memory.data<u64>([
  0xcbbb9d5dc1059ed8, 0x629a292a367cd507, 0x9159015a3070dd17, 0x152fecd8f70e5939,
  0x67332667ffc00b31, 0x8eb44a8768581511, 0xdb0c2e0d64f98fa7, 0x47b5481dbefa4fa4,
]);

/** SHA-512's H(0) (section 5.3.5). */
export const SHA512_INITIAL = memory.data<u64>([
  0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
  0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
]);

/** SHA-256's K (section 4.2.2): the cube roots of the first 64 primes, 32 bits of fraction. */
const K256 = memory.data<u32>([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-512's K (section 4.2.3): the cube roots of the first 80 primes, 64 bits of fraction. */
const K512 = memory.data<u64>([
  0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc,
  0x3956c25bf348b538, 0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118,
  0xd807aa98a3030242, 0x12835b0145706fbe, 0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2,
  0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235, 0xc19bf174cf692694,
  0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
  0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5,
  0x983e5152ee66dfab, 0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4,
  0xc6e00bf33da88fc2, 0xd5a79147930aa725, 0x06ca6351e003826f, 0x142929670a0e6e70,
  0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed, 0x53380d139d95b3df,
  0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
  0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30,
  0xd192e819d6ef5218, 0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8,
  0x19a4c116b8d2d0c8, 0x1e376c085141ab53, 0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8,
  0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373, 0x682e6ff3d6b2b8a3,
  0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
  0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b,
  0xca273eceea26619c, 0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178,
  0x06f067aa72176fba, 0x0a637dc5a2c898a6, 0x113f9804bef90dae, 0x1b710b35131c471b,
  0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc, 0x431d67c49c100d4c,
  0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
]);

/**
 * The rotations and shifts of Σ0, Σ1, σ0 and σ1 (sections 4.1.2 and 4.1.3): three for each, the
 * last of the σ functions a right shift.
 */
const ROTATIONS_256 = memory.data<u8>([2, 13, 22, 6, 11, 25, 7, 18, 3, 17, 19, 10]);
const ROTATIONS_512 = memory.data<u8>([28, 34, 39, 14, 18, 41, 1, 8, 7, 19, 61, 6]);

/** Mixes the 64 bytes at `block` into the SHA-256 state at `state`. */
export function sha256Block(state: usize, block: usize): void {
  sha2Block<u32>(state, block, K256, 64, ROTATIONS_256);
}

/** Mixes the 128 bytes at `block` into the SHA-384 or SHA-512 state at `state`. */
export function sha512Block(state: usize, block: usize): void {
  sha2Block<u64>(state, block, K512, 80, ROTATIONS_512);
}

// @ts-ignore: decorator
@inline
function rotation<T>(rotations: usize, i: i32): T {
  return <T>load<u8>(rotations + <usize>i);
}

/**
 * SHA-256 and SHA-512 are one algorithm over words of 32 or 64 bits (T), with their own constants,
 * round count and rotations.
 */
// @ts-ignore: decorator
@inline
function sha2Block<T>(state: usize, block: usize, k: usize, rounds: i32, r: usize): void {
  const size = sizeof<T>();
  const w = SCHEDULE;
  for (let t = 0; t < 16; t++) store<T>(w + <usize>t * size, bswap<T>(load<T>(block + <usize>t * size)));
  for (let t = 16; t < rounds; t++) {
    const at = w + <usize>t * size;
    const w2 = load<T>(at - 2 * size);
    const w15 = load<T>(at - 15 * size);
    const s0 = rotr<T>(w15, rotation<T>(r, 6)) ^ rotr<T>(w15, rotation<T>(r, 7)) ^ (w15 >> rotation<T>(r, 8));
    const s1 = rotr<T>(w2, rotation<T>(r, 9)) ^ rotr<T>(w2, rotation<T>(r, 10)) ^ (w2 >> rotation<T>(r, 11));
    store<T>(at, s1 + load<T>(at - 7 * size) + s0 + load<T>(at - 16 * size));
  }
  let a = load<T>(state);
  let b = load<T>(state + size);
  let c = load<T>(state + 2 * size);
  let d = load<T>(state + 3 * size);
  let e = load<T>(state + 4 * size);
  let f = load<T>(state + 5 * size);
  let g = load<T>(state + 6 * size);
  let h = load<T>(state + 7 * size);
  for (let t = 0; t < rounds; t++) {
    const sum1 = rotr<T>(e, rotation<T>(r, 3)) ^ rotr<T>(e, rotation<T>(r, 4)) ^ rotr<T>(e, rotation<T>(r, 5));
    const ch = (e & f) ^ (~e & g);
    const t1 = h + sum1 + ch + load<T>(k + <usize>t * size) + load<T>(w + <usize>t * size);
    const sum0 = rotr<T>(a, rotation<T>(r, 0)) ^ rotr<T>(a, rotation<T>(r, 1)) ^ rotr<T>(a, rotation<T>(r, 2));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + sum0 + maj;
  }
  store<T>(state, load<T>(state) + a);
  store<T>(state + size, load<T>(state + size) + b);
  store<T>(state + 2 * size, load<T>(state + 2 * size) + c);
  store<T>(state + 3 * size, load<T>(state + 3 * size) + d);
  store<T>(state + 4 * size, load<T>(state + 4 * size) + e);
  store<T>(state + 5 * size, load<T>(state + 5 * size) + f);
  store<T>(state + 6 * size, load<T>(state + 6 * size) + g);
  store<T>(state + 7 * size, load<T>(state + 7 * size) + h);
}
