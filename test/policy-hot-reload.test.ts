/**
 * Hot reload under the ways editors save a file: in place, truncate then write, a temporary
 * renamed over the original (`sed -i`, VS Code), the original renamed to a backup and a new file
 * written (vim), delete then recreate; and new files and directories appearing while the engine
 * watches. A broken save leaves the last good module serving and logs where the error is; the
 * fixed save swaps in.
 */
import { appendFile, mkdir, rename, truncate, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { PolicyEngine, type ReloadOutcome } from '../policies/engine/index.ts';
import { watchSources } from '../policies/engine/source-watcher.ts';
import { capturingLog } from './helpers/engine-log.ts';

t.setTimeout(300_000);

const policy = (answer: string): string => `package gatehouse.hot.v1\n\nanswer := "${answer}"\n`;

/** At most this many reloads are waited for before a test gives up on its condition. */
const MAX_RELOADS = 10;

/**
 * Resolves with the reloads seen once one has brought the engine to where `holds` says (one save
 * can take several reloads: a delete, then a create), or after MAX_RELOADS without it.
 */
function reloadsUntil(engine: PolicyEngine, holds: () => boolean): Promise<ReloadOutcome[]> {
  return new Promise((resolve) => {
    const seen: ReloadOutcome[] = [];
    const listener = (outcome: ReloadOutcome): void => {
      seen.push(outcome);
      if (!holds() && seen.length < MAX_RELOADS) return;
      engine.off('reload', listener);
      resolve(seen);
    };
    engine.on('reload', listener);
  });
}

async function watchedEngine(t: Test) {
  const root = t.testdir({ src: { 'hot-v1.rego': policy('one') } });
  const sourceDir = path.join(root, 'src');
  const log = capturingLog();
  const engine = await PolicyEngine.open({ sourceDir, buildDir: path.join(root, 'build'), watch: true, debounceMs: 30, log });
  t.teardown(() => engine.close());
  const answer = (name = 'hot-v1'): unknown =>
    engine.has(name) ? engine.evaluate(name, {}, 'gatehouse/hot/v1/answer').value : undefined;
  return { engine, sourceDir, log, answer, file: path.join(sourceDir, 'hot-v1.rego') };
}

const SAVES: Record<string, (file: string, text: string) => Promise<void>> = {
  'in place': (file, text) => writeFile(file, text),
  'truncate, then write': async (file, text) => {
    await truncate(file, 0);
    await appendFile(file, text);
  },
  'a temporary renamed over the original (sed -i, VS Code)': async (file, text) => {
    const temporary = path.join(path.dirname(file), `.${path.basename(file)}.tmp-1234`);
    await writeFile(temporary, text);
    await rename(temporary, file);
  },
  'the original renamed to a backup, a new file written (vim)': async (file, text) => {
    await rename(file, `${file}~`);
    await writeFile(file, text);
    await unlink(`${file}~`);
  },
  'delete, then recreate': async (file, text) => {
    await unlink(file);
    await writeFile(file, text);
  },
};

for (const [style, save] of Object.entries(SAVES)) {
  t.test(`a save ${style} is reloaded`, async (t) => {
    const { engine, file, answer } = await watchedEngine(t);
    t.equal(answer(), 'one');
    const reloads = reloadsUntil(engine, () => answer() === 'two');
    await save(file, policy('two'));
    const seen = await reloads;
    t.equal(answer(), 'two', 'the saved module serves');
    t.match(seen.at(-1), { ok: true, policies: ['hot-v1'] });

    const again = reloadsUntil(engine, () => answer() === 'three');
    await save(file, policy('three'));
    await again;
    t.equal(answer(), 'three', 'and the next save of the same file too');
  });
}

t.test('a broken save keeps the last good module serving and logs file:line:col; the fixed save swaps in', async (t) => {
  const { engine, file, answer, log } = await watchedEngine(t);
  const failed = reloadsUntil(engine, () => log.errors.length > 0);
  await writeFile(file, 'package gatehouse.hot.v1\n\nanswer := "two" if {\n');
  const seen = await failed;
  t.match(seen.at(-1), { ok: false, error: /hot-v1\.rego:\d+:\d+/ });
  t.match(log.errors.at(-1), { message: /previous policies stay loaded/, fields: { errors: /hot-v1\.rego:\d+:\d+/ } }, 'the error names file:line:col');
  t.equal(answer(), 'one', 'the last good module still serves');

  const fixed = reloadsUntil(engine, () => answer() === 'fixed');
  await writeFile(file, policy('fixed'));
  t.match((await fixed).at(-1), { ok: true });
  t.equal(answer(), 'fixed');
});

t.test('new files, new directories and deletes are followed', async (t) => {
  const { engine, sourceDir, answer } = await watchedEngine(t);
  const other = (): unknown => (engine.has('other-v1') ? engine.evaluate('other-v1', {}, 'gatehouse/other/v1/n').value : undefined);

  const added = reloadsUntil(engine, () => other() === 1);
  await writeFile(path.join(sourceDir, 'other-v1.rego'), 'package gatehouse.other.v1\n\nn := 1\n');
  await added;
  t.same(engine.names(), ['hot-v1', 'other-v1'], 'a new policy file is built');

  // A directory made after watching started: its library changes what a policy answers.
  const library = reloadsUntil(engine, () => answer() === 'from the library');
  await mkdir(path.join(sourceDir, 'lib', 'deep'), { recursive: true });
  await writeFile(path.join(sourceDir, 'lib', 'deep', 'words.rego'), 'package lib.words\n\nword := "from the library"\n');
  await writeFile(path.join(sourceDir, 'hot-v1.rego'), 'package gatehouse.hot.v1\n\nimport data.lib.words\n\nanswer := words.word\n');
  await library;
  t.equal(answer(), 'from the library');

  const changedLibrary = reloadsUntil(engine, () => answer() === 'edited');
  await writeFile(path.join(sourceDir, 'lib', 'deep', 'words.rego'), 'package lib.words\n\nword := "edited"\n');
  await changedLibrary;
  t.equal(answer(), 'edited', 'a file in the new directory is watched too');

  const removed = reloadsUntil(engine, () => !engine.has('other-v1'));
  await unlink(path.join(sourceDir, 'other-v1.rego'));
  await removed;
  t.same(engine.names(), ['hot-v1'], 'a deleted policy is unloaded');
});

t.test('the watcher reports source changes only: hidden files and other files are not sources', async (t) => {
  const dir = t.testdir({ 'hot-v1.rego': policy('one'), build: {} });
  const batches: string[][] = [];
  let sourceSaved!: () => void;
  const saved = new Promise<void>((resolve) => (sourceSaved = resolve));
  const watcher = await watchSources(dir, {
    debounceMs: 0,
    onChange: (files) => {
      batches.push(files);
      if (files.includes('hot-v1.rego')) sourceSaved();
    },
    onError: (err) => t.fail(err.message),
    ignore: (file) => file === 'build' || file.startsWith(`build${path.sep}`),
  });
  t.teardown(() => watcher.close());
  await writeFile(path.join(dir, '.hot-v1.rego.swp'), 'vim swap');
  await writeFile(path.join(dir, 'notes.txt'), 'not Rego');
  await writeFile(path.join(dir, 'build', 'manifest.json'), '{}');
  // Events arrive in the order of the writes: by the time the Rego save is reported, the writes
  // before it have been reported too, had they counted.
  await writeFile(path.join(dir, 'hot-v1.rego'), policy('two'));
  await saved;
  t.same(batches.flat(), ['hot-v1.rego'], 'only the Rego save was reported');
});
