/**
 * A bundle's `/.manifest` and what OPA refuses on its account (bundle/bundle.go,
 * `validateAndInjectDefaults`): roots that overlap, a Rego module whose package or a data
 * document outside the roots, and a `wasm` entry naming a module the bundle lacks, an entrypoint
 * outside the roots, or an entrypoint twice. A manifest without `roots` owns all of `data`; one
 * with `"roots": []` owns nothing, and OPA refuses even its empty data document.
 *
 * Gatehouse serves a bundle's `/policy.wasm` only, so a `wasm` entry that maps an entrypoint to
 * another module is refused rather than left unanswered, and one mapping an entrypoint to
 * `/policy.wasm` must name an entrypoint the module has (checked once it is loaded).
 */
import { Lexer, type Token } from '../compiler/parse/lexer.ts';
import { isObject, ManifestDoc, parseShaped } from './bundle-schemas.ts';
import { BundleFormatError } from './errors.ts';

export const MANIFEST_MEMBER = '.manifest';
export const WASM_MEMBER = 'policy.wasm';

export interface BundleManifest {
  /** The bundle's revision, when the manifest gives a non-empty one. */
  revision: string | undefined;
  /** Roots without leading or trailing `/`; `[""]` owns everything. */
  roots: string[];
  /** The entrypoints the manifest maps to `/policy.wasm`. */
  wasmEntrypoints: string[];
}

const segments = (path: string): string[] => path.split('/');

/** OPA's rootContains: the root `""` contains everything, another root its own path and below. */
function rootContains(root: string[], other: string[]): boolean {
  if (root.length === 1 && root[0] === '') return true;
  return root.length <= other.length && root.every((segment, i) => segment === other[i]);
}

function rootPathsContain(roots: readonly string[], path: string): boolean {
  return roots.some((root) => rootContains(segments(root), segments(path)));
}

const describeRoots = (roots: readonly string[]): string => `[${roots.map((r) => JSON.stringify(r)).join(', ')}]`;

/**
 * Every document of `data` must lie under a root. An object outside them is walked into, as
 * OPA's check does, when some root's first segment is one of its path's segments; anything else
 * outside them is refused.
 */
function checkDataRoots(roots: readonly string[], value: unknown, path: string): void {
  if (rootPathsContain(roots, path)) return;
  if (isObject(value) && roots.some((root) => rootPathsContain(segments(path), root))) {
    for (const [key, child] of Object.entries(value)) checkDataRoots(roots, child, path === '' ? key : `${path}/${key}`);
    return;
  }
  throw new BundleFormatError(`manifest roots ${describeRoots(roots)} do not permit data at path '/${path}'`);
}

/**
 * The package of a Rego module as a data path (`package a.b["c"]` → `a/b/c`). Only the package
 * clause is read, with the compiler's lexer: the rest of the module is OPA's to compile, not ours.
 */
function packagePath(file: string, source: string): string {
  const lexer = new Lexer(file, source);
  const unreadable = () => new BundleFormatError(`${file}: cannot read the module's package clause`);
  const name = (token: Token) => {
    if (token.spaceBefore || (token.kind !== 'ident' && token.kind !== 'keyword')) throw unreadable();
    return token.text;
  };
  const keyword = lexer.next();
  if (keyword.kind !== 'keyword' || keyword.text !== 'package') throw unreadable();
  const first = lexer.next();
  if (first.kind !== 'ident') throw unreadable();
  const parts = [first.text];
  for (let token = lexer.next(); !token.spaceBefore && (token.text === '.' || token.text === '['); token = lexer.next()) {
    if (token.text === '.') {
      parts.push(name(lexer.next()));
      continue;
    }
    const key = lexer.next();
    if (key.kind !== 'string' || lexer.next().text !== ']') throw unreadable();
    parts.push(key.value);
  }
  return parts.join('/');
}

/** The bundle members' paths as the manifest names them (`/policy.wasm` and `policy.wasm` alike). */
const memberName = (path: string): string => path.replace(/^\/+/, '');

/** Reads `/.manifest` (an absent one owns everything) and checks its roots and `wasm` entries. */
export function readManifest(members: ReadonlyMap<string, Buffer>): BundleManifest {
  const content = members.get(MANIFEST_MEMBER);
  const manifest: ManifestDoc = content ? parseShaped(content.toString('utf8'), ManifestDoc, `/${MANIFEST_MEMBER}`, (m) => new BundleFormatError(m)) : {};
  const roots = (manifest.roots ?? ['']).map((root) => root.replace(/^\/+|\/+$/g, ''));
  roots.forEach((a, i) =>
    roots.slice(i + 1).forEach((b) => {
      if (rootContains(segments(a), segments(b)) || rootContains(segments(b), segments(a))) {
        throw new BundleFormatError(`manifest has overlapped roots: '${a}' and '${b}'`);
      }
    }),
  );

  const wasmEntrypoints: string[] = [];
  const seen = new Set<string>();
  for (const { entrypoint = '', module = '' } of manifest.wasm ?? []) {
    if (!members.has(memberName(module))) throw new BundleFormatError(`manifest references wasm module '${module}' but the module file does not exist`);
    if (!rootPathsContain(roots, entrypoint)) {
      throw new BundleFormatError(`manifest roots ${describeRoots(roots)} do not permit '${entrypoint}' entrypoint for wasm module '${module}'`);
    }
    if (seen.has(entrypoint)) throw new BundleFormatError(`entrypoint '${entrypoint}' cannot be used by more than one wasm module`);
    seen.add(entrypoint);
    if (memberName(module) !== WASM_MEMBER) {
      throw new BundleFormatError(`manifest maps entrypoint '${entrypoint}' to '${module}', and only /${WASM_MEMBER} is served`);
    }
    wasmEntrypoints.push(entrypoint);
  }
  const revision = manifest.revision || undefined;
  return { revision, roots, wasmEntrypoints };
}

/** Refuses Rego modules and data documents of the bundle that lie outside the manifest's roots. */
export function checkOwnership(manifest: BundleManifest, members: ReadonlyMap<string, Buffer>, data: Record<string, unknown>): void {
  const { roots } = manifest;
  for (const [path, content] of members) {
    if (!path.endsWith('.rego')) continue;
    const pkg = packagePath(`/${path}`, content.toString('utf8'));
    if (!rootPathsContain(roots, pkg)) {
      throw new BundleFormatError(`manifest roots ${describeRoots(roots)} do not permit 'package ${pkg.replaceAll('/', '.')}' in module '/${path}'`);
    }
  }
  checkDataRoots(roots, data, '');
}

/** Refuses a manifest mapping an entrypoint to `/policy.wasm` that the loaded module does not have. */
export function checkWasmEntrypoints(manifest: BundleManifest, entrypoints: ReadonlyMap<string, number>): void {
  const missing = manifest.wasmEntrypoints.filter((entrypoint) => !entrypoints.has(entrypoint));
  if (missing.length > 0) {
    throw new BundleFormatError(`manifest maps entrypoint(s) ${missing.map((e) => `'${e}'`).join(', ')} to /${WASM_MEMBER}, which has no such entrypoint`);
  }
}
