/**
 * The policy runtime's binary cut down to what one policy can reach, before binaryen reads it:
 * reading the whole runtime (about 180 KB) took half the time of compiling a small policy, and
 * most of it is builtins a given policy never calls. Functions no root reaches keep their index
 * and type but get an `unreachable` body, so nothing is renumbered and the binary stays valid;
 * binaryen's `remove-unused-module-elements` later drops them with everything else unused, so
 * the module emitted is the same as from the whole runtime.
 *
 * Roots: every exported function except the native builtins (`bi_*`) the policy does not call,
 * the start function, and every function a table or a global refers to (a `call_indirect` may
 * reach those). Edges: `call` and `ref.func`. The instruction reader knows the instructions the
 * AssemblyScript compiler emits with the runtime's features; meeting any other, it gives up and
 * the whole runtime is used, as before.
 *
 * Written here rather than with a Wasm library: only a walk over function bodies that finds
 * calls is needed, and binaryen itself is what this avoids running.
 */
import { nativeExportName } from '../builtins.ts';

const SECTION = { import: 2, global: 6, export: 7, start: 8, element: 9, code: 10 } as const;
const EXTERNAL_FUNCTION = 0x00;
/** Block types of one byte: empty, and the value types (i32 … v128, funcref, externref). */
const BLOCK_TYPE_BYTES = new Set([0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f]);
/** A body of no locals and `unreachable`: valid whatever the function's type. */
const UNREACHABLE_BODY = [0x03, 0x00, 0x00, 0x0b];

class Reader {
  constructor(
    readonly bytes: Uint8Array,
    public at = 0,
  ) {}

  u32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.bytes[this.at++]!;
      result |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result >>> 0;
      shift += 7;
    }
  }

  /** Skips a signed LEB128 of any width. */
  signed(): void {
    while (this.bytes[this.at++]! & 0x80);
  }

  name(): string {
    const length = this.u32();
    const text = new TextDecoder().decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return text;
  }

  memarg(): void {
    this.u32();
    this.u32();
  }
}

class UnknownInstruction extends Error {}

/**
 * Reads instructions from `r` up to the `end` that closes the outermost block (a function body
 * or a constant expression), calling `reference` with every function index called or referred to.
 */
function readExpression(r: Reader, reference: (index: number) => void): void {
  let depth = 1;
  while (depth > 0) {
    const op = r.bytes[r.at++]!;
    if (op === 0x02 || op === 0x03 || op === 0x04) {
      // block, loop, if: a block type (empty, a value type, or a type index as s33).
      if (BLOCK_TYPE_BYTES.has(r.bytes[r.at]!)) r.at++;
      else r.signed();
      depth++;
    } else if (op === 0x0b) depth--;
    else if (op === 0x10 || op === 0xd2) reference(r.u32());
    else if (op === 0x0c || op === 0x0d || (op >= 0x20 && op <= 0x26)) r.u32();
    else if (op === 0x0e) {
      for (let n = r.u32() + 1; n > 0; n--) r.u32();
    } else if (op === 0x11) {
      r.u32();
      r.u32();
    } else if (op === 0x1c) {
      for (let n = r.u32(); n > 0; n--) r.at++;
    } else if (op >= 0x28 && op <= 0x3e) r.memarg();
    else if (op === 0x3f || op === 0x40 || op === 0xd0) r.at++;
    else if (op === 0x41 || op === 0x42) r.signed();
    else if (op === 0x43) r.at += 4;
    else if (op === 0x44) r.at += 8;
    else if (op === 0xfc) readMiscImmediates(r, r.u32());
    else if (op === 0xfd) readSimdImmediates(r, r.u32());
    else if (!(op <= 0x01 || op === 0x05 || op === 0x0f || op === 0x1a || op === 0x1b || (op >= 0x45 && op <= 0xc4) || op === 0xd1)) {
      throw new UnknownInstruction(`opcode 0x${op.toString(16)}`);
    }
  }
}

/** The `0xfc` instructions: saturating conversions, bulk memory and table operations. */
function readMiscImmediates(r: Reader, sub: number): void {
  if (sub <= 7) return;
  if (sub === 8 || sub === 12 || sub === 14) {
    r.u32();
    sub === 8 ? r.at++ : r.u32();
  } else if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) r.u32();
  else if (sub === 10) r.at += 2;
  else if (sub === 11) r.at++;
  else throw new UnknownInstruction(`0xfc ${sub}`);
}

/** The `0xfd` (SIMD) instructions. */
function readSimdImmediates(r: Reader, sub: number): void {
  if (sub <= 11 || sub === 92 || sub === 93) r.memarg();
  else if (sub === 12 || sub === 13) r.at += 16;
  else if (sub >= 21 && sub <= 34) r.at++;
  else if (sub >= 84 && sub <= 91) {
    r.memarg();
    r.at++;
  } else if (sub > 275) throw new UnknownInstruction(`0xfd ${sub}`);
}

interface RuntimeLayout {
  bytes: Uint8Array;
  importedFunctions: number;
  /** Where the code section's contents start and end. */
  code: { start: number; end: number };
  /** Per defined function: where its body (after its size) starts and ends. */
  bodies: Array<{ start: number; end: number }>;
  /** Per function index (imports first): the functions it calls or refers to. */
  edges: number[][];
  exports: Map<string, number>;
  /** Functions reachable whatever the policy: start, tables, globals. */
  fixedRoots: number[];
}

