/**
 * The policy engine the service evaluates decisions with.
 *
 * It loads every policy of a build directory — Rego compiled by `buildPolicies` and bundles made
 * by `opa build -t wasm` — and evaluates them synchronously. A policy that fails to load is left
 * out, reported through `log.error` and `loadFailures()`, and never stops the others loading.
 * Evaluation fails closed: whatever goes wrong inside a policy comes back as `error` with no value
 * (see policy-instance.ts), and the caller denies. With `watch`, a change to the sources is
 * rebuilt and the new set of modules replaces the old in one step; a build that fails leaves the
 * old modules serving.
 */
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildPolicies } from '../compiler/build.ts';
import type { CompileCache } from '../compiler/compile-cache.ts';
import { CompileErrors } from '../compiler/errors.ts';
import type { BundleVerificationKeys } from './bundle-keys.ts';
import { UnknownPolicyError } from './errors.ts';
import { loadRegistry, type LoadResult, type PolicyInfo, type PolicyRegistry } from './registry.ts';
import { iterationBudget, type EvaluationOutcome, type PolicyInstance } from './policy-instance.ts';
import { watchSources, type SourceWatcher } from './source-watcher.ts';

export { readBundleVerificationKeys, type BundleVerificationKeys } from './bundle-keys.ts';
export { UnknownPolicyError } from './errors.ts';
export type { PolicyInfo, PolicyOrigin } from './registry.ts';

/**
 * Where the engine reports reloads and the policies it leaves out: a message and the fields that
 * go with it, in the order pino's logger takes them (the server passes core/log.ts's logger).
 */
