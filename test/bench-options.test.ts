import path from 'node:path';
import t from 'tap';
import { parseHarnessOptions, UsageError } from '../bench/lib/harness-options.ts';

t.test('only a full run writes to bench/results; partial runs cannot replace its summary', async (t) => {
  t.equal(parseHarnessOptions([], '/repo').outDir, path.resolve('/repo/bench/results'));
  t.equal(parseHarnessOptions(['--check'], '/repo').outDir, path.resolve('/repo/bench/results'));
  t.equal(parseHarnessOptions(['--scenario', 'memory'], '/repo').outDir, path.resolve('/repo/bench/results/partial'));
  t.equal(parseHarnessOptions(['--quick'], '/repo').outDir, path.resolve('/repo/bench/results/partial'));
  t.equal(parseHarnessOptions(['--scenario', 'memory', '--out', '/tmp/x'], '/repo').outDir, path.resolve('/tmp/x'));
});

t.test('bad numbers are usage errors that name the option', async (t) => {
  let thrown: unknown;
  try {
    parseHarnessOptions(['--duration', '0'], '/repo');
  } catch (error) {
    thrown = error;
  }
  t.ok(thrown instanceof UsageError, 'a UsageError (printed with the usage text, exit 2)');
  t.match((thrown as Error).message, /--duration expects a positive number, got "0"/);
  t.throws(() => parseHarnessOptions(['--connections', '2.5'], '/repo'), /--connections expects a positive integer/);
});
