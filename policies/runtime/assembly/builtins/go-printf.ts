// Go's `fmt.Sprintf` over the operand kinds OPA's sprintf passes it: `int` for integers that fit
// in 64 bits, `*big.Int` for larger ones, `float64` for other numbers, and `string` for strings
// and for every other value (already rendered as Rego text). Flags, width, precision, `*`,
// explicit argument indexes and the `%!verb(type=value)` error forms follow Go's `fmt/print.go`
// and `fmt/format.go`; big integers format themselves as `math/big`'s `Int.Format` does.

import { alloc } from "../heap";
import { TextBuffer, piece, records, scratch } from "./text-buffer";
import { appendFloat } from "./go-float";
import { appendQuoted, appendQuotedRune, canBackquote } from "./go-quote";
import { isPrint } from "./printable";
import { byteOffsetOfRune, decodeRune, runeCount, runeSize, MAX_RUNE, RUNE_ERROR } from "./utf8";

const enum OperandKind {
  Int = 0,
  Float = 1,
  Str = 2,
  BigInt = 3,
}

// Operand records: kind:i32 @0, length:i32 @4, pointer or scratch offset:i32 @8, flags:i32 @12,
// number:i64|f64 @16.
const RECORD_SIZE: i32 = 24;
const IN_SCRATCH: i32 = 1;
const NEGATIVE: i32 = 2;

/** Starts a new operand list. */
export function beginOperands(): void {
  records.begin();
}

function addRecord(kind: OperandKind, p: usize, len: i32, flags: i32, bits: i64): void {
  const at = records.reserve(RECORD_SIZE);
  store<i32>(at, kind);
  store<i32>(at, len, 4);
  store<u32>(at, <u32>p, 8);
  store<i32>(at, flags, 12);
  store<i64>(at, bits, 16);
  records.len += RECORD_SIZE;
}

export function addIntOperand(v: i64): void {
  addRecord(OperandKind.Int, 0, 0, 0, v);
}

export function addFloatOperand(v: f64): void {
  addRecord(OperandKind.Float, 0, 0, 0, reinterpret<i64>(v));
}

/** A string operand whose bytes stay where they are until formatting is done. */
export function addStringOperand(p: usize, len: i32): void {
  addRecord(OperandKind.Str, p, len, 0, 0);
}

/** A string operand rendered into `scratch` at `offset` (scratch may move as it grows). */
export function addScratchOperand(offset: i32, len: i32): void {
  addRecord(OperandKind.Str, <usize>offset, len, IN_SCRATCH, 0);
}

/** An integer beyond 64 bits, as its decimal digits (which must stay in place) and its sign. */
export function addBigIntOperand(digits: usize, len: i32, negative: bool): void {
  addRecord(OperandKind.BigInt, digits, len, negative ? NEGATIVE : 0, 0);
}

// The formatter state, as in Go's fmt struct: flags, width and precision of the current verb.
let widPresent = false;
let precPresent = false;
let minus = false;
let plus = false;
let sharp = false;
let space = false;
let zero = false;
let plusV = false;
let sharpV = false;
let wid = 0;
let prec = 0;

function clearFlags(): void {
  widPresent = false;
  precPresent = false;
  minus = false;
  plus = false;
  sharp = false;
  space = false;
  zero = false;
  plusV = false;
  sharpV = false;
  wid = 0;
  prec = 0;
}

// The operand being printed (Go's p.arg).
let operandCount = 0;
let argKind: OperandKind = OperandKind.Int;
let argPtr: usize = 0;
let argLen = 0;
let argBits: i64 = 0;
let argNegative = false;

function loadOperand(index: i32): void {
  const at = records.data + <usize>(index * RECORD_SIZE);
  argKind = load<i32>(at);
  argLen = load<i32>(at, 4);
  argPtr = <usize>load<u32>(at, 8);
  const flags = load<i32>(at, 12);
  if (flags & IN_SCRATCH) argPtr += scratch.data;
  argNegative = (flags & NEGATIVE) != 0;
  argBits = load<i64>(at, 16);
}

