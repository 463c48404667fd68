import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CompileCache, defaultCompileCacheDir } from '../../policies/compiler/compile-cache.ts';
import { PolicyEngine } from '../../policies/engine/index.ts';

/**
 * The real policy engine over the bundled Rego policies, compiled once per test process (or
 * taken from the compile cache a server uses). Decision tests run against it: their policy
 * results are the policies' own.
 */
export const BUNDLED_POLICIES = fileURLToPath(new URL('../../policies/rego', import.meta.url));

let engine: Promise<PolicyEngine> | undefined;

export function bundledEngine(): Promise<PolicyEngine> {
  engine ??= PolicyEngine.open({
    sourceDir: BUNDLED_POLICIES,
    buildDir: mkdtempSync(join(tmpdir(), 'gatehouse-policies-')),
    compileCache: new CompileCache(defaultCompileCacheDir()),
  });
  return engine;
}
