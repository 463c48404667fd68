import binaryen from 'binaryen';
import { CompileError } from '../errors.ts';
import type { Const } from '../plan/ir.ts';
import { i32, type RuntimeModule } from './runtime-module.ts';

/**
 * The policy's constants plus the strings the generated code needs (abort messages, the
 * `builtins()` and `entrypoints()` objects), kept as one JSON array that `gen.init` hands to the
 * runtime. Each constant the code reads is parsed once at instantiation and kept in a global, so a
 * constant operand costs a `global.get` rather than a call.
 */
export class Constants {
  private readonly texts: string[] = [];
  private readonly indexByText = new Map<string, number>();
  private readonly globals = new Map<number, string>();

  constructor(
    private readonly runtime: RuntimeModule,
    consts: readonly Const[],
  ) {
    consts.forEach((text, index) => {
      try {
        JSON.parse(text);
      } catch {
        throw new CompileError('emit', `constant ${index} is not JSON text: ${text}`);
      }
      this.texts.push(text);
      if (!this.indexByText.has(text)) this.indexByText.set(text, index);
    });
  }

  /** The value of constant `index` (from `Policy.consts`). */
  value(index: number): binaryen.ExpressionRef {
    if (!Number.isInteger(index) || index < 0 || index >= this.texts.length) {
      throw new CompileError('emit', `constant ${index} does not exist (the policy has ${this.texts.length})`);
    }
    let name = this.globals.get(index);
    if (name === undefined) {
      name = this.runtime.freshName(`policy.const.${index}`);
      this.runtime.module.addGlobal(name, i32, true, this.runtime.module.i32.const(0));
      this.globals.set(index, name);
    }
    return this.runtime.module.global.get(name, i32);
  }

  /** A string value, added to the constants when no constant holds it yet. */
  string(text: string): binaryen.ExpressionRef {
    return this.json(JSON.stringify(text));
  }

  /** A value given as JSON text, added to the constants when no constant holds it yet. */
  json(text: string): binaryen.ExpressionRef {
    let index = this.indexByText.get(text);
    if (index === undefined) {
      index = this.texts.length;
      this.texts.push(text);
      this.indexByText.set(text, index);
    }
    return this.value(index);
  }

  /**
   * The body of `gen.init`: write the JSON array into memory allocated from the runtime (the
   * runtime owns the data segments, so the bytes are stored by code), hand it to
   * `rt_set_consts`, and fill the globals of the constants the code reads.
   * Call it after all code is generated: the array must hold every constant added.
   */
  initBody(): { vars: binaryen.Type[]; body: binaryen.ExpressionRef } {
    const m = this.runtime.module;
    const bytes = new TextEncoder().encode(`[${this.texts.join(',')}]`);
    const ptr = 0;
    const at = (): binaryen.ExpressionRef => m.local.get(ptr, i32);
    const body: binaryen.ExpressionRef[] = [
      m.local.set(ptr, m.call(this.runtime.exportedFunction('opa_malloc', 1, true), [m.i32.const(bytes.length)], i32)),
      ...storeBytes(m, at, bytes),
      m.call(this.runtime.runtimeFunction('rt_set_consts'), [at(), m.i32.const(bytes.length)], binaryen.none),
    ];
    const rtConst = this.runtime.runtimeFunction('rt_const');
    for (const [index, name] of this.globals) {
      body.push(m.global.set(name, m.call(rtConst, [m.i32.const(index)], i32)));
    }
    return { vars: [i32], body: m.block(null, body, binaryen.none) };
  }
}

/** Stores `bytes` at the address `at()` yields, eight bytes per instruction where possible. */
function storeBytes(
  m: binaryen.Module,
  at: () => binaryen.ExpressionRef,
  bytes: Uint8Array,
): binaryen.ExpressionRef[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const stores: binaryen.ExpressionRef[] = [];
  let offset = 0;
  for (; offset + 8 <= bytes.length; offset += 8) {
    stores.push(m.i64.store(offset, 1, at(), m.i64.const(view.getBigInt64(offset, true))));
  }
  if (offset + 4 <= bytes.length) {
    stores.push(m.i32.store(offset, 1, at(), m.i32.const(view.getInt32(offset, true))));
    offset += 4;
  }
  for (; offset < bytes.length; offset++) {
    stores.push(m.i32.store8(offset, 1, at(), m.i32.const(bytes[offset]!)));
  }
  return stores;
}