function operandKind(index: i32): OperandKind {
  return load<i32>(records.data + <usize>(index * RECORD_SIZE));
}

function typeName(w: TextBuffer): void {
  if (argKind == OperandKind.Int) w.ascii("int");
  else if (argKind == OperandKind.Float) w.ascii("float64");
  else if (argKind == OperandKind.Str) w.ascii("string");
  else w.ascii("*big.Int");
}

// Padding.

function writePadding(w: TextBuffer, n: i32): void {
  w.repeat(zero && !minus ? 0x30 : 0x20, n);
}

/** Writes `len` bytes at `p`, padded to the width (counted in code points). */
function pad(w: TextBuffer, p: usize, len: i32): void {
  if (!widPresent || wid == 0) {
    w.bytes(p, len);
    return;
  }
  const width = wid - runeCount(p, len);
  if (!minus) {
    writePadding(w, width);
    w.bytes(p, len);
  } else {
    w.bytes(p, len);
    writePadding(w, width);
  }
}

/** Pads the bytes of `piece` from `offset` on. */
function padPiece(w: TextBuffer, offset: i32): void {
  pad(w, piece.data + <usize>offset, piece.len - offset);
}

function padWithoutZeros(w: TextBuffer, offset: i32): void {
  const oldZero = zero;
  zero = false;
  padPiece(w, offset);
  zero = oldZero;
}

// Integers.

const DIGITS = memory.data(72);

/** Go's fmt.fmtInteger. */
function formatInteger(w: TextBuffer, u: u64, base: i32, isSigned: bool, verb: i32, upperCase: bool): void {
  const negative = isSigned && <i64>u < 0;
  if (negative) u = 0 - u;

  // Two ways to ask for leading zeros: %.3d and %03d; an explicit precision wins.
  let minDigits = 0;
  if (precPresent) {
    minDigits = prec;
    if (prec == 0 && u == 0) {
      const oldZero = zero;
      zero = false;
      writePadding(w, wid);
      zero = oldZero;
      return;
    }
  } else if (zero && !minus && widPresent) {
    minDigits = wid;
    if (negative || plus || space) minDigits--;
  }

  const letters = upperCase ? 0x41 : 0x61;
  const b = <u64>base;
  let i = 72;
  do {
    const d = <i32>(u % b);
    i--;
    store<u8>(DIGITS + <usize>i, <u8>(d < 10 ? 0x30 + d : letters + d - 10));
    u /= b;
  } while (u != 0);
  const digitCount = 72 - i;

  piece.begin();
  if (negative) piece.byte(0x2d);
  else if (plus) piece.byte(0x2b);
  else if (space) piece.byte(0x20);
  if (verb == 0x4f) piece.ascii("0o");
  const zeros = max(minDigits - digitCount, 0);
  if (sharp) {
    if (base == 2) piece.ascii("0b");
    else if (base == 8 && zeros == 0 && load<u8>(DIGITS + <usize>i) != 0x30) piece.byte(0x30);
    else if (base == 16) piece.ascii(upperCase ? "0X" : "0x");
  }
  piece.repeat(0x30, zeros);
  piece.bytes(DIGITS + <usize>i, digitCount);
  padWithoutZeros(w, 0);
}

/** Go's fmt.fmtUnicode: U+0078, or U+0078 'x' with the sharp flag. */
function formatUnicode(w: TextBuffer, u: u64): void {
  let minDigits = 4;
  if (precPresent && prec > 4) minDigits = prec;
  let i = 72;
  let v = u;
  do {
    const d = <i32>(v & 15);
    i--;
    store<u8>(DIGITS + <usize>i, <u8>(d < 10 ? 0x30 + d : 0x41 + d - 10));
    v >>= 4;
  } while (v != 0);
  const digitCount = 72 - i;
  piece.begin();
  piece.ascii("U+");
  piece.repeat(0x30, minDigits - digitCount);
  piece.bytes(DIGITS + <usize>i, digitCount);
  if (sharp && u <= <u64>MAX_RUNE && isPrint(<i32>u)) {
    piece.ascii(" '");
    piece.rune(<i32>u);
    piece.byte(0x27);
  }
  padWithoutZeros(w, 0);
}