function layout(bytes: Uint8Array): RuntimeLayout {
  const r = new Reader(bytes, 8);
  let importedFunctions = 0;
  const exports = new Map<string, number>();
  const fixedRoots: number[] = [];
  const collect = (index: number) => fixedRoots.push(index);
  let code = { start: 0, end: 0 };
  const bodies: Array<{ start: number; end: number }> = [];
  while (r.at < bytes.length) {
    const id = bytes[r.at++]!;
    const size = r.u32();
    const end = r.at + size;
    if (id === SECTION.import) {
      for (let n = r.u32(); n > 0; n--) {
        r.name();
        r.name();
        const kind = bytes[r.at++]!;
        if (kind === EXTERNAL_FUNCTION) {
          importedFunctions++;
          r.u32();
        } else if (kind === 0x01) {
          r.at++;
          const limits = bytes[r.at++]!;
          r.u32();
          if (limits & 1) r.u32();
        } else if (kind === 0x02) {
          const limits = bytes[r.at++]!;
          r.u32();
          if (limits & 1) r.u32();
        } else r.at += 2;
      }
    } else if (id === SECTION.global) {
      for (let n = r.u32(); n > 0; n--) {
        r.at += 2;
        readExpression(r, collect);
      }
    } else if (id === SECTION.export) {
      for (let n = r.u32(); n > 0; n--) {
        const name = r.name();
        const kind = bytes[r.at++]!;
        const index = r.u32();
        if (kind === EXTERNAL_FUNCTION) exports.set(name, index);
      }
    } else if (id === SECTION.start) {
      collect(r.u32());
    } else if (id === SECTION.element) {
      for (let n = r.u32(); n > 0; n--) readElementSegment(r, collect);
    } else if (id === SECTION.code) {
      code = { start: r.at, end };
      for (let n = r.u32(); n > 0; n--) {
        const length = r.u32();
        bodies.push({ start: r.at, end: r.at + length });
        r.at += length;
      }
    }
    r.at = end;
  }
  const edges: number[][] = Array.from({ length: importedFunctions }, () => []);
  for (const body of bodies) {
    const calls: number[] = [];
    const br = new Reader(bytes, body.start);
    for (let n = br.u32(); n > 0; n--) {
      br.u32();
      br.at++;
    }
    readExpression(br, (index) => calls.push(index));
    edges.push(calls);
  }
  return { bytes, importedFunctions, code, bodies, edges, exports, fixedRoots };
}

function readElementSegment(r: Reader, collect: (index: number) => void): void {
  const flags = r.u32();
  const skip = () => undefined;
  if ((flags & 0b011) === 0b010) r.u32(); // table index
  if ((flags & 0b001) === 0) readExpression(r, skip); // offset
  const expressions = (flags & 0b100) !== 0;
  if ((flags & 0b011) !== 0) r.at++; // element kind or reference type
  for (let n = r.u32(); n > 0; n--) {
    if (expressions) readExpression(r, collect);
    else collect(r.u32());
  }
}

let cached: { runtime: Uint8Array; layout: RuntimeLayout | null } | undefined;

function layoutOf(runtime: Uint8Array): RuntimeLayout | null {
  if (cached?.runtime === runtime || (cached && Buffer.compare(cached.runtime, runtime) === 0)) return cached.layout;
  let found: RuntimeLayout | null;
  try {
    found = layout(runtime);
  } catch (error) {
    if (!(error instanceof UnknownInstruction)) throw error;
    found = null;
  }
  cached = { runtime, layout: found };
  return found;
}

/**
 * `runtime` with the body of every function the policy cannot reach replaced by `unreachable`;
 * `builtins` are the native builtins the policy calls (by OPA name). The runtime itself when its
 * code holds an instruction this reader does not know.
 */
export function runtimeSubset(runtime: Uint8Array, builtins: ReadonlySet<string>): Uint8Array {
  const l = layoutOf(runtime);
  if (!l) return runtime;
  const called = new Set([...builtins].map(nativeExportName));
  const reached = new Uint8Array(l.edges.length);
  const pending: number[] = [...l.fixedRoots];
  for (const [name, index] of l.exports) if (!name.startsWith('bi_') || called.has(name)) pending.push(index);
  while (pending.length > 0) {
    const index = pending.pop()!;
    if (reached[index]) continue;
    reached[index] = 1;
    for (const next of l.edges[index]!) if (!reached[next]) pending.push(next);
  }
  const parts: Array<Uint8Array | number[]> = [];
  for (let i = 0; i < l.bodies.length; i++) {
    const body = l.bodies[i]!;
    if (reached[l.importedFunctions + i]) {
      parts.push(uleb(body.end - body.start), l.bytes.subarray(body.start, body.end));
    } else {
      parts.push(UNREACHABLE_BODY);
    }
  }
  const contents = concat([uleb(l.bodies.length), ...parts]);
  const before = l.bytes.subarray(0, sectionStart(l));
  const after = l.bytes.subarray(l.code.end);
  return concat([before, [SECTION.code], uleb(contents.length), contents, after]);
}

/** Where the code section's id byte is: just before its size, which ends where its contents start. */
function sectionStart(l: RuntimeLayout): number {
  let at = l.code.start - 1;
  while (l.bytes[at - 1]! & 0x80) at--;
  return at - 1;
}

function uleb(value: number): number[] {
  const out: number[] = [];
  do {
    let b = value & 0x7f;
    value >>>= 7;
    if (value !== 0) b |= 0x80;
    out.push(b);
  } while (value !== 0);
  return out;
}

function concat(parts: Array<Uint8Array | number[]>): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
