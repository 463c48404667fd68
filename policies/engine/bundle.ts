/**
 * Reading bundles made by `opa build -t wasm`: a gzipped tar holding `/policy.wasm`, optional
 * `data.json` documents (each placed in `data` at the path of its directory, `/data.json` at the
 * root) and a `/.manifest` this engine does not need.
 */
import { readFile } from 'node:fs/promises';
import { Parser, type ReadEntry } from 'tar';
import { BundleFormatError } from './errors.ts';

export interface OpaBundle {
  wasm: Uint8Array;
  /** The merged data documents; `{}` when the bundle has none. */
  data: Record<string, unknown>;
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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

/**
 * Reads and validates the bundle at `file`. Throws BundleFormatError for a malformed one, with a
 * message that leaves naming the bundle file to the caller.
 */
export async function readOpaBundle(file: string): Promise<OpaBundle> {
  let members: Map<string, Buffer>;
  try {
    members = await readMembers(await readFile(file));
  } catch (err) {
    throw new BundleFormatError(`not a gzipped tar archive (${(err as Error).message})`);
  }
  const wasm = members.get('policy.wasm');
  if (!wasm) throw new BundleFormatError(`no /policy.wasm in the bundle (build it with 'opa build -t wasm')`);
  const data: Record<string, unknown> = {};
  for (const [path, content] of members) {
    if (path !== 'data.json' && !path.endsWith('/data.json')) continue;
    let doc: unknown;
    try {
      doc = JSON.parse(content.toString('utf8'));
    } catch (err) {
      throw new BundleFormatError(`/${path} is not valid JSON (${(err as Error).message})`);
    }
    mergeAt(data, path.split('/').slice(0, -1), doc, `/${path}`);
  }
  return { wasm: new Uint8Array(wasm), data };
}
