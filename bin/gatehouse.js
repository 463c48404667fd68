#!/usr/bin/env node
import { existsSync } from 'node:fs';

// A checkout runs the TypeScript sources; the packed package ships them compiled in dist/.
if (existsSync(new URL('../cli/main.ts', import.meta.url))) {
  await import('../scripts/register-typescript.js');
  await import('../cli/main.ts');
} else {
  await import('../dist/cli/main.js');
}
