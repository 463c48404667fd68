/**
 * `npm run build` (run by `npm pack` and `npm publish`): the package's JavaScript and type
 * declarations in dist/, what an installed package runs. `npm start` and `npm test` run the
 * TypeScript sources instead. Modules find some files beside themselves (the console's page, the
 * bundled Rego, the policy runtime's sources and its compiled module, keyed by their hash), so
 * those are copied to the same places under dist/: the runtime is compiled here, not on a user's
 * first start.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ensureRuntime } from '../policies/runtime/build.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = `${root}dist`;
const ASSETS = ['console', 'policies/rego', 'policies/runtime/assembly', 'policies/runtime/build'];

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
await ensureRuntime();
for (const path of ASSETS) cpSync(`${root}${path}`, `${dist}/${path}`, { recursive: true });