// @ts-ignore: decorator
@inline
function runeOf(u: u64): i32 {
  return u > <u64>MAX_RUNE ? RUNE_ERROR : <i32>u;
}

/** Go's pp.fmtInteger: the verbs an int accepts. */
function printInteger(w: TextBuffer, u: u64, verb: i32): void {
  switch (verb) {
    case 0x76: // v
    case 0x64: // d
      formatInteger(w, u, 10, true, verb, false);
      return;
    case 0x62: // b
      formatInteger(w, u, 2, true, verb, false);
      return;
    case 0x6f: // o
    case 0x4f: // O
      formatInteger(w, u, 8, true, verb, false);
      return;
    case 0x78: // x
      formatInteger(w, u, 16, true, verb, false);
      return;
    case 0x58: // X
      formatInteger(w, u, 16, true, verb, true);
      return;
    case 0x63: // c
      piece.begin();
      piece.rune(runeOf(u));
      padPiece(w, 0);
      return;
    case 0x71: // q
      piece.begin();
      appendQuotedRune(piece, runeOf(u), plus);
      padPiece(w, 0);
      return;
    case 0x55: // U
      formatUnicode(w, u);
      return;
  }
  badVerb(w, verb);
}

// Floats.

/** Go's fmt.fmtFloat: sign, flags and padding around strconv's digits. */
function formatFloat(w: TextBuffer, v: f64, verb: i32, defaultPrec: i32): void {
  const p = precPresent ? prec : defaultPrec;
  piece.begin();
  piece.byte(0x2b);
  appendFloat(piece, v, verb, p);
  // The number starts at `start`, always with a sign character.
  let start = 0;
  const second = load<u8>(piece.data + 1);
  if (second == 0x2d || second == 0x2b) start = 1;
  if (space && load<u8>(piece.data + <usize>start) == 0x2b && !plus) store<u8>(piece.data + <usize>start, 0x20);

  const first = load<u8>(piece.data + <usize>start + 1);
  if (first == 0x49 || first == 0x4e) {
    // Infinities and NaN are never zero padded, and NaN shows a sign only if asked to.
    if (first == 0x4e && !space && !plus) start++;
    padWithoutZeros(w, start);
    return;
  }

  if (sharp && verb != 0x62) keepDecimalPoint(verb, p, start);

  const sign = load<u8>(piece.data + <usize>start);
  const len = piece.len - start;
  if (plus || sign != 0x2b) {
    if (zero && !minus && widPresent && wid > len) {
      // Zero padding goes between the sign and the digits.
      w.byte(sign);
      writePadding(w, wid - len);
      w.bytes(piece.data + <usize>start + 1, len - 1);
      return;
    }
    padPiece(w, start);
    return;
  }
  padPiece(w, start + 1);
}

