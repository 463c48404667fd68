/**
 * Rebuilds tap's test class when it was built with other plugins than package.json configures
 * (`"plugin": ["!@tapjs/typescript"]`: tests load TypeScript through tsx, see
 * register-typescript.js). tap notices the difference itself, but only rebuilds for the run after:
 * the first `npm test` after an install would start every test file with ts-node's loader as well
 * as tsx, which made a fresh CI run about 400 s slower. Checking costs half a second; building,
 * when needed, about 15.
 */
import { spawnSync } from 'node:child_process';
import { TapConfig } from '@tapjs/config';
import { signature } from '@tapjs/test';

const config = await TapConfig.load();
if (config.pluginSignature !== signature) {
  process.stderr.write('tap was built with other plugins than package.json configures: rebuilding it (tap build)\n');
  const { status } = spawnSync('npx', ['tap', 'build'], { stdio: 'inherit' });
  process.exit(status ?? 1);
}
