#!/usr/bin/env node
import { existsSync } from 'node:fs';

// A checkout runs the TypeScript sources; the packed package ships them compiled in dist/.
if (existsSync(new URL('../cli/main.ts', import.meta.url))) {
  // binaryen ships as one 14 MB module; loaded after tsx registers, tsx would transform it on every
  // start (about 9 s of CPU). Loading it first keeps it out of tsx's hands.
  await import('binaryen');
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/main.ts');
} else {
  await import('../dist/cli/main.js');
}