/** The sharp flag: always print a decimal point and, for %g, keep trailing zeros. */
function keepDecimalPoint(verb: i32, p: i32, start: i32): void {
  let digits = 0;
  if (verb == 0x76 || verb == 0x67 || verb == 0x47 || verb == 0x78) digits = p == -1 ? 6 : p;
  const hex = verb == 0x78 || verb == 0x58;
  let hasDecimalPoint = false;
  let sawNonzeroDigit = false;
  let tailStart = piece.len;
  for (let i = start + 1; i < piece.len; i++) {
    const c = <i32>load<u8>(piece.data + <usize>i);
    if (c == 0x2e) {
      hasDecimalPoint = true;
    } else if (c == 0x70 || c == 0x50 || (!hex && (c == 0x65 || c == 0x45))) {
      tailStart = i;
      break;
    } else {
      if (c != 0x30) sawNonzeroDigit = true;
      if (sawNonzeroDigit) digits--;
    }
  }
  // The exponent tail ("e+06", "p-1022") is at most six bytes.
  const tailLen = piece.len - tailStart;
  piece.reserve(8);
  const tail = load<u64>(piece.data + <usize>tailStart);
  piece.truncate(tailStart);
  if (!hasDecimalPoint) {
    if (tailStart - start == 2 && load<u8>(piece.data + <usize>start + 1) == 0x30) digits--;
    piece.byte(0x2e);
  }
  piece.repeat(0x30, digits);
  const at = piece.reserve(8);
  store<u64>(at, tail);
  piece.len += tailLen;
}

/** Go's pp.fmtFloat: the verbs a float64 accepts. */
function printFloat(w: TextBuffer, v: f64, verb: i32): void {
  switch (verb) {
    case 0x76: // v
      formatFloat(w, v, 0x67, -1);
      return;
    case 0x62: // b
    case 0x67: // g
    case 0x47: // G
    case 0x78: // x
    case 0x58: // X
      formatFloat(w, v, verb, -1);
      return;
    case 0x66: // f
    case 0x65: // e
    case 0x45: // E
      formatFloat(w, v, verb, 6);
      return;
    case 0x46: // F
      formatFloat(w, v, 0x66, 6);
      return;
  }
  badVerb(w, verb);
}

// Strings.

function truncatedLength(p: usize, len: i32): i32 {
  return precPresent ? byteOffsetOfRune(p, len, prec) : len;
}

/** Go's fmt.fmtSbx: hexadecimal encoding of the bytes. */
function formatHexBytes(w: TextBuffer, p: usize, len: i32, upperCase: bool): void {
  let length = len;
  if (precPresent && prec < length) length = prec;
  let width = 2 * length;
  if (width <= 0) {
    if (widPresent) writePadding(w, wid);
    return;
  }
  if (space) {
    if (sharp) width *= 2;
    width += length - 1;
  } else if (sharp) {
    width += 2;
  }
  if (widPresent && wid > width && !minus) writePadding(w, wid - width);
  const letters = upperCase ? 0x41 : 0x61;
  const prefix = upperCase ? 0x58 : 0x78;
  if (sharp) {
    w.byte(0x30);
    w.byte(prefix);
  }
  for (let i = 0; i < length; i++) {
    if (space && i > 0) {
      w.byte(0x20);
      if (sharp) {
        w.byte(0x30);
        w.byte(prefix);
      }
    }
    const c = <i32>load<u8>(p + <usize>i);
    const hi = c >> 4;
    const lo = c & 15;
    w.byte(hi < 10 ? 0x30 + hi : letters + hi - 10);
    w.byte(lo < 10 ? 0x30 + lo : letters + lo - 10);
  }
  if (widPresent && wid > width && minus) writePadding(w, wid - width);
}

/** Go's fmt.fmtQ: a double-quoted Go string, or a raw string for %#q when possible. */
function formatQuoted(w: TextBuffer, p: usize, len: i32): void {
  len = truncatedLength(p, len);
  piece.begin();
  if (sharp && canBackquote(p, len)) {
    piece.byte(0x60);
    piece.bytes(p, len);
    piece.byte(0x60);
  } else {
    appendQuoted(piece, p, len, plus);
  }
  padPiece(w, 0);
}

/** Go's pp.fmtString: the verbs a string accepts. */
function printString(w: TextBuffer, p: usize, len: i32, verb: i32): void {
  switch (verb) {
    case 0x76: // v
      if (sharpV) formatQuoted(w, p, len);
      else pad(w, p, truncatedLength(p, len));
      return;
    case 0x73: // s
      pad(w, p, truncatedLength(p, len));
      return;
    case 0x78: // x
      formatHexBytes(w, p, len, false);
      return;
    case 0x58: // X
      formatHexBytes(w, p, len, true);
      return;
    case 0x71: // q
      formatQuoted(w, p, len);
      return;
  }
  badVerb(w, verb);
}

