/**
 * What the policy sources named on a command line (or a server's policy directory) hold: Rego
 * modules (policies and libraries), Rego tests, OPA bundles dropped in beside them, and the base
 * data document. Directories are read recursively; files are taken whatever their name.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SourceFile } from './index.ts';

/** A Rego source with its path relative to the sources' base directory (see `readSources`). */
export interface RegoSource extends SourceFile {
  /** Relative to the base directory, with `/` separators. */
  relative: string;
}

export interface SourceTree {
  /** Every non-test `.rego` file, in path order. */
  modules: RegoSource[];
  /** Every `*_test.rego` file, in path order. */
  tests: RegoSource[];
  /** `*.tar.gz` bundles, in path order. */
  bundles: string[];
  /** The base data document: `data.json` at the top of a directory, or a `.json` file named. */
  dataFile?: string;
}

const TEST_SUFFIX = '_test.rego';
const DATA_FILE = 'data.json';

/** Whether a Rego file is a test module (`opa test` convention). */
export function isTestFile(file: string): boolean {
  return file.endsWith(TEST_SUFFIX);
}

async function listFiles(root: string, relative = ''): Promise<string[]> {
  const entries = await readdir(path.join(root, relative), { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    // Hidden entries are editor and VCS artefacts, never sources.
    if (entry.name.startsWith('.')) continue;
    const child = relative ? `${relative}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...(await listFiles(root, child)));
    else if (entry.isFile()) files.push(child);
  }
  return files;
}

/** The deepest directory holding every one of `dirs` (absolute paths). */
function commonDirectory(dirs: string[]): string {
  return dirs.reduce((common, dir) => {
    while (path.relative(common, dir).startsWith('..')) common = path.dirname(common);
    return common;
  });
}

/** A file of the sources: where it is read from, and what kind of source it is. */
interface FoundFile {
  path: string;
  kind: 'rego' | 'bundle' | 'data';
}

/** The sources inside `dir`, `exclude` (when inside it) left out. */
async function filesOfDirectory(dir: string, exclude?: string): Promise<FoundFile[]> {
  const excluded = exclude ? path.relative(dir, exclude).split(path.sep).join('/') : undefined;
  const found: FoundFile[] = [];
  for (const relative of await listFiles(dir)) {
    if (excluded && !excluded.startsWith('..') && (relative === excluded || relative.startsWith(`${excluded}/`))) continue;
    const full = path.join(dir, relative);
    if (relative.endsWith('.rego')) found.push({ path: full, kind: 'rego' });
    else if (relative.endsWith('.tar.gz')) found.push({ path: full, kind: 'bundle' });
    else if (relative === DATA_FILE) found.push({ path: full, kind: 'data' });
  }
  return found;
}

function kindOfNamedFile(file: string): FoundFile['kind'] {
  if (file.endsWith('.rego')) return 'rego';
  if (file.endsWith('.tar.gz')) return 'bundle';
  if (file.endsWith('.json')) return 'data';
  throw new Error(`${file}: not a Rego module (.rego), a data document (.json) or a bundle (.tar.gz)`);
}

/**
 * Reads the sources `paths` name: each directory recursively (its `.rego` files, its `*.tar.gz`
 * bundles, and `data.json` at its top), each file by its extension whatever its name. Relative
 * paths are taken from the deepest directory holding them all (the directory itself when only
 * one is named). `exclude`, when inside a directory, is skipped: a build directory placed among
 * the sources must not feed the next build. Throws when a path does not exist, a file is of no
 * known kind, or two data documents are found.
 */
export async function readSources(paths: string[], exclude?: string): Promise<SourceTree> {
  const found: FoundFile[] = [];
  const bases: string[] = [];
  for (const p of paths) {
    const stats = await stat(p).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? new Error(`${p}: no such file or directory`) : err;
    });
    if (stats.isDirectory()) {
      found.push(...(await filesOfDirectory(p, exclude)));
      bases.push(path.resolve(p));
    } else {
      found.push({ path: p, kind: kindOfNamedFile(p) });
      bases.push(path.dirname(path.resolve(p)));
    }
  }
  const base = commonDirectory(bases);
  const relativeOf = (file: string): string => path.relative(base, path.resolve(file)).split(path.sep).join('/');
  // A file named and also inside a directory named is read once.
  const byRelative = new Map(found.map((f) => [relativeOf(f.path), f]));
  const files = [...byRelative]
    .map(([relative, f]) => ({ ...f, relative }))
    .sort((a, b) => (a.relative < b.relative ? -1 : a.relative > b.relative ? 1 : 0));

  const tree: SourceTree = { modules: [], tests: [], bundles: [] };
  for (const file of files) {
    if (file.kind === 'rego') {
      const source: RegoSource = { path: file.path, relative: file.relative, text: await readFile(file.path, 'utf8') };
      (isTestFile(file.relative) ? tree.tests : tree.modules).push(source);
    } else if (file.kind === 'bundle') {
      tree.bundles.push(file.path);
    } else {
      if (tree.dataFile) throw new Error(`two data documents: ${tree.dataFile} and ${file.path}; a build takes one`);
      tree.dataFile = file.path;
    }
  }
  return tree;
}

/** The sources of one directory (see `readSources`). */
export function readSourceTree(dir: string, exclude?: string): Promise<SourceTree> {
  return readSources([dir], exclude);
}
