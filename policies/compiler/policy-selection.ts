/**
 * Which Rego sources a build makes into policies, under which names, with which entrypoints.
 *
 * By default a directory of versioned policies maps to names by file: every `<name>-v<N>.rego`
 * is the policy `<name>-v<N>`, its entrypoints the package document (entrypoint 0, what a
 * decision evaluates) and each rule of its package; every other file is a library.
 *
 * With entrypoints picked (`-e`, as `opa build -e`), only the policies holding them are built,
 * each with the entrypoints under its package in the order given (the first is entrypoint 0).
 * An entrypoint belongs to the module whose package is the longest prefix of it; that module's
 * file names the policy: `<name>-v<N>` as above, otherwise the file's name without `.rego`, so
 * any file name works.
 */
import path from 'node:path';
import { CompileError } from './errors.ts';
import type { Module } from './parse/ast.ts';
import type { RegoSource } from './source-tree.ts';

/** `<name>-v<N>.rego` → `<name>-v<N>`. */
const POLICY_FILE = /^(.+-v\d+)\.rego$/;

/** The policy a Rego file defines by the versioned naming, or undefined for a library. */
export function policyNameOf(file: string): string | undefined {
  return POLICY_FILE.exec(path.basename(file))?.[1];
}

/** A policy to build: its name, the module that defines it (an index into the sources), its entrypoints. */
export interface SelectedPolicy {
  name: string;
  index: number;
  entrypoints: string[];
}

/** Entrypoint 0 is the package document; then every rule of the package that is not a function. */
export function defaultEntrypoints(packagePath: string[], modules: Module[]): string[] {
  const pkg = packagePath.join('/');
  const rules = new Set<string>();
  for (const m of modules) {
    if (m.package.join('/') !== pkg) continue;
    for (const rule of m.rules) if (rule.kind !== 'function') rules.add(rule.name);
  }
  return [pkg, ...[...rules].map((r) => `${pkg}/${r}`)];
}

/** The error for a second file defining the policy `name`. */
export function definedTwice(name: string, first: string, source: RegoSource, module: Module): CompileError {
  return new CompileError('check', `policy '${name}' is defined twice: ${first} and ${source.relative}`, module.packagePos, source.text);
}

/**
 * Adds `policy` unless another file already took its name; `errors` gets the clash. Returns
 * the policy now holding the name.
 */
function claim(byName: Map<string, SelectedPolicy>, policy: SelectedPolicy, sources: RegoSource[], modules: Module[], errors: CompileError[]): SelectedPolicy {
  const other = byName.get(policy.name);
  if (!other) {
    byName.set(policy.name, policy);
    return policy;
  }
  if (other.index !== policy.index) {
    errors.push(definedTwice(policy.name, sources[other.index]!.relative, sources[policy.index]!, modules[policy.index]!));
  }
  return other;
}

/** The versioned policy files of `sources` (parsed as `modules`), with their default entrypoints. */
export function policiesByFileName(sources: RegoSource[], modules: Module[]): { policies: SelectedPolicy[]; errors: CompileError[] } {
  const byName = new Map<string, SelectedPolicy>();
  const errors: CompileError[] = [];
  sources.forEach((source, index) => {
    const name = policyNameOf(source.relative);
    if (name) claim(byName, { name, index, entrypoints: defaultEntrypoints(modules[index]!.package, modules) }, sources, modules, errors);
  });
  return { policies: [...byName.values()], errors };
}

/** `data.a.b` or `a/b` (as `opa build -e` takes it) → `a/b`. */
export function entrypointPath(entrypoint: string): string {
  const slashed = entrypoint.startsWith('data.') ? entrypoint.slice('data.'.length).replaceAll('.', '/') : entrypoint;
  return slashed.split('/').filter((k) => k.length > 0).join('/');
}

const startsWithPath = (keys: string[], prefix: string[]): boolean => prefix.every((k, i) => keys[i] === k);

/** The index of the module an entrypoint belongs to (see the module comment), or -1 when it names nothing. */
function ownerOf(keys: string[], modules: Module[]): number {
  let owner: number | undefined;
  modules.forEach((m, i) => {
    if (!startsWithPath(keys, m.package)) return;
    const below = keys.slice(m.package.length);
    const named = below.length === 0 || m.rules.some((r) => startsWithPath(below, r.path) || startsWithPath(r.path, below));
    if (named && (owner === undefined || m.package.length > modules[owner]!.package.length)) owner = i;
  });
  // A parent of packages (`-e gatehouse`): the first module below it.
  return owner ?? modules.findIndex((m) => startsWithPath(m.package, keys) && m.package.length > keys.length);
}

/**
 * The policies holding `entrypoints` (see the module comment). An entrypoint that names no
 * package or rule of the sources is an error.
 */
export function policiesByEntrypoints(sources: RegoSource[], modules: Module[], entrypoints: string[]): { policies: SelectedPolicy[]; errors: CompileError[] } {
  const byName = new Map<string, SelectedPolicy>();
  const errors: CompileError[] = [];
  for (const entrypoint of entrypoints) {
    const slashed = entrypointPath(entrypoint);
    const index = slashed === '' ? -1 : ownerOf(slashed.split('/'), modules);
    if (index < 0) {
      errors.push(new CompileError('check', `entrypoint ${entrypoint}: no package or rule data.${slashed.replaceAll('/', '.')} in the sources`));
      continue;
    }
    const source = sources[index]!;
    const name = policyNameOf(source.relative) ?? path.basename(source.relative, '.rego');
    const policy = claim(byName, { name, index, entrypoints: [] }, sources, modules, errors);
    if (policy.index === index && !policy.entrypoints.includes(slashed)) policy.entrypoints.push(slashed);
  }
  return { policies: [...byName.values()], errors };
}
