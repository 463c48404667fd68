// MD5's compression function (RFC 1321, section 3.4): one 64-byte block into the four-word state,
// words little-endian as the specification reads them.

/** The state before the first block: A, B, C, D of section 3.3. */
export const MD5_INITIAL = memory.data<u32>([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]);

/** T[i] = floor(2^32 · |sin(i + 1)|), the additive constant of step i. */
const T = memory.data<u32>([
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
]);

/** The left rotations of the four steps of each round, round by round. */
const SHIFTS = memory.data<u8>([7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21]);

/** Mixes the 64 bytes at `block` into the state at `state`. */
export function md5Block(state: usize, block: usize): void {
  let a = load<u32>(state);
  let b = load<u32>(state, 4);
  let c = load<u32>(state, 8);
  let d = load<u32>(state, 12);
  for (let i = 0; i < 64; i++) {
    const round = i >> 4;
    let f: u32;
    let g: i32;
    if (round == 0) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (round == 1) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) & 15;
    } else if (round == 2) {
      f = b ^ c ^ d;
      g = (3 * i + 5) & 15;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) & 15;
    }
    f += a + load<u32>(T + (<usize>i << 2)) + load<u32>(block + (<usize>g << 2));
    a = d;
    d = c;
    c = b;
    b += rotl<u32>(f, <u32>load<u8>(SHIFTS + <usize>((round << 2) | (i & 3))));
  }
  store<u32>(state, load<u32>(state) + a);
  store<u32>(state, load<u32>(state, 4) + b, 4);
  store<u32>(state, load<u32>(state, 8) + c, 8);
  store<u32>(state, load<u32>(state, 12) + d, 12);
}
