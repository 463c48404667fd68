/**
 * Building policies from directories and files: every `<name>-v<N>.rego` becomes
 * `<name>-v<N>.wasm`, or, with entrypoints picked as `opa build -e` does, each module holding
 * them (see policy-selection.ts); each is compiled with all the non-test modules (the other files
 * are libraries every policy can import), `manifest.json` indexes the result, and `.sources/`
 * keeps the text each module was compiled from.
 *
 * The build is all-or-nothing. Everything is compiled in memory first; any compile error, in any
 * file, fails the whole build with every error reported together. The output is then written to
 * a temporary directory beside `outDir` and renamed into place, so readers see either the
 * previous build or the new one, never a mixture or a half-written module. Only a server starting
 * up asks for less (`leaveOutFailing`): the policies that compile, and why the others did not.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { compileErrorsOf, ErrorCollector } from './error-collector.ts';
import { CompileError } from './errors.ts';
import type { CachedCompile, CompileCache } from './compile-cache.ts';
import { MANIFEST_FILE, MANIFEST_VERSION, SOURCES_DIR, type Manifest, type ManifestPolicy } from './manifest.ts';
import { parseModule } from './parse/index.ts';
import type { Module } from './parse/ast.ts';
import { defaultEntrypoints, definedTwice, policiesByEntrypoints, policiesByFileName, policyNameOf } from './policy-selection.ts';
import { readSources, type RegoSource, type SourceTree } from './source-tree.ts';

export interface BuildOptions {
  /** Also write each policy's plan as `<name>.ir.txt`. */
  ir?: boolean;
  /**
   * Build only the policies holding these entrypoints, with these as their entrypoints, as
   * `opa build -e` (see policy-selection.ts). Not with `leaveOutFailing`.
   */
  entrypoints?: string[];
  /** Fail, saying why, when the sources hold no policy and no bundle (instead of building nothing). */
  requirePolicy?: boolean;
  /** Build the policies that compile and report the others in `failed`, instead of failing the build. */
  leaveOutFailing?: boolean;
  /** Take unchanged policies from this cache of earlier compiles, and keep what is compiled in it. */
  cache?: CompileCache;
}

/** A policy the build left out (`leaveOutFailing`), and why. */
export interface PolicyBuildFailure {
  policy: string;
  /** Its source file, relative to the source directory. */
  file: string;
  errors: CompileError[];
}

/** What the build measured for one policy (not part of the manifest). */
export interface PolicyBuildStats {
  compileMs: number;
  /** Taken from the compile cache: `compileMs` is the time to read it. */
  cached: boolean;
  moduleBytes: number;
  /** The plan, printed. */
  ir: string;
  /** The builtins it calls that run in JavaScript beside the module. */
  hostBuiltins: string[];
}

export interface BuildResult extends Manifest {
  /** Per policy: compile time, module size and plan. */
  compiled: Record<string, PolicyBuildStats>;
  /** The policies left out; only `leaveOutFailing` leaves any out. */
  failed: PolicyBuildFailure[];
}

const DATA_FILE = 'data.json';

export { policyNameOf };

function sha256(...parts: Array<string | Uint8Array>): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return `sha256:${hash.digest('hex')}`;
}

/** Hashes paths and contents, separated so that moving text between files changes the hash. */
function sourceHash(sources: RegoSource[]): string {
  return sha256(...sources.flatMap((s) => [s.relative, '\0', s.text, '\0']));
}

interface CompiledPolicy {
  name: string;
  /** The file defining it, relative to the sources. */
  file: string;
  manifest: ManifestPolicy;
  wasm: Uint8Array;
  stats: PolicyBuildStats;
}

interface BuildOutput {
  policies: CompiledPolicy[];
  failed: PolicyBuildFailure[];
  bundles: string[];
  /** The Rego modules read (tests aside): the texts the policies were compiled from. */
  modules: RegoSource[];
  data?: Buffer;
}

/**
 * The compile of `sources` with `entrypoints`: from `cache` when it holds it, else compiled (and
 * kept there). The compiler is imported on the first miss only: it loads binaryen, 0.7 s of a
 * start that the cache otherwise spares.
 */
