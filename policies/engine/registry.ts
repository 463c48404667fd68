/**
 * The set of loaded policies. A registry is never changed once built: a reload builds a new one
 * and the engine swaps the reference, so an evaluation that already holds the old registry runs
 * to the end on the old modules.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { MANIFEST_FILE, SOURCES_DIR, type Manifest } from '../compiler/manifest.ts';
import { readOpaBundle } from './bundle.ts';
import type { BundleVerificationKeys } from './bundle-keys.ts';
import { checkWasmEntrypoints } from './bundle-manifest.ts';
import { describeFailure, PolicyInstance, type Budgets } from './policy-instance.ts';

export type PolicyOrigin = 'rego' | 'bundle';

/** A Rego module's text, at its path among the sources (or in the bundle). */
export interface PolicyModuleText {
  path: string;
  text: string;
}

export interface PolicyInfo {
  name: string;
  moduleHash: string;
  /** Entrypoint names by id. */
  entrypoints: string[];
  origin: PolicyOrigin;
  /** The Rego files compiled into the module (relative to the sources), or the bundle's file name. */
  sources: string[];
  /** A bundle's revision, from its `.manifest`. */
  revision?: string;
  /**
   * The Rego text the module was compiled from (a build's `sources/`, a bundle's `.rego` files);
   * empty for a build made before builds kept it, or a bundle without sources.
   */
  modules: PolicyModuleText[];
}

export interface LoadedPolicy {
  info: PolicyInfo;
  instance: PolicyInstance;
}

export type PolicyRegistry = ReadonlyMap<string, LoadedPolicy>;

/** What one load of a build directory produced: the policies that loaded, and why others did not. */
export interface LoadResult {
  registry: PolicyRegistry;
  /** Module or bundle file → why it was not loaded. */
  failures: ReadonlyMap<string, string>;
}

export interface LoadOptions extends Budgets {
  /** Data documents set through the engine; they replace the built data for those policies. */
  dataOverrides?: ReadonlyMap<string, unknown>;
  /** The keys bundles must be signed with (bundle-signature.ts); undefined: bundles must be unsigned. */
  bundleVerificationKeys?: BundleVerificationKeys;
}

/** A JSON file's document; throws naming the file when it is not JSON. */
export async function readJson(file: string): Promise<unknown> {
  const text = await readFile(file, 'utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid JSON: ${(err as Error).message}`);
  }
}

async function readManifest(buildDir: string): Promise<Manifest | undefined> {
  const file = path.join(buildDir, MANIFEST_FILE);
  const manifest = await readJson(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (manifest === undefined) return undefined;
  const m = manifest as Manifest;
  if (m.version !== 1 || typeof m.policies !== 'object') throw new Error(`${file}: not a version 1 policy manifest`);
  return m;
}

/**
 * Reads the texts of `sources` from the build's `sources/` directory, each file once per load
 * (every policy of a build shares its libraries). A file missing there (a build made before
 * builds kept their sources) leaves the policy's text out; a path reaching outside is refused.
 */
function sourceTextReader(buildDir: string): (sources: string[]) => Promise<PolicyModuleText[]> {
  const root = path.join(buildDir, SOURCES_DIR);
  const texts = new Map<string, Promise<string | undefined>>();
  const read = (relative: string): Promise<string | undefined> => {
    const file = path.resolve(root, relative);
    if (path.relative(root, file).startsWith('..') || path.isAbsolute(relative)) return Promise.resolve(undefined);
    let text = texts.get(file);
    if (!text) {
      text = readFile(file, 'utf8').catch(() => undefined);
      texts.set(file, text);
    }
    return text;
  };
  return async (sources) => {
    const found = await Promise.all(sources.map(read));
    return found.every((t) => t !== undefined) ? sources.map((p, i) => ({ path: p, text: found[i]! })) : [];
  };
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

function entrypointNames(instance: PolicyInstance): string[] {
  return [...instance.entrypoints].sort((a, b) => a[1] - b[1]).map(([name]) => name);
}

/** A readable reason whatever was thrown: the SDK throws bare strings when a module aborts. */
function reasonOf(err: unknown): string {
  return err instanceof Error && err.message ? err.message : describeFailure(err);
}

/**
 * Loads every module of `buildDir`'s manifest (with the build's data document) and every
 * `*.tar.gz` bundle of `opa build -t wasm` in `buildDir` (with the bundle's own data; its
 * signature checked against `bundleVerificationKeys`, its manifest's roots enforced). A policy
 * that cannot be loaded is left out and reported in `failures`, so that it never takes the others
 * down with it; only what every policy shares (the manifest, the data document, the directory)
 * fails the whole load.
 */
export async function loadRegistry(buildDir: string, opts: LoadOptions = {}): Promise<LoadResult> {
  const registry = new Map<string, LoadedPolicy>();
  const failures = new Map<string, string>();
  const dataFor = (name: string, built: unknown): unknown => (opts.dataOverrides?.has(name) ? opts.dataOverrides.get(name) : built);
  const attempt = async (name: string, file: string, load: () => Promise<LoadedPolicy>): Promise<void> => {
    try {
      registry.set(name, await load());
    } catch (err) {
      failures.set(file, reasonOf(err));
    }
  };

  const manifest = await readManifest(buildDir);
  const sourceTexts = sourceTextReader(buildDir);
  if (manifest) {
    const data = manifest.data ? await readJson(path.join(buildDir, manifest.data)) : {};
    for (const [name, entry] of Object.entries(manifest.policies)) {
      const file = path.join(buildDir, entry.module);
      await attempt(name, file, async () => {
        const wasm = await readFile(file);
        const moduleHash = sha256(wasm);
        if (moduleHash !== entry.moduleHash) throw new Error(`module hash ${moduleHash} does not match the manifest`);
        const instance = await PolicyInstance.load(wasm, dataFor(name, data), opts);
        const modules = await sourceTexts(entry.sources);
        return { info: { name, moduleHash, entrypoints: entry.entrypoints, origin: 'rego', sources: entry.sources, modules }, instance };
      });
    }
  }

  const files = await readdir(buildDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  const bundles = files.filter((f) => f.endsWith('.tar.gz')).sort();
  for (const file of bundles) {
    const name = file.slice(0, -'.tar.gz'.length);
    const bundlePath = path.join(buildDir, file);
    if (manifest?.policies[name]) {
      failures.set(bundlePath, `policy '${name}' is also built from Rego`);
      continue;
    }
    await attempt(name, bundlePath, async () => {
      const bundle = await readOpaBundle(bundlePath, opts.bundleVerificationKeys);
      const instance = await PolicyInstance.load(bundle.wasm, dataFor(name, bundle.data), opts);
      checkWasmEntrypoints(bundle.manifest, instance.entrypoints);
      const { revision } = bundle.manifest;
      const info: PolicyInfo = { name, moduleHash: sha256(bundle.wasm), entrypoints: entrypointNames(instance), origin: 'bundle', sources: [file], modules: bundle.modules };
      return { info: revision === undefined ? info : { ...info, revision }, instance };
    });
  }
  return { registry, failures };
}
