/**
 * Builds the policy runtime: the AssemblyScript sources in `assembly/` compiled once to
 * `build/runtime.wasm`, which the emitter links every policy against. The build is skipped while
 * the sources (and the compiler and its flags) hash to the value recorded beside the module.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { writeAtomically } from '../write-atomically.ts';

const runtimeDir = dirname(fileURLToPath(import.meta.url));
const sourceDir = join(runtimeDir, 'assembly');

export const RUNTIME_WASM_PATH = join(runtimeDir, 'build', 'runtime.wasm');
const hashPath = `${RUNTIME_WASM_PATH}.sha256`;

/**
 * Compiler flags. AssemblyScript's runtime is replaced by a bump allocator over the OPA heap
 * (rt/bump-runtime.ts) in the memory the host provides, and its `abort` by one that calls
 * `opa_abort`. No debug names: the module carries nothing the policies do not need.
 */
const COMPILER_FLAGS = [
  'index.ts',
  '--runtime', 'rt/bump-runtime',
  '--importMemory',
  '--use', 'abort=abort/runtimeAbort',
  '--noAssert',
  '-O3',
];

let loaded: Promise<Uint8Array<ArrayBuffer>> | undefined;

/**
 * The compiled runtime module, compiling it first if it is missing or stale. The sources are
 * checked once per process: hashing them at every policy compile cost a few milliseconds each,
 * and a running process never sees the runtime's sources change (a developer editing them starts
 * a new one). A failed load is retried by the next call.
 */
export function ensureRuntime(): Promise<Uint8Array<ArrayBuffer>> {
  loaded ??= loadOrCompile().catch((error: unknown) => {
    loaded = undefined;
    throw error;
  });
  return loaded;
}

async function loadOrCompile(): Promise<Uint8Array<ArrayBuffer>> {
  const hash = await sourceHash();
  const [recorded, existing] = await Promise.all([
    readFile(hashPath, 'utf8').catch(() => undefined),
    readFile(RUNTIME_WASM_PATH).catch(() => undefined),
  ]);
  if (existing !== undefined && recorded?.trim() === hash) return new Uint8Array(existing);

  const started = performance.now();
  const binary = await compile();
  await writeAtomically(RUNTIME_WASM_PATH, binary);
  await writeAtomically(hashPath, `${hash}\n`);
  const ms = Math.round(performance.now() - started);
  process.stderr.write(`gatehouse: compiled policy runtime (${binary.length} bytes) in ${ms} ms\n`);
  return binary;
}

async function compile(): Promise<Uint8Array<ArrayBuffer>> {
  // The compiler is large and needed only when the runtime sources change, so it loads lazily.
  const { default: asc } = await import('assemblyscript/asc');
  let binary: Uint8Array<ArrayBuffer> | undefined;
  const stderr = asc.createMemoryStream();
  const { error } = await asc.main(
    [...COMPILER_FLAGS, '--baseDir', sourceDir, '--outFile', 'runtime.wasm'],
    {
      stdout: asc.createMemoryStream(),
      stderr,
      writeFile: (name, contents) => {
        if (name.endsWith('.wasm') && typeof contents !== 'string') binary = new Uint8Array(contents);
      },
    },
  );
  if (error) throw new Error(`policy runtime failed to compile: ${error.message}\n${stderr.toString()}`);
  if (!binary) throw new Error('policy runtime compiled to nothing');
  return binary;
}

const ASC_VERSION: string = createRequire(import.meta.url)('assemblyscript/package.json').version;

/** Hash of every source file (path and content), the compiler version and the flags. */
async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(`assemblyscript ${ASC_VERSION}\n${COMPILER_FLAGS.join(' ')}\n`);
  for (const file of await listSources(sourceDir)) {
    hash.update(`${relative(sourceDir, file)}\n`);
    hash.update(await readFile(file));
  }
  return hash.digest('hex');
}

async function listSources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await listSources(path)));
    else if (entry.name.endsWith('.ts')) files.push(path);
  }
  return files;
}

