/**
 * Reading bundles made by `opa build -t wasm`: a gzipped tar holding `/policy.wasm`, data
 * documents (`data.json`, or `data.yaml`/`data.yml`, each placed in `data` at the path of its
 * directory, `/data.json` at the root), the Rego sources, a `/.manifest` (its revision, roots and
 * `wasm` entries: bundle-manifest.ts) and, when signed, `/.signatures.json`
 * (bundle-signature.ts). The signature is checked before anything else of the bundle is read.
 */
import { readFile } from 'node:fs/promises';
import { Parser, type ReadEntry } from 'tar';
import { yamlUnmarshal } from './builtins/go-yaml-decode.ts';
import type { BundleVerificationKeys } from './bundle-keys.ts';
import { checkOwnership, readManifest, WASM_MEMBER, type BundleManifest } from './bundle-manifest.ts';
import { isObject } from './bundle-schemas.ts';
import { verifyBundleSignature } from './bundle-signature.ts';
import { BundleFormatError } from './errors.ts';
import type { PolicyModuleText } from './registry.ts';

export interface OpaBundle {
  wasm: Uint8Array;
  /** The merged data documents; `{}` when the bundle has none. */
  data: Record<string, unknown>;
  manifest: BundleManifest;
  /** The Rego modules the bundle carries (`opa build` puts the sources beside the module), by path. */
  modules: PolicyModuleText[];
}

/** Archive member names as OPA writes them (`/policy.wasm`) or as other tars do (`./policy.wasm`). */
function memberPath(entry: ReadEntry): string {
  return entry.path.replace(/^(\.?\/)+/, '');
}

async function readMembers(archive: Buffer): Promise<Map<string, Buffer>> {
  const members = new Map<string, Buffer>();
  const parser = new Parser({
    strict: true,
    onReadEntry(entry) {
      if (entry.type !== 'File') return;
      const chunks: Buffer[] = [];
      entry.on('data', (chunk: Buffer) => chunks.push(chunk));
      entry.on('end', () => members.set(memberPath(entry), Buffer.concat(chunks)));
    },
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('error', reject);
    parser.on('close', () => resolve());
    parser.end(archive);
  });
  return members;
}

/** Places `doc` at `path` inside `root`, merging objects that meet on the way. */
function mergeAt(root: Record<string, unknown>, path: string[], doc: unknown, file: string): void {
  if (path.length === 0) {
    if (!isObject(doc)) throw new BundleFormatError(`${file}: the root data document must be an object`);
    for (const [key, value] of Object.entries(doc)) mergeAt(root, [key], value, file);
    return;
  }
  const [head, ...rest] = path as [string, ...string[]];
  const existing = root[head];
  if (rest.length === 0 && !isObject(doc)) {
    if (existing !== undefined) throw new BundleFormatError(`${file}: data conflicts at '${head}'`);
    root[head] = doc;
    return;
  }
  if (existing !== undefined && !isObject(existing)) throw new BundleFormatError(`${file}: data conflicts at '${head}'`);
  const child = (existing as Record<string, unknown> | undefined) ?? {};
  root[head] = child;
  mergeAt(child, rest, doc, file);
}

const DATA_FILES = ['data.json', 'data.yaml', 'data.yml'];

/** A data document's value, or undefined when `path` is not a data document. */
function dataDocument(path: string, content: Buffer): unknown {
  const base = path.slice(path.lastIndexOf('/') + 1);
  if (!DATA_FILES.includes(base)) return undefined;
  const text = content.toString('utf8');
  // YAML as OPA reads it (go-yaml v2, then JSON), the same decoder the yaml builtins use.
  const json = base === 'data.json' ? text : yamlUnmarshal(text);
  if (json === undefined) throw new BundleFormatError(`/${path} is not valid YAML`);
  try {
    return JSON.parse(json);
  } catch (err) {
    throw new BundleFormatError(`/${path} is not valid JSON (${(err as Error).message})`);
  }
}

/**
 * Reads and validates the bundle at `file`, checking its signature against `verificationKeys`
 * (see bundle-signature.ts for when a bundle is refused). Throws BundleFormatError for a
 * malformed bundle and BundleSignatureError for a signature that does not check out, with a
 * message that leaves naming the bundle file to the caller.
 */
export async function readOpaBundle(file: string, verificationKeys?: BundleVerificationKeys): Promise<OpaBundle> {
  let members: Map<string, Buffer>;
  try {
    members = await readMembers(await readFile(file));
  } catch (err) {
    throw new BundleFormatError(`not a gzipped tar archive (${(err as Error).message})`);
  }
  await verifyBundleSignature(members, verificationKeys);
  const wasm = members.get(WASM_MEMBER);
  if (!wasm) throw new BundleFormatError(`no /${WASM_MEMBER} in the bundle (build it with 'opa build -t wasm')`);
  const manifest = readManifest(members);
  const data: Record<string, unknown> = {};
  for (const [path, content] of members) {
    const doc = dataDocument(path, content);
    if (doc !== undefined) mergeAt(data, path.split('/').slice(0, -1), doc, `/${path}`);
  }
  checkOwnership(manifest, members, data);
  const modules = [...members]
    .filter(([path]) => path.endsWith('.rego'))
    .map(([path, content]) => ({ path, text: content.toString('utf8') }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { wasm: new Uint8Array(wasm), data, manifest, modules };
}