// Big integers.

/** Appends the magnitude's digits in base 2, 8 or 16, by repeated division of its decimal digits. */
function appendBigDigits(w: TextBuffer, digits: usize, n: i32, base: i32, upperCase: bool): void {
  const work = alloc(<usize>n);
  for (let i = 0; i < n; i++) store<u8>(work + <usize>i, load<u8>(digits + <usize>i) - 0x30);
  const from = w.len;
  const letters = upperCase ? 0x41 : 0x61;
  let first = 0;
  while (first < n && load<u8>(work + <usize>first) == 0) first++;
  while (first < n) {
    let remainder = 0;
    for (let i = first; i < n; i++) {
      const current = remainder * 10 + <i32>load<u8>(work + <usize>i);
      store<u8>(work + <usize>i, <u8>(current / base));
      remainder = current % base;
    }
    w.byte(remainder < 10 ? 0x30 + remainder : letters + remainder - 10);
    while (first < n && load<u8>(work + <usize>first) == 0) first++;
  }
  if (w.len == from) w.byte(0x30);
  // The digits came least significant first.
  for (let i = from, j = w.len - 1; i < j; i++, j--) {
    const t = load<u8>(w.data + <usize>i);
    store<u8>(w.data + <usize>i, load<u8>(w.data + <usize>j));
    store<u8>(w.data + <usize>j, t);
  }
}

/** math/big's Int.Format: sign, base prefix, precision zeros and padding of its own. */
function printBigInt(w: TextBuffer, verb: i32): void {
  let base = 0;
  if (verb == 0x62) base = 2;
  else if (verb == 0x6f || verb == 0x4f) base = 8;
  else if (verb == 0x64 || verb == 0x73 || verb == 0x76) base = 10;
  else if (verb == 0x78 || verb == 0x58) base = 16;
  if (base == 0) {
    w.ascii("%!");
    w.rune(verb);
    w.ascii("(big.Int=");
    if (argNegative) w.byte(0x2d);
    w.bytes(argPtr, argLen);
    w.byte(0x29);
    return;
  }
  piece.begin();
  if (base == 10) piece.bytes(argPtr, argLen);
  else appendBigDigits(piece, argPtr, argLen, base, verb == 0x58);
  const digitCount = piece.len;

  let signLength = 0;
  let sign = 0;
  if (argNegative) sign = 0x2d;
  else if (plus || plusV) sign = 0x2b;
  else if (space) sign = 0x20;
  if (sign != 0) signLength = 1;
  let prefix = "";
  if (sharp || sharpV) {
    if (verb == 0x62) prefix = "0b";
    else if (verb == 0x6f) prefix = "0";
    else if (verb == 0x78) prefix = "0x";
    else if (verb == 0x58) prefix = "0X";
  }
  if (verb == 0x4f) prefix = "0o";

  let zeros = 0;
  if (precPresent) {
    if (digitCount < prec) zeros = prec - digitCount;
    else if (digitCount == 1 && load<u8>(piece.data) == 0x30 && prec == 0) return;
  }
  let left = 0;
  let right = 0;
  const length = signLength + prefix.length + zeros + digitCount;
  if (widPresent && length < wid) {
    const d = wid - length;
    if (minus) right = d;
    else if (zero && !precPresent) zeros = d;
    else left = d;
  }
  w.repeat(0x20, left);
  if (sign != 0) w.byte(sign);
  w.ascii(prefix);
  w.repeat(0x30, zeros);
  w.bytes(piece.data, digitCount);
  w.repeat(0x20, right);
}

/** Go's badVerb: %!verb(type=value), the value printed with %v under the same flags. */
function badVerb(w: TextBuffer, verb: i32): void {
  w.ascii("%!");
  w.rune(verb);
  w.byte(0x28);
  typeName(w);
  w.byte(0x3d);
  printOperand(w, 0x76);
  w.byte(0x29);
}

