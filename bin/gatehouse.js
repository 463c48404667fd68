#!/usr/bin/env node
// The package ships TypeScript sources; tsx registers the loader so the CLI runs them directly.
import { register } from 'tsx/esm/api';
register();
await import('../cli/main.ts');