async function compileOrReuse(sources: RegoSource[], entrypoints: string[], cache: CompileCache | undefined): Promise<{ compiled: CachedCompile; cached: boolean }> {
  const inputs = { sources, entrypoints };
  const cached = await cache?.get(inputs);
  if (cached) return { compiled: cached, cached: true };
  const { compileModules } = await import('./index.ts');
  const compiled = await compileModules(sources, { entrypoints });
  await cache?.put(inputs, compiled);
  return { compiled, cached: false };
}

/**
 * Compiles policy `name` (defined by `source`, parsed as `module`) from `sources`, whose parsed
 * modules are `modules`, with the default entrypoints unless given others.
 */
async function compilePolicy(
  name: string,
  source: RegoSource,
  module: Module,
  sources: RegoSource[],
  modules: Module[],
  cache: CompileCache | undefined,
  entrypoints = defaultEntrypoints(module.package, modules),
): Promise<CompiledPolicy> {
  const started = performance.now();
  const { compiled, cached } = await compileOrReuse(sources, entrypoints, cache);
  const compileMs = performance.now() - started;
  return {
    name,
    file: source.relative,
    wasm: compiled.wasm,
    manifest: {
      module: `${name}.wasm`,
      package: module.package.join('/'),
      entrypoints: compiled.entrypoints,
      sourceHash: sourceHash(sources),
      moduleHash: sha256(compiled.wasm),
      sources: sources.map((s) => s.relative),
    },
    stats: { compileMs, cached, moduleBytes: compiled.wasm.byteLength, ir: compiled.ir, hostBuiltins: compiled.hostBuiltins },
  };
}

/**
 * Parses and compiles everything in memory: the versioned policy files, or the policies holding
 * `entrypoints` when given. Throws CompileErrors listing every problem.
 */
async function compileAll(tree: SourceTree, entrypoints: string[] | undefined, cache: CompileCache | undefined): Promise<CompiledPolicy[]> {
  const errors = new ErrorCollector();
  const parsed: Module[] = [];
  for (const source of tree.modules) {
    try {
      parsed.push(parseModule(source.path, source.text));
    } catch (err) {
      errors.add(err);
    }
  }
  errors.throwIfAny();

  const selected = entrypoints ? policiesByEntrypoints(tree.modules, parsed, entrypoints) : policiesByFileName(tree.modules, parsed);
  for (const e of selected.errors) errors.add(e);
  const policies: CompiledPolicy[] = [];
  for (const { name, index, entrypoints } of selected.policies) {
    try {
      policies.push(await compilePolicy(name, tree.modules[index]!, parsed[index]!, tree.modules, parsed, cache, entrypoints));
    } catch (err) {
      errors.add(err);
    }
  }
  errors.throwIfAny();
  return policies;
}

/**
 * `leaveOutFailing`: compiles each policy that compiles and reports the others. A policy file
 * that does not compile is left out of the modules the others are compiled with (the checker
 * reads every module, so its error would fail them all), and a policy that names its package
 * fails with it: built without those rules, it could allow what they deny. A library that does
 * not compile fails every policy, for the same reason.
 */
