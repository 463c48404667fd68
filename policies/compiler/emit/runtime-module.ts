import binaryen from 'binaryen';
import { PLACEHOLDERS, RUNTIME_FUNCTIONS, type PlaceholderName, type RuntimeFunction } from './runtime-abi.ts';

export const i32 = binaryen.i32;

/**
 * The WebAssembly features Node 20 runs. binaryen refuses a module using a feature it was not told
 * about, and the AssemblyScript runtime uses some (bulk memory, non-trapping float-to-int).
 */
const FEATURES =
  binaryen.Features.MutableGlobals |
  binaryen.Features.NontrappingFPToInt |
  binaryen.Features.SignExt |
  binaryen.Features.BulkMemory |
  binaryen.Features.BulkMemoryOpt |
  binaryen.Features.SIMD128 |
  binaryen.Features.ReferenceTypes |
  binaryen.Features.Multivalue;

/**
 * binaryen's `readBinary` takes the features as an optional second argument; its typings only
 * declare a `readBinaryWithFeatures` that the JavaScript build does not have.
 */
const readBinary = binaryen.readBinary as (data: Uint8Array, features: binaryen.Features) => binaryen.Module;

/** The i32 signature `(i32 × params) → i32 | none`. */
export function signature(params: number, returnsValue: boolean): { params: binaryen.Type; results: binaryen.Type } {
  return {
    params: binaryen.createType(new Array<binaryen.Type>(params).fill(i32)),
    results: returnsValue ? i32 : binaryen.none,
  };
}

/**
 * The precompiled runtime read into binaryen, with the lookups linking needs: its exported
 * `rt_*` / `bi_*` functions by export name, and the `gen.*` placeholder imports to replace.
 */
export class RuntimeModule {
  readonly module: binaryen.Module;
  private readonly placeholders = new Map<string, string>();
  private readonly envImports = new Map<string, string>();
  private readonly usedNames = new Set<string>();

  constructor(runtime: Uint8Array) {
    this.module = readBinary(runtime, FEATURES);
    for (let i = 0; i < this.module.getNumFunctions(); i++) {
      const info = binaryen.getFunctionInfo(this.module.getFunctionByIndex(i));
      this.usedNames.add(info.name);
      if (info.module === 'gen' && info.base) this.placeholders.set(info.base, info.name);
      if (info.module === 'env' && info.base) this.envImports.set(info.base, info.name);
    }
    for (let i = 0; i < this.module.getNumGlobals(); i++) {
      this.usedNames.add(binaryen.getGlobalInfo(this.module.getGlobalByIndex(i)).name);
    }
  }

  /** Internal name of a runtime function the contract lists, checked against its signature. */
  runtimeFunction(name: RuntimeFunction): string {
    const [params, returnsValue] = RUNTIME_FUNCTIONS[name];
    return this.exportedFunction(name, params, returnsValue);
  }

  /** Internal name of the function exported as `exportName`, or undefined when there is none. */
  findExportedFunction(exportName: string): string | undefined {
    const ref = this.module.getExport(exportName);
    if (!ref) return undefined;
    const info = binaryen.getExportInfo(ref);
    return info.kind === binaryen.ExternalFunction ? info.value : undefined;
  }

  /** Internal name of an exported function with the given i32 signature; throws when missing. */
  exportedFunction(exportName: string, params: number, returnsValue: boolean): string {
    const name = this.findExportedFunction(exportName);
    if (name === undefined) throw new Error(`runtime.wasm does not export function ${exportName}`);
    const info = binaryen.getFunctionInfo(this.module.getFunction(name));
    const expected = signature(params, returnsValue);
    if (info.params !== expected.params || info.results !== expected.results) {
      throw new Error(`runtime.wasm export ${exportName} does not have the signature the contract gives it`);
    }
    return name;
  }

  /** Replaces the placeholder import `gen.<name>` with a function running `body`. */
  definePlaceholder(name: PlaceholderName, vars: binaryen.Type[], body: binaryen.ExpressionRef): void {
    const internal = this.placeholders.get(name);
    if (internal === undefined) throw new Error(`runtime.wasm does not import gen.${name}`);
    const { params, result } = PLACEHOLDERS[name];
    const sig = signature(params, result);
    this.module.removeFunction(internal);
    this.module.addFunction(internal, sig.params, sig.results, vars, body);
  }

  /** Internal name of the import `env.<base>` with the given signature, added when missing. */
  envImport(base: string, params: number, returnsValue: boolean): string {
    const existing = this.envImports.get(base);
    if (existing !== undefined) return existing;
    const name = this.freshName(`env.${base}`);
    const sig = signature(params, returnsValue);
    this.module.addFunctionImport(name, 'env', base, sig.params, sig.results);
    this.envImports.set(base, name);
    return name;
  }

  /** A function or global name no runtime function uses, derived from `wanted`. */
  freshName(wanted: string): string {
    let name = wanted;
    for (let n = 2; this.usedNames.has(name); n++) name = `${wanted}#${n}`;
    this.usedNames.add(name);
    return name;
  }

  /**
   * Drops the exports the generated code needed (`rt_*`, `bi_*`) so the module exposes only the
   * OPA ABI, and so the runtime functions nothing calls any more can be removed.
   */
  removeLinkExports(): void {
    const names: string[] = [];
    for (let i = 0; i < this.module.getNumExports(); i++) {
      const { name } = binaryen.getExportInfo(this.module.getExportByIndex(i));
      if (name.startsWith('rt_') || name.startsWith('bi_')) names.push(name);
    }
    for (const name of names) this.module.removeExport(name);
  }
}
