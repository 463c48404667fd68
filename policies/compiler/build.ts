/**
 * Building a policy directory: every `<name>-v<N>.rego` becomes `<name>-v<N>.wasm`, compiled with
 * all the directory's non-test modules (the other files are libraries every policy can import),
 * and `manifest.json` indexes the result.
 *
 * The build is all-or-nothing. Everything is compiled in memory first; any compile error, in any
 * file, fails the whole build with every error reported together. The output is then written to
 * a temporary directory beside `outDir` and renamed into place, so readers see either the
 * previous build or the new one, never a mixture or a half-written module.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ErrorCollector } from './error-collector.ts';
import { CompileError } from './errors.ts';
import { compileModules } from './index.ts';
import { MANIFEST_FILE, MANIFEST_VERSION, type Manifest, type ManifestPolicy } from './manifest.ts';
import { parseModule } from './parse/index.ts';
import type { Module } from './parse/ast.ts';
import { readSourceTree, type RegoSource } from './source-tree.ts';

export interface BuildOptions {
  /** Also write each policy's plan as `<name>.ir.txt`. */
  ir?: boolean;
}

/** What the build measured for one policy (not part of the manifest). */
export interface PolicyBuildStats {
  compileMs: number;
  moduleBytes: number;
  /** The plan, printed. */
  ir: string;
}

export interface BuildResult extends Manifest {
  /** Per policy: compile time, module size and plan. */
  compiled: Record<string, PolicyBuildStats>;
}

/** `<name>-v<N>.rego` → `<name>-v<N>`. */
const POLICY_FILE = /^(.+-v\d+)\.rego$/;
const DATA_FILE = 'data.json';

/** The policy a Rego file defines, or undefined for a library. */
export function policyNameOf(file: string): string | undefined {
  return POLICY_FILE.exec(path.basename(file))?.[1];
}

function sha256(...parts: Array<string | Uint8Array>): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return `sha256:${hash.digest('hex')}`;
}

/** Hashes paths and contents, separated so that moving text between files changes the hash. */
function sourceHash(sources: RegoSource[]): string {
  return sha256(...sources.flatMap((s) => [s.relative, '\0', s.text, '\0']));
}

/** Entrypoint 0 is the package document; then every rule of the package that is not a function. */
function entrypointsOf(packagePath: string[], modules: Module[]): string[] {
  const pkg = packagePath.join('/');
  const rules = new Set<string>();
  for (const m of modules) {
    if (m.package.join('/') !== pkg) continue;
    for (const rule of m.rules) if (rule.kind !== 'function') rules.add(rule.name);
  }
  return [pkg, ...[...rules].map((r) => `${pkg}/${r}`)];
}

interface CompiledPolicy {
  name: string;
  manifest: ManifestPolicy;
  wasm: Uint8Array;
  stats: PolicyBuildStats;
}

interface BuildOutput {
  policies: CompiledPolicy[];
  bundles: string[];
  data?: Buffer;
}

/** Parses and compiles everything in memory; throws CompileErrors listing every problem. */
async function compileTree(sourceDir: string, outDir: string): Promise<BuildOutput> {
  const tree = await readSourceTree(sourceDir, outDir);
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

  const policies: CompiledPolicy[] = [];
  const names = new Map<string, string>();
  for (const [i, source] of tree.modules.entries()) {
    const name = policyNameOf(source.relative);
    if (!name) continue;
    const other = names.get(name);
    if (other) {
      errors.add(new CompileError('check', `policy '${name}' is defined twice: ${other} and ${source.relative}`, parsed[i]!.packagePos, source.text));
      continue;
    }
    names.set(name, source.relative);
    const module = parsed[i]!;
    const entrypoints = entrypointsOf(module.package, parsed);
    const started = performance.now();
    try {
      const compiled = await compileModules(tree.modules, { entrypoints });
      const compileMs = performance.now() - started;
      policies.push({
        name,
        wasm: compiled.wasm,
        manifest: {
          module: `${name}.wasm`,
          package: module.package.join('/'),
          entrypoints: compiled.entrypoints,
          sourceHash: sourceHash(tree.modules),
          moduleHash: sha256(compiled.wasm),
          sources: tree.modules.map((s) => s.relative),
        },
        stats: { compileMs, moduleBytes: compiled.wasm.byteLength, ir: compiled.ir },
      });
    } catch (err) {
      errors.add(err);
    }
  }
  errors.throwIfAny();

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
  return { policies, bundles: tree.bundles, ...(data ? { data } : {}) };
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
 * Compiles every policy of `sourceDir` into `outDir` (see the module comment). Throws
 * CompileErrors when any source does not compile, leaving `outDir` as it was.
 */
export async function buildPolicies(sourceDir: string, outDir: string, opts: BuildOptions = {}): Promise<BuildResult> {
  const output = await compileTree(sourceDir, outDir);
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
  return { ...manifest, compiled: Object.fromEntries(output.policies.map((p) => [p.name, p.stats])) };
}