/** Go's printArg for the loaded operand. */
function printOperand(w: TextBuffer, verb: i32): void {
  if (verb == 0x54) {
    // %T prints the Go type name, as a string would be printed.
    piece.begin();
    typeName(piece);
    pad(w, piece.data, truncatedLength(piece.data, piece.len));
    return;
  }
  if (verb == 0x70 && argKind != OperandKind.BigInt) {
    // %p needs a pointer; only the big integer is one, and its address means nothing here.
    badVerb(w, verb);
    return;
  }
  if (argKind == OperandKind.Int) printInteger(w, <u64>argBits, verb);
  else if (argKind == OperandKind.Float) printFloat(w, reinterpret<f64>(argBits), verb);
  else if (argKind == OperandKind.Str) printString(w, argPtr, argLen, verb);
  else printBigInt(w, verb);
}

// The format string.

let formatPtr: usize = 0;
let formatEnd = 0;

// @ts-ignore: decorator
@inline
function formatByte(i: i32): i32 {
  return <i32>load<u8>(formatPtr + <usize>i);
}

/** Go refuses widths and precisions above a million. */
// @ts-ignore: decorator
@inline
function tooLarge(x: i64): bool {
  return x > 1000000 || x < -1000000;
}

// Results of parseNumber, as Go's parsenum returns them.
let parsedNumber = 0;
let parsedIsNumber = false;
let parsedNext = 0;

function parseNumber(start: i32, end: i32): void {
  parsedNumber = 0;
  parsedIsNumber = false;
  parsedNext = end;
  if (start >= end) return;
  let i = start;
  let num = 0;
  while (i < end) {
    const c = formatByte(i);
    if (c < 0x30 || c > 0x39) break;
    if (tooLarge(num)) {
      parsedNumber = 0;
      parsedIsNumber = false;
      parsedNext = end;
      return;
    }
    num = num * 10 + c - 0x30;
    parsedIsNumber = true;
    i++;
  }
  parsedNumber = num;
  parsedNext = i;
}

// Argument-index state of one Sprintf call.
let argNum = 0;
let reordered = false;
let goodArgNum = true;
let afterIndex = false;
let cursor = 0;

/** Go's argNumber: an explicit [n] index at the cursor, if any. */
function readArgumentIndex(): void {
  afterIndex = false;
  if (cursor >= formatEnd || formatByte(cursor) != 0x5b) return;
  reordered = true;
  // parseArgNumber: at least "[n]", and the number must fill the brackets.
  let consumed = 1;
  let ok = false;
  let index = 0;
  if (formatEnd - cursor >= 3) {
    for (let j = cursor + 1; j < formatEnd; j++) {
      if (formatByte(j) == 0x5d) {
        parseNumber(cursor + 1, j);
        consumed = j + 1 - cursor;
        if (parsedIsNumber && parsedNext == j) {
          ok = true;
          index = parsedNumber - 1;
        }
        break;
      }
    }
  }
  cursor += consumed;
  if (ok && index >= 0 && index < operandCount) {
    argNum = index;
    afterIndex = true;
    return;
  }
  goodArgNum = false;
  afterIndex = ok;
}

// Results of intFromOperand.
let starValue = 0;
let starIsInt = false;

/** Go's intFromArg: the operand for a `*` width or precision, which must be an int. */
function intFromOperand(): void {
  starValue = 0;
  starIsInt = false;
  if (argNum >= operandCount) return;
  if (operandKind(argNum) == OperandKind.Int) {
    const v = load<i64>(records.data + <usize>(argNum * RECORD_SIZE), 16);
    if (!tooLarge(v)) {
      starValue = <i32>v;
      starIsInt = true;
    }
  }
  argNum++;
}