async function compileWhatCompiles(tree: SourceTree, cache: CompileCache | undefined): Promise<{ policies: CompiledPolicy[]; failed: PolicyBuildFailure[] }> {
  const parsed = new Map<string, Module>();
  const broken = new Map<string, CompileError[]>();
  for (const source of tree.modules) {
    try {
      parsed.set(source.relative, parseModule(source.path, source.text));
    } catch (err) {
      broken.set(source.relative, compileErrorsOrThrow(err));
    }
  }
  const libraryErrors = tree.modules.filter((s) => !policyNameOf(s.relative)).flatMap((s) => broken.get(s.relative) ?? []);
  const relativeOf = new Map(tree.modules.map((s) => [s.path, s.relative]));
  const policies: CompiledPolicy[] = [];
  const names = new Map<string, string>();
  for (const source of tree.modules) {
    const name = policyNameOf(source.relative);
    const module = parsed.get(source.relative);
    if (!name || !module) continue;
    const other = names.get(name);
    if (other) {
      broken.set(source.relative, [definedTwice(name, other, source, module)]);
      continue;
    }
    names.set(name, source.relative);
    // Found not to compile while another policy was compiled: its errors are known.
    if (broken.has(source.relative)) continue;
    if (libraryErrors.length > 0) {
      broken.set(source.relative, libraryErrors);
      continue;
    }
    // Each failure found in another policy's file leaves that file out and tries again.
    for (;;) {
      const dependency = namesBrokenPackage(source, module, tree, parsed, broken);
      if (dependency) {
        broken.set(source.relative, [dependency]);
        break;
      }
      const sources = tree.modules.filter((s) => !broken.has(s.relative));
      try {
        policies.push(await compilePolicy(name, source, module, sources, sources.map((s) => parsed.get(s.relative)!), cache));
        break;
      } catch (err) {
        const errors = compileErrorsOrThrow(err);
        const elsewhere = errors.filter((e) => {
          const file = e.pos && relativeOf.get(e.pos.file);
          return file !== undefined && file !== source.relative && policyNameOf(file) !== undefined;
        });
        if (elsewhere.length === 0) {
          broken.set(source.relative, errors);
          break;
        }
        for (const e of elsewhere) {
          const file = relativeOf.get(e.pos!.file)!;
          broken.set(file, [...(broken.get(file) ?? []), e]);
        }
      }
    }
  }
  const failed = [...broken].flatMap(([file, errors]) => {
    const policy = policyNameOf(file);
    return policy ? [{ policy, file, errors }] : [];
  });
  return { policies, failed };
}

function compileErrorsOrThrow(err: unknown): CompileError[] {
  const errors = compileErrorsOf(err);
  if (!errors) throw err;
  return errors;
}

/** A policy file's package, read from its source when it does not parse. */
const PACKAGE_LINE = /^\s*package\s+([A-Za-z_][\w.]*)/m;

/** The error for `source` when it, or a library, names the package of a policy file left out. */
function namesBrokenPackage(source: RegoSource, module: Module, tree: SourceTree, parsed: Map<string, Module>, broken: Map<string, CompileError[]>): CompileError | undefined {
  const readers = tree.modules.filter((s) => s === source || !policyNameOf(s.relative));
  for (const file of broken.keys()) {
    const brokenSource = tree.modules.find((s) => s.relative === file)!;
    const pkg = parsed.get(file)?.package.join('.') ?? PACKAGE_LINE.exec(brokenSource.text)?.[1];
    const named = pkg && new RegExp(`${pkg.replaceAll('.', '\\.')}(?!\\w)`);
    const reader = named && readers.find((s) => named.test(s.text));
    if (reader) return new CompileError('check', `${reader.relative} names package ${pkg} of ${file}, which does not compile`, module.packagePos, source.text);
  }
  return undefined;
}

/** Why `sources` make no policy, when they make none without entrypoints picked. */
function noPolicyIn(tree: SourceTree, sources: string[]): string | undefined {
  if (tree.bundles.length > 0 || tree.modules.some((s) => policyNameOf(s.relative))) return undefined;
  const where = `no policy found in ${sources.join(', ')}`;
  if (tree.modules.length === 0) return `${where}: no Rego module (.rego, tests aside) or bundle (.tar.gz) there`;
  const found = tree.modules.map((s) => s.relative);
  const listed = found.length > 5 ? `${found.slice(0, 5).join(', ')}, …` : found.join(', ');
  return `${where}: a policy is a file named <name>-v<N>.rego (authz-v1.rego), and the ${found.length} module${found.length === 1 ? '' : 's'} found (${listed}) ${found.length === 1 ? 'is a library' : 'are libraries'}; rename the policy's file, or pick its entrypoints with -e <package>/<rule>`;
}

