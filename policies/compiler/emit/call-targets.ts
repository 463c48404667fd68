import type binaryen from 'binaryen';
import { BUILTINS, ZONE_OFFSET_BUILTIN, hostImportName, nativeExportName } from '../builtins.ts';
import { CompileError } from '../errors.ts';
import { PROBE_BUILTINS } from '../probes.ts';
import type { CallTarget } from './function-body.ts';
import { i32, type RuntimeModule } from './runtime-module.ts';

/** The Wasm function of a planned IR function. */
export interface PlannedFunction {
  wasmName: string;
  params: number;
}

/** What makes the JSON text of an operand for a host builtin that `hostTakesJsonText`. */
const JSON_TEXT_BUILTIN = 'json.marshal';

/**
 * The builtins a call of `func` runs: itself, and json.marshal for a host builtin handed JSON
 * text. The runtime handed to the emitter must keep each native one (runtime-subset.ts).
 */
export function builtinsCalledBy(func: string): string[] {
  return BUILTINS[func]?.hostTakesJsonText ? [func, JSON_TEXT_BUILTIN] : [func];
}

/** OPA's host builtin imports go up to `opa_builtin4`. */
const MAX_HOST_ARITY = 4;

/**
 * Resolves the `func` of Call statements: planned functions first, then builtins (and a traced
 * build's probe calls, see probes.ts), native ones as
 * runtime exports and host ones through `env.opa_builtinN` with ids numbered in order of first
 * use (the ids `builtins()` reports to the SDK, under `hostImportName`). A native builtin that may
 * be given a named time zone adds ZONE_OFFSET_BUILTIN, which the runtime calls through the
 * `gen.zone_offset` placeholder.
 */
export class CallTargets {
  private readonly hostIds = new Map<string, number>();

  constructor(
    private readonly runtime: RuntimeModule,
    private readonly planned: ReadonlyMap<string, PlannedFunction>,
  ) {}

  target(func: string, argCount: number, origin: string): CallTarget {
    const m = this.runtime.module;
    const planned = this.planned.get(func);
    if (planned) {
      this.checkArity(func, planned.params, argCount, origin);
      // Input and data may be undefined (no input given): the function is still called.
      return { unguardedArgs: 2, call: (args) => m.call(planned.wasmName, args, i32) };
    }
    const spec = BUILTINS[func] ?? PROBE_BUILTINS[func];
    if (!spec) throw new CompileError('emit', `${origin}: call of unknown function ${func}`);
    this.checkArity(func, spec.arity, argCount, origin);
    if (spec.impl === 'native') {
      const exportName = nativeExportName(func);
      if (this.runtime.findExportedFunction(exportName) === undefined) {
        throw new CompileError('emit', `${origin}: builtin ${func} is missing from the runtime (no export ${exportName})`);
      }
      const name = this.runtime.exportedFunction(exportName, spec.arity, true);
      if (spec.asksHostForZones) this.hostId(ZONE_OFFSET_BUILTIN);
      return { unguardedArgs: 0, call: (args) => m.call(name, args, i32) };
    }
    if (spec.arity > MAX_HOST_ARITY) {
      throw new CompileError('emit', `${origin}: host builtin ${func} takes more than ${MAX_HOST_ARITY} arguments`);
    }
    const builtinId = this.hostId(hostImportName(func));
    const name = this.runtime.envImport(`opa_builtin${spec.arity}`, spec.arity + 2, true);
    const toSet = spec.hostReturnsSet ? this.runtime.runtimeFunction('rt_set_of') : undefined;
    const toJsonText = spec.hostTakesJsonText ? this.runtime.exportedFunction(nativeExportName(JSON_TEXT_BUILTIN), 1, true) : undefined;
    // The second argument is OPA's reserved evaluation context, always 0.
    return {
      unguardedArgs: 0,
      call: (args) => {
        const operands = toJsonText ? args.map((arg) => m.call(toJsonText, [arg], i32)) : args;
        const answer = m.call(name, [m.i32.const(builtinId), m.i32.const(0), ...operands], i32);
        return toSet ? m.call(toSet, [answer], i32) : answer;
      },
    };
  }

  /** The id of a host builtin, numbered in order of first use. */
  private hostId(importName: string): number {
    let id = this.hostIds.get(importName);
    if (id === undefined) {
      id = this.hostIds.size;
      this.hostIds.set(importName, id);
    }
    return id;
  }

  /**
   * The body of the `gen.zone_offset` placeholder: a call of ZONE_OFFSET_BUILTIN through
   * `opa_builtin2` when a resolved call may need it, else undefined (0), which nothing asks for.
   */
  zoneOffsetBody(): binaryen.ExpressionRef {
    const m = this.runtime.module;
    const id = this.hostIds.get(ZONE_OFFSET_BUILTIN);
    if (id === undefined) return m.i32.const(0);
    const name = this.runtime.envImport('opa_builtin2', 4, true);
    return m.call(name, [m.i32.const(id), m.i32.const(0), m.local.get(0, i32), m.local.get(1, i32)], i32);
  }

  /** `{importName: id}` of the host builtins the calls resolved so far. */
  hostBuiltins(): Record<string, number> {
    return Object.fromEntries(this.hostIds);
  }

  private checkArity(func: string, expected: number, actual: number, origin: string): void {
    if (expected !== actual) {
      throw new CompileError('emit', `${origin}: ${func} takes ${expected} arguments, called with ${actual}`);
    }
  }
}
