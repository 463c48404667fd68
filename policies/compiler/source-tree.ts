/**
 * What a policy source directory holds: Rego modules (policies and libraries), Rego tests, OPA
 * bundles dropped in beside them, and the base data document.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SourceFile } from './index.ts';

/** A Rego source with its path relative to the source directory. */
export interface RegoSource extends SourceFile {
  /** Relative to the source directory, with `/` separators. */
  relative: string;
}

export interface SourceTree {
  /** Every non-test `.rego` file, in path order. */
  modules: RegoSource[];
  /** Every `*_test.rego` file, in path order. */
  tests: RegoSource[];
  /** `*.tar.gz` bundles (absolute paths), in path order. */
  bundles: string[];
  /** `data.json` at the top of the directory, when there is one. */
  dataFile?: string;
}

const TEST_SUFFIX = '_test.rego';

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

/**
 * Reads the source directory `dir` recursively. `exclude`, when inside `dir`, is skipped (a build
 * directory placed among the sources must not feed the next build).
 */
export async function readSourceTree(dir: string, exclude?: string): Promise<SourceTree> {
  const excluded = exclude ? path.relative(dir, exclude).split(path.sep).join('/') : undefined;
  const files = (await listFiles(dir))
    .filter((f) => !excluded || excluded.startsWith('..') || (f !== excluded && !f.startsWith(`${excluded}/`)))
    .sort();
  const tree: SourceTree = { modules: [], tests: [], bundles: [] };
  for (const relative of files) {
    const full = path.join(dir, relative);
    if (relative.endsWith('.rego')) {
      const source: RegoSource = { path: full, relative, text: await readFile(full, 'utf8') };
      (isTestFile(relative) ? tree.tests : tree.modules).push(source);
    } else if (relative.endsWith('.tar.gz')) {
      tree.bundles.push(full);
    } else if (relative === 'data.json') {
      tree.dataFile = full;
    }
  }
  return tree;
}