/** Parses and compiles everything in memory (see BuildOptions). */
async function compileTree(sources: string[], outDir: string, opts: BuildOptions): Promise<BuildOutput> {
  const tree = await readSources(sources, outDir);
  const missing = opts.requirePolicy && !opts.entrypoints ? noPolicyIn(tree, sources) : undefined;
  if (missing) throw new Error(missing);
  const { policies, failed } = opts.leaveOutFailing
    ? await compileWhatCompiles(tree, opts.cache)
    : { policies: await compileAll(tree, opts.entrypoints, opts.cache), failed: [] };

  const names = new Map<string, string>([...policies.map((p) => [p.name, p.file] as const), ...failed.map((f) => [f.policy, f.file] as const)]);
  for (const bundle of tree.bundles) {
    const name = path.basename(bundle, '.tar.gz');
    if (names.has(name)) throw new Error(`${bundle}: bundle '${name}' has the name of the policy in ${names.get(name)}`);
    names.set(name, bundle);
  }

  let data: Buffer | undefined;
  if (tree.dataFile) {
    data = await readFile(tree.dataFile);
    try {
      JSON.parse(data.toString('utf8'));
    } catch (err) {
      throw new Error(`${tree.dataFile}: not valid JSON: ${(err as Error).message}`);
    }
  }
  return { policies, failed, bundles: tree.bundles, modules: tree.modules, ...(data ? { data } : {}) };
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** Writes the build into `dir`, which must not exist yet. */
async function writeOutput(dir: string, output: BuildOutput, manifest: Manifest, opts: BuildOptions): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const p of output.policies) {
    await writeFile(path.join(dir, p.manifest.module), p.wasm);
    if (opts.ir) await writeFile(path.join(dir, `${p.name}.ir.txt`), p.stats.ir);
  }
  for (const bundle of output.bundles) await copyFile(bundle, path.join(dir, path.basename(bundle)));
  const compiledFrom = new Set(output.policies.flatMap((p) => p.manifest.sources));
  for (const source of output.modules.filter((m) => compiledFrom.has(m.relative))) {
    const file = path.join(dir, SOURCES_DIR, source.relative);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, source.text);
  }
  if (output.data) await writeFile(path.join(dir, DATA_FILE), output.data);
  await writeFile(path.join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
}

/**
 * Puts `staged` in the place of `outDir` with two renames (`outDir` aside, `staged` in), putting
 * the old directory back if the second fails. A reader can find `outDir` missing for the instant
 * between the renames, never partly written.
 */
async function swapIntoPlace(staged: string, outDir: string, scratch: string): Promise<void> {
  if (!(await exists(outDir))) {
    await rename(staged, outDir);
    return;
  }
  const previous = `${scratch}.old`;
  await rename(outDir, previous);
  try {
    await rename(staged, outDir);
  } catch (err) {
    await rename(previous, outDir);
    throw err;
  }
  await rm(previous, { recursive: true, force: true });
}

/**
 * Compiles every policy of `sources` (a directory, or directories and files) into `outDir` (see
 * the module comment). Throws CompileErrors when any source does not compile, leaving `outDir`
 * as it was.
 */
export async function buildPolicies(sources: string | string[], outDir: string, opts: BuildOptions = {}): Promise<BuildResult> {
  const output = await compileTree(typeof sources === 'string' ? [sources] : sources, outDir, opts);
  const manifest: Manifest = {
    version: MANIFEST_VERSION,
    policies: Object.fromEntries(output.policies.map((p) => [p.name, p.manifest])),
    ...(output.data ? { data: DATA_FILE } : {}),
  };

  // The scratch directories sit beside outDir so that the renames stay on one file system.
  const parent = path.dirname(path.resolve(outDir));
  await mkdir(parent, { recursive: true });
  const scratch = path.join(parent, `.${path.basename(outDir)}.${process.pid}-${randomBytes(4).toString('hex')}`);
  const staged = `${scratch}.new`;
  try {
    await writeOutput(staged, output, manifest, opts);
    await swapIntoPlace(staged, path.resolve(outDir), scratch);
  } finally {
    await rm(staged, { recursive: true, force: true });
  }
  return { ...manifest, compiled: Object.fromEntries(output.policies.map((p) => [p.name, p.stats])), failed: output.failed };
}