/** Writes `fmt.Sprintf(format, operands...)` to `w`. */
export function formatGo(w: TextBuffer, format: usize, formatLen: i32): void {
  formatPtr = format;
  formatEnd = formatLen;
  operandCount = records.len / RECORD_SIZE;
  argNum = 0;
  reordered = false;
  afterIndex = false;
  cursor = 0;

  while (cursor < formatEnd) {
    goodArgNum = true;
    const literal = cursor;
    while (cursor < formatEnd && formatByte(cursor) != 0x25) cursor++;
    if (cursor > literal) w.bytes(format + <usize>literal, cursor - literal);
    if (cursor >= formatEnd) break;
    cursor++;

    clearFlags();
    for (; cursor < formatEnd; cursor++) {
      const c = formatByte(cursor);
      if (c == 0x23) sharp = true;
      else if (c == 0x30) zero = true;
      else if (c == 0x2b) plus = true;
      else if (c == 0x2d) minus = true;
      else if (c == 0x20) space = true;
      else break;
    }

    readArgumentIndex();

    if (cursor < formatEnd && formatByte(cursor) == 0x2a) {
      cursor++;
      intFromOperand();
      wid = starValue;
      widPresent = starIsInt;
      if (!widPresent) w.ascii("%!(BADWIDTH)");
      if (wid < 0) {
        // A negative width means left-justify.
        wid = -wid;
        minus = true;
        zero = false;
      }
      afterIndex = false;
    } else {
      parseNumber(cursor, formatEnd);
      wid = parsedNumber;
      widPresent = parsedIsNumber;
      cursor = parsedNext;
      if (afterIndex && widPresent) goodArgNum = false;
    }

    if (cursor + 1 < formatEnd && formatByte(cursor) == 0x2e) {
      cursor++;
      if (afterIndex) goodArgNum = false;
      readArgumentIndex();
      if (cursor < formatEnd && formatByte(cursor) == 0x2a) {
        cursor++;
        intFromOperand();
        prec = starValue;
        precPresent = starIsInt;
        if (prec < 0) {
          prec = 0;
          precPresent = false;
        }
        if (!precPresent) w.ascii("%!(BADPREC)");
        afterIndex = false;
      } else {
        parseNumber(cursor, formatEnd);
        prec = parsedNumber;
        precPresent = parsedIsNumber;
        cursor = parsedNext;
        if (!precPresent) {
          prec = 0;
          precPresent = true;
        }
      }
    }

    if (!afterIndex) readArgumentIndex();

    if (cursor >= formatEnd) {
      w.ascii("%!(NOVERB)");
      break;
    }

    let verb = formatByte(cursor);
    let size = 1;
    if (verb >= 0x80) {
      verb = decodeRune(format + <usize>cursor, format + <usize>formatEnd);
      size = runeSize;
    }
    cursor += size;

    if (verb == 0x25) {
      // %% consumes no operand and ignores width and precision.
      w.byte(0x25);
    } else if (!goodArgNum) {
      w.ascii("%!");
      w.rune(verb);
      w.ascii("(BADINDEX)");
    } else if (argNum >= operandCount) {
      w.ascii("%!");
      w.rune(verb);
      w.ascii("(MISSING)");
    } else {
      if (verb == 0x76 || verb == 0x77) {
        // %#v and %+v are their own formats, not the sharp and plus flags.
        sharpV = sharp;
        sharp = false;
        plusV = plus;
        plus = false;
      }
      loadOperand(argNum);
      printOperand(w, verb);
      argNum++;
    }
  }

  // Unused operands are reported, unless indexes made the order unknowable.
  if (!reordered && argNum < operandCount) {
    clearFlags();
    w.ascii("%!(EXTRA ");
    for (let i = argNum; i < operandCount; i++) {
      if (i > argNum) w.ascii(", ");
      loadOperand(i);
      typeName(w);
      w.byte(0x3d);
      printOperand(w, 0x76);
    }
    w.byte(0x29);
  }
}
