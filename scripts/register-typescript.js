/**
 * Lets a checkout run its TypeScript sources (`node --import=./scripts/register-typescript.js`, or
 * imported first thing): registers tsx, then a hook that hands binaryen to Node as it is.
 *
 * tsx scans every ES module it loads for dynamic imports; binaryen is one 14 MB module, and the
 * scan costs about 9 s of CPU on each start. Preloading binaryen before tsx avoids that but costs
 * 0.7 s in every process, most of which never compile Rego. With the hook, binaryen loads at
 * plain-Node speed, and only in a process that imports it.
 */
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

registerTsx();
// Registered after tsx, so its load hook runs before tsx's: the last one registered runs first.
register('./untransformed-binaryen-hook.js', import.meta.url, { data: import.meta.resolve('binaryen') });
