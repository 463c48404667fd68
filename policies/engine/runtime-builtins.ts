/**
 * The builtins Gatehouse's modules run inside themselves, answered on the host by the very same
 * code for modules built by `opa build -t wasm`, whose Wasm imports them: the policy runtime
 * (runtime.wasm, policies/runtime/) instantiated once on its own and called through its native
 * exports. A bundle and a Gatehouse module therefore answer alike, to the byte.
 *
 * Operands arrive as the SDK parsed them (JavaScript numbers, exact to 2^53) and go in as JSON
 * text; the answer is the runtime's JSON text, passed on as bytes, so integers beyond 2^53 stay
 * exact.
 */
import { readFileSync } from 'node:fs';
import { nativeExportName } from '../compiler/builtins.ts';
import { RUNTIME_WASM_PATH } from '../runtime/build.ts';
import { zoneAt } from './builtins/zone-offset.ts';

type Exports = Record<string, (...args: number[]) => number>;

/** Pages the runtime's memory starts with; its allocator grows it as an answer needs. */
const INITIAL_PAGES = 5;

class RuntimeInstance {
  private readonly memory = new WebAssembly.Memory({ initial: INITIAL_PAGES });
  private readonly exports: Exports;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  constructor(bytes: Uint8Array<ArrayBuffer>) {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
      env: {
        memory: this.memory,
        opa_abort: (ptr: number) => {
          throw new Error(`policy runtime: ${this.cString(ptr)}`);
        },
        opa_println: () => {},
      },
      // The runtime's hooks for a compiled policy, which it never calls on its own, and its
      // question for a named time zone's offset and abbreviation, answered as for a Gatehouse module.
      gen: {
        init: () => {},
        eval: () => 0,
        builtins: () => 0,
        entrypoints: () => 0,
        zone_offset: (unixSeconds: number, zone: number) => {
          const at: unknown = JSON.parse(this.dump(unixSeconds));
          const name: unknown = JSON.parse(this.dump(zone));
          const answer = typeof at === 'number' && typeof name === 'string' ? zoneAt(at, name) : undefined;
          return answer === undefined ? 0 : this.parse(JSON.stringify(answer));
        },
      },
    });
    this.exports = instance.exports as unknown as Exports;
  }

  /** Builtin `name` of the operands, as the bytes of its JSON text, or undefined. */
  call(name: string, operands: unknown[]): ArrayBuffer | undefined {
    const fn = this.exports[nativeExportName(name)];
    if (!fn) throw new Error(`the policy runtime has no builtin ${name}`);
    const heap = this.exports.opa_heap_ptr_get!();
    try {
      const values = operands.map((operand) => (operand === undefined ? 0 : this.parse(JSON.stringify(operand))));
      if (values.includes(0)) return undefined;
      const result = fn(...values);
      if (result === 0) return undefined;
      const at = this.exports.opa_json_dump!(result);
      return this.memory.buffer.slice(at, this.cStringEnd(at));
    } finally {
      this.exports.opa_heap_ptr_set!(heap);
    }
  }

  private parse(text: string): number {
    const bytes = this.encoder.encode(text);
    const at = this.exports.opa_malloc!(bytes.length);
    new Uint8Array(this.memory.buffer).set(bytes, at);
    return this.exports.opa_json_parse!(at, bytes.length);
  }

  private dump(value: number): string {
    return this.cString(this.exports.opa_json_dump!(value));
  }

  private cString(at: number): string {
    return this.decoder.decode(new Uint8Array(this.memory.buffer, at, this.cStringEnd(at) - at));
  }

  /** Where the NUL-terminated string at `at` ends. */
  private cStringEnd(at: number): number {
    const bytes = new Uint8Array(this.memory.buffer);
    let end = at;
    while (bytes[end] !== 0) end++;
    return end;
  }
}

let runtime: RuntimeInstance | undefined;

/**
 * Builtin `name` of `operands` as the runtime's own implementation answers it: its JSON text, as
 * the bytes a host builtin returns for the SDK to pass through (policies/engine/host-builtins.ts),
 * or undefined. The runtime is read and instantiated at the first call (it is built with the
 * package, `gatehouse policies runtime`).
 */
export function callRuntimeBuiltin(name: string, operands: unknown[]): ArrayBuffer | undefined {
  runtime ??= new RuntimeInstance(new Uint8Array(readFileSync(RUNTIME_WASM_PATH)));
  return runtime.call(name, operands);
}
