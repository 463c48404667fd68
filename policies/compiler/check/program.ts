import type { Module, Pos, Rule } from '../parse/ast.ts';
import { CompileError } from '../errors.ts';

/** One definition of a rule together with the module it was written in (for its imports). */
export interface Definition {
  rule: Rule;
  module: Module;
}

/** All definitions of one rule path (`data.a.b.allow`), across every module of its package. */
export interface RuleGroup {
  /** Path below `data`: ["a", "b", "allow"]. */
  path: string[];
  kind: Rule['kind'];
  /** Number of arguments (functions only, else 0). */
  arity: number;
  definitions: Definition[];
  defaultRule?: Definition;
}

/** A node of the `data` namespace: packages hold children, rule paths hold a group. */
export interface DataNode {
  children: Map<string, DataNode>;
  group?: RuleGroup;
  /**
   * A rule head of the parent package starts with this name (`p` of `p.q.r := 1`), so inside
   * that package the name refers to this node, group or not.
   */
  named?: boolean;
}

/** What an import alias stands for: a root (`data` or `input`) and the keys below it. */
export interface ImportTarget {
  root: 'data' | 'input';
  path: string[];
}

/** The checked program: every module, the rule tree, and each module's import aliases. */
export interface Program {
  modules: Module[];
  root: DataNode;
  imports: Map<Module, Map<string, ImportTarget>>;
}

const KIND_NAMES: Record<Rule['kind'], string> = {
  complete: 'a complete rule',
  partialSet: 'a partial set rule',
  partialObject: 'a partial object rule',
  partialObjectOfSets: 'a partial object of sets',
  function: 'a function',
};

function fail(message: string, pos: Pos, module: Module): never {
  throw new CompileError('check', message, pos, module.source);
}

function nodeAt(root: DataNode, path: string[]): DataNode {
  let node = root;
  for (const key of path) {
    let next = node.children.get(key);
    if (!next) {
      next = { children: new Map() };
      node.children.set(key, next);
    }
    node = next;
  }
  return node;
}

/** Finds the node at `path`, or undefined when no rule or package lives there. */
export function findNode(root: DataNode, path: readonly string[]): DataNode | undefined {
  let node: DataNode | undefined = root;
  for (const key of path) {
    node = node.children.get(key);
    if (!node) return undefined;
  }
  return node;
}

/**
 * Whether other rules may define keys of the group's value: as in OPA, those of a partial object
 * (of sets) merge with the keys its own definitions produce, a key both give being a conflict.
 */
export function takesKeysFromBelow(kind: Rule['kind']): boolean {
  return kind === 'partialObject' || kind === 'partialObjectOfSets';
}

/** The first rule on the way to `path`, excluding `path` itself, whose whole value lies below it. */
function ruleAbove(root: DataNode, path: readonly string[]): RuleGroup | undefined {
  let node: DataNode | undefined = root;
  for (const key of path.slice(0, -1)) {
    node = node.children.get(key);
    if (!node) return undefined;
    if (node.group && !takesKeysFromBelow(node.group.kind)) return node.group;
  }
  return undefined;
}

function addRule(root: DataNode, module: Module, rule: Rule): void {
  const path = [...module.package, ...rule.path];
  const name = rule.path.join('.');
  const above = ruleAbove(root, path);
  if (above) fail(`rule ${path.join('.')} conflicts with rule ${above.path.join('.')}, which holds its whole value`, rule.pos, module);
  nodeAt(root, [...module.package, rule.name]).named = true;
  const node = nodeAt(root, path);
  if (node.children.size > 0 && !takesKeysFromBelow(rule.kind)) {
    fail(`rule ${path.join('.')} conflicts with the rules or packages below it`, rule.pos, module);
  }
  const arity = rule.args?.length ?? 0;
  let group = node.group;
  if (!group) {
    group = { path, kind: rule.kind, arity, definitions: [] };
    node.group = group;
  } else if (group.kind !== rule.kind) {
    fail(
      `rule ${name} is defined as ${KIND_NAMES[group.kind]} and as ${KIND_NAMES[rule.kind]}`,
      rule.pos,
      module,
    );
  } else if (group.arity !== arity) {
    fail(`function ${name} is defined with ${group.arity} and with ${arity} arguments`, rule.pos, module);
  }
  if (rule.default) {
    if (rule.kind !== 'complete' && rule.kind !== 'function') {
      fail(`default can only be used with complete rules and functions`, rule.pos, module);
    }
    if (group.defaultRule) fail(`multiple default rules named ${name} found`, rule.pos, module);
    group.defaultRule = { rule, module };
  } else {
    group.definitions.push({ rule, module });
  }
}

function resolveImports(module: Module): Map<string, ImportTarget> {
  const aliases = new Map<string, ImportTarget>();
  for (const imp of module.imports) {
    const [root, ...path] = imp.path;
    if (root === 'rego' || root === 'future') continue;
    if (root !== 'data' && root !== 'input') {
      fail(`import must begin with data or input, found ${root}`, imp.pos, module);
    }
    const alias = imp.alias ?? path[path.length - 1] ?? root;
    if (aliases.has(alias)) fail(`import ${alias} is declared more than once`, imp.pos, module);
    aliases.set(alias, { root, path });
  }
  return aliases;
}

/** Builds the rule tree of a set of parsed modules and checks their structure. */
export function checkProgram(modules: Module[]): Program {
  const root: DataNode = { children: new Map() };
  const imports = new Map<Module, Map<string, ImportTarget>>();
  for (const module of modules) {
    imports.set(module, resolveImports(module));
    for (const rule of module.rules) addRule(root, module, rule);
  }
  for (const module of modules) {
    const rule = findNode(root, module.package)?.group ?? ruleAbove(root, module.package);
    if (rule) {
      fail(`package ${module.package.join('.')} conflicts with rule ${rule.path.join('.')}`, module.packagePos, module);
    }
  }
  return { modules, root, imports };
}
