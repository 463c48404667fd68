/**
 * Compiled policies kept on disk, so that a restart, a second instance on the same host, or a hot
 * reload back to an earlier source does not compile unchanged Rego again. Compiling the bundled
 * policies costs about 1.5 s of CPU, and loading binaryen for it 0.7 s more: most of a server's
 * start (measured with `node --cpu-prof` on `gatehouse serve`).
 *
 * An entry is addressed by what it was compiled from: the compiler itself (the hash of its own
 * files, the runtime it links and binaryen's version), the entrypoints, and every source's path
 * and text. An entry can therefore only be what compiling those sources would produce now, and
 * nothing is ever invalidated. Each entry records the SHA-256 of its module, checked on every read:
 * an entry that is missing, unreadable or altered is compiled again and written anew.
 *
 * Whoever can write the directory can change what the policies decide, as whoever can write the
 * policies can: it is created 0700, and docs/security.md says to keep it that private.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureRuntime } from '../runtime/build.ts';
import { writeAtomically } from '../write-atomically.ts';

/** What a compile produced that the build keeps: the module and what the manifest and stats say of it. */
export interface CachedCompile {
  wasm: Uint8Array;
  entrypoints: string[];
  ir: string;
  hostBuiltins: string[];
}

/** What a compile is made from. */
export interface CompileInputs {
  sources: ReadonlyArray<{ path: string; text: string }>;
  entrypoints: readonly string[];
}

interface EntryHeader {
  moduleHash: string;
  entrypoints: string[];
  ir: string;
  hostBuiltins: string[];
}

/**
 * Where a server keeps the cache when not told: `$XDG_CACHE_HOME/gatehouse/policies`, or
 * `~/.cache/gatehouse/policies` (the temporary directory when there is no home).
 */
export function defaultCompileCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || (homedir() ? path.join(homedir(), '.cache') : tmpdir());
  return path.join(base, 'gatehouse', 'policies');
}

function sha256(parts: Iterable<string | Uint8Array>): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name)).sort();
}

let fingerprint: Promise<string> | undefined;

/**
 * The compiler's identity: its own files (TypeScript in a checkout, JavaScript in the package),
 * the runtime module it links, and binaryen's version. Computed once per process.
 */
function compilerFingerprint(): Promise<string> {
  fingerprint ??= (async () => {
    const compilerDir = path.dirname(fileURLToPath(import.meta.url));
    const files = await filesUnder(compilerDir);
    const contents = await Promise.all(files.map((f) => readFile(f)));
    const binaryenVersion: string = createRequire(import.meta.url)('binaryen/package.json').version;
    return sha256([
      ...files.flatMap((f, i) => [path.relative(compilerDir, f), '\0', contents[i]!, '\0']),
      await ensureRuntime(),
      '\0',
      binaryenVersion,
    ]);
  })();
  return fingerprint;
}

/** The compiled-policy cache in one directory (see the module comment). */
export class CompileCache {
  constructor(readonly dir: string) {}

  private async keyOf(inputs: CompileInputs): Promise<string> {
    return sha256([
      await compilerFingerprint(),
      '\0',
      JSON.stringify(inputs.entrypoints),
      '\0',
      ...inputs.sources.flatMap((s) => [s.path, '\0', s.text, '\0']),
    ]);
  }

  /** The compile of `inputs` when the cache holds it intact; undefined otherwise. */
  async get(inputs: CompileInputs): Promise<CachedCompile | undefined> {
    const base = path.join(this.dir, await this.keyOf(inputs));
    try {
      const [headerText, wasm] = await Promise.all([readFile(`${base}.json`, 'utf8'), readFile(`${base}.wasm`)]);
      const header = JSON.parse(headerText) as EntryHeader;
      if (header.moduleHash !== sha256([wasm])) return undefined;
      return { wasm: new Uint8Array(wasm), entrypoints: header.entrypoints, ir: header.ir, hostBuiltins: header.hostBuiltins };
    } catch {
      return undefined;
    }
  }

  /**
   * Keeps `compiled` as the compile of `inputs`. Best effort: a cache that cannot be written (a
   * read-only home, a full disk) costs only the next compile, so failures are swallowed. Each
   * file is written beside its place and renamed in, so a reader sees a whole file or none, and
   * the header that makes the entry valid is renamed in last.
   */
  async put(inputs: CompileInputs, compiled: CachedCompile): Promise<void> {
    try {
      const base = path.join(this.dir, await this.keyOf(inputs));
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const header: EntryHeader = { moduleHash: sha256([compiled.wasm]), entrypoints: compiled.entrypoints, ir: compiled.ir, hostBuiltins: compiled.hostBuiltins };
      await writeAtomically(`${base}.wasm`, compiled.wasm, 0o600);
      await writeAtomically(`${base}.json`, JSON.stringify(header), 0o600);
    } catch {
      // See above: the next start compiles again.
    }
  }
}