export interface EngineLog {
  info(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface EngineOptions {
  /** Rego sources to build into `buildDir` first (and to watch, with `watch`). */
  sourceDir?: string;
  /** The build output to load: `manifest.json`, its modules, and `*.tar.gz` bundles. */
  buildDir: string;
  /** Rebuild and reload when `sourceDir` changes. */
  watch?: boolean;
  /** Earlier compiles to reuse for unchanged sources, and keep new ones in (policies/compiler/compile-cache.ts). */
  compileCache?: CompileCache;
  /** Quiet time after a change before rebuilding, in ms (default and least 100: see source-watcher.ts). */
  debounceMs?: number;
  /** Linear memory cap per module in 64 KiB pages (default 1024, i.e. 64 MiB: see policy-instance.ts). */
  maxMemoryPages?: number;
  /** Loop iterations and calls per evaluation (default 10 million: see policies/compiler/emit/iteration-budget.ts). */
  maxIterations?: number;
  log?: EngineLog;
  /**
   * Open with the policies that compile, the others left out and reported by `loadFailures()`
   * (a server starting up), instead of failing. Reloads stay all-or-nothing.
   */
  leaveOutFailing?: boolean;
  /**
   * The keys `*.tar.gz` bundles must be signed with (policies/engine/bundle-signature.ts). Without
   * them a signed bundle is left out, as one that is unsigned is with them.
   */
  bundleVerificationKeys?: BundleVerificationKeys;
}

export interface Evaluation {
  policy: string;
  moduleHash: string;
  /** The entrypoint's value; undefined when the policy produced nothing or failed. */
  value: unknown;
  /** Set when the evaluation failed; the caller must deny. */
  error?: string;
  durationNs: number;
}

/** The outcome of a reload, emitted as the engine's 'reload' event. */
export type ReloadOutcome =
  | { ok: true; policies: string[]; durationMs: number }
  | { ok: false; error: string; durationMs: number };

/** Without a log, reload failures still reach stderr, each field on a line of its own; routine messages are dropped. */
const DEFAULT_LOG: EngineLog = {
  info: () => {},
  error: (fields, message) => console.error([message, ...Object.entries(fields).map(([name, value]) => `${name}: ${String(value)}`)].join('\n')),
};

function describeBuildFailure(err: unknown): string {
  if (err instanceof CompileErrors) return err.errors.map((e) => e.format()).join('\n');
  return err instanceof Error ? err.message : String(err);
}

export class PolicyEngine extends EventEmitter<{ reload: [ReloadOutcome] }> {
  private registry: PolicyRegistry = new Map();
  private failures: ReadonlyMap<string, string> = new Map();
  /** The source files the opening build left out (`leaveOutFailing`), until a reload builds them all. */
  private buildFailures: ReadonlyMap<string, string> = new Map();
  private readonly dataOverrides = new Map<string, unknown>();
  private readonly log: EngineLog;
  private watcher: SourceWatcher | undefined;
  /** The reload under way, and whether another change arrived meanwhile. */
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  private closed = false;

  private constructor(private readonly options: EngineOptions) {
    super();
    this.log = options.log ?? DEFAULT_LOG;
  }

  /**
   * Builds `sourceDir` (when given) into `buildDir`, loads the build, and starts watching when
   * asked. Throws CompileErrors when the sources do not compile, unless `leaveOutFailing`.
   */
  static async open(options: EngineOptions): Promise<PolicyEngine> {
    iterationBudget(options);
    const engine = new PolicyEngine(options);
    if (options.sourceDir) {
      const { failed } = await buildPolicies(options.sourceDir, options.buildDir, {
        leaveOutFailing: options.leaveOutFailing ?? false,
        cache: options.compileCache,
      });
      engine.buildFailures = new Map(failed.map((f) => [path.join(options.sourceDir!, f.file), f.errors.map((e) => e.format()).join('\n')]));
    }
    engine.install(await engine.load());
    if (options.watch && options.sourceDir) await engine.startWatching(options.sourceDir);
    return engine;
  }

  /** Names of the loaded policies, sorted. */
  names(): string[] {
    return [...this.registry.keys()].sort();
  }

  /** The source, module or bundle files left out of what is loaded, with why. */
  loadFailures(): ReadonlyMap<string, string> {
    return this.failures;
  }

  has(name: string): boolean {
    return this.registry.has(name);
  }

  /** The 'reload' event as the server's metrics read it (core/policy-evaluator.ts); returns how to stop listening. */
  onReload(listener: (outcome: ReloadOutcome) => void): () => void {
    this.on('reload', listener);
    return () => this.off('reload', listener);
  }

  /** What is loaded under `name`. Throws UnknownPolicyError. */
  info(name: string): PolicyInfo {
    return this.lookup(this.registry, name).info;
  }

  /**
   * Evaluates `name` with `input` at `entrypoint` (an id or a name from `info().entrypoints`;
   * default 0, the package document). Never throws for a policy failure — see `Evaluation.error`
   * — only UnknownPolicyError for a name that is not loaded.
   */
  evaluate(name: string, input: unknown, entrypoint: number | string = 0): Evaluation {
    return this.run(name, entrypoint, (instance, id) => instance.evaluate(input, id));
  }

  /**
   * As `evaluate`, with the input given as its JSON text: a caller that serialised the input
   * already (to take its digest, say) saves the engine doing it again.
   */
  evaluateJson(name: string, inputJson: string, entrypoint: number | string = 0): Evaluation {
    return this.run(name, entrypoint, (instance, id) => instance.evaluateJson(inputJson, id));
  }

  private run(name: string, entrypoint: number | string, evaluate: (instance: PolicyInstance, id: number) => EvaluationOutcome): Evaluation {
    // Holding this registry keeps its modules for the whole evaluation, whatever reloads do.
    const loaded = this.lookup(this.registry, name);
    const { moduleHash, entrypoints } = loaded.info;
    const id = typeof entrypoint === 'number' ? entrypoint : loaded.instance.entrypoints.get(entrypoint);
    if (id === undefined || !Number.isInteger(id) || id < 0 || id >= entrypoints.length) {
      return { policy: name, moduleHash, value: undefined, error: `policy ${name} has no entrypoint ${entrypoint}`, durationNs: 0 };
    }
    const outcome = evaluate(loaded.instance, id);
    return { policy: name, moduleHash, ...outcome };
  }

  /** Replaces the data document of `name`; it is kept across reloads. Throws UnknownPolicyError. */
  setData(name: string, data: unknown): void {
    const loaded = this.lookup(this.registry, name);
    loaded.instance.setData(data);
    this.dataOverrides.set(name, data);
  }

  /** Stops watching, waits for a reload under way, and unloads every policy. */
  async close(): Promise<void> {
    this.closed = true;
    await this.watcher?.close();
    this.watcher = undefined;
    await this.reloading;
    this.registry = new Map();
  }

  private lookup(registry: PolicyRegistry, name: string) {
    const loaded = registry.get(name);
    if (!loaded) throw new UnknownPolicyError(name);
    return loaded;
  }

  private load(): Promise<LoadResult> {
    return loadRegistry(this.options.buildDir, {
      dataOverrides: this.dataOverrides,
      ...(this.options.maxMemoryPages ? { maxMemoryPages: this.options.maxMemoryPages } : {}),
      ...(this.options.maxIterations ? { maxIterations: this.options.maxIterations } : {}),
      bundleVerificationKeys: this.options.bundleVerificationKeys,
    });
  }

  /** One assignment of the registry: evaluations see the old set or the new one, never a mixture. */
  private install(loaded: LoadResult): void {
    // What a policy prints is logged as OPA's server logs it, at info, naming the policy.
    for (const [policy, { instance }] of loaded.registry) {
      instance.output = ({ kind, text }) => this.log.info({ policy, [kind]: text }, kind === 'print' ? 'policy print' : 'policy trace note');
    }
    this.registry = loaded.registry;
    this.failures = new Map([...this.buildFailures, ...loaded.failures]);
    for (const [file, reason] of this.failures) this.log.error({ file, reason }, 'policy not loaded');
  }

  private async startWatching(sourceDir: string): Promise<void> {
    const buildDir = path.relative(sourceDir, this.options.buildDir);
    this.watcher = await watchSources(sourceDir, {
      debounceMs: this.options.debounceMs ?? 100,
      onChange: () => this.requestReload(),
      onError: (err) => this.log.error({ err }, 'policy watcher stopped: changes are no longer reloaded'),
      // A build directory inside the sources changes on every build; that must not loop.
      ignore: (file) => !buildDir.startsWith('..') && (file === buildDir || file.startsWith(`${buildDir}${path.sep}`)),
    });
  }

  /** Runs one reload at a time; changes during a reload cause one more afterwards. */
  private requestReload(): void {
    if (this.closed) return;
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.reloading = this.reload().finally(() => {
      this.reloading = undefined;
      if (this.reloadAgain) {
        this.reloadAgain = false;
        this.requestReload();
      }
    });
  }

  private async reload(): Promise<void> {
    const started = performance.now();
    let outcome: ReloadOutcome;
    try {
      await buildPolicies(this.options.sourceDir!, this.options.buildDir, { cache: this.options.compileCache });
      const next = await this.load();
      if (this.closed) return;
      this.buildFailures = new Map();
      this.install(next);
      outcome = { ok: true, policies: this.names(), durationMs: performance.now() - started };
      this.log.info({ policies: outcome.policies, durationMs: outcome.durationMs }, 'policies reloaded');
    } catch (err) {
      outcome = { ok: false, error: describeBuildFailure(err), durationMs: performance.now() - started };
      this.log.error({ errors: outcome.error, durationMs: outcome.durationMs }, 'policy reload failed; the previous policies stay loaded');
    }
    this.emit('reload', outcome);
  }
}
