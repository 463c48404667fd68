#!/usr/bin/env node
// binaryen ships as one 14 MB module; loaded after tsx registers, tsx would transform it on every
// start (about 9 s of CPU). Loading it first keeps it out of tsx's hands.
await import('binaryen');
// The package ships TypeScript sources; tsx registers the loader so the CLI runs them directly.
const { register } = await import('tsx/esm/api');
register();
await import('../cli/main.ts');
