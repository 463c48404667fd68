/**
 * Watching a policy source directory with chokidar. Editors save in many ways: writing in place,
 * truncating then writing, writing a temporary file and renaming it over the original (vim, VS
 * Code, `sed -i`), deleting and recreating. A bare recursive `fs.watch` reports these
 * differently per platform, loses the watch on a file renamed over, and sees nothing of a
 * directory created after it started; chokidar follows each of them as an add, change or unlink
 * of the file's path. The events of one save are debounced into one notification once the
 * directory has been quiet.
 */
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';

/** Files whose change can alter a build. */
const RELEVANT = /(\.rego|\.json|\.tar\.gz)$/;

/**
 * chokidar reports a file's change at most once in 50 ms and its removal at most once in 100 ms,
 * dropping (not delaying) what follows within that time. Waiting at least this long after the
 * last report before notifying means a build started then reads every write it dropped.
 */
const CHOKIDAR_THROTTLE_MS = 100;

export interface SourceWatcher {
  close(): Promise<void>;
}

export interface WatchOptions {
  /** Quiet time before notifying; at least CHOKIDAR_THROTTLE_MS. */
  debounceMs: number;
  /**
   * Called once the directory has been quiet for `debounceMs` after a relevant change, with the
   * paths (relative to the directory) of the files and directories changed since the last call.
   */
  onChange: (changed: string[]) => void;
  /** Called when watching fails; watching stops. */
  onError: (err: Error) => void;
  /** Paths (relative to the directory) whose changes do not count. */
  ignore?: (relative: string) => boolean;
}

/**
 * Watches `dir` recursively (see the module comment); resolves once the directory has been read,
 * so that every change made after that is seen.
 */
export async function watchSources(dir: string, { debounceMs, onChange, onError, ignore = () => false }: WatchOptions): Promise<SourceWatcher> {
  let timer: NodeJS.Timeout | undefined;
  const quietMs = Math.max(debounceMs, CHOKIDAR_THROTTLE_MS);
  const root = path.resolve(dir);
  const watcher: FSWatcher = watch(root, {
    ignoreInitial: true,
    // Hidden entries are editor and VCS artefacts (swap files, `.git`), never sources: the build
    // skips them too (source-tree.ts).
    ignored: (file, stats) => {
      const relative = path.relative(root, file);
      if (relative === '') return false;
      if (path.basename(file).startsWith('.') || ignore(relative)) return true;
      return stats?.isFile() === true && !RELEVANT.test(file);
    },
  });
  const pending = new Set<string>();
  const schedule = (file: string): void => {
    pending.add(path.relative(root, file));
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...pending].sort();
      pending.clear();
      onChange(files);
    }, quietMs);
  };
  const changed = (file: string): void => {
    if (RELEVANT.test(file)) schedule(file);
  };
  watcher.on('add', changed).on('change', changed).on('unlink', changed);
  // A directory removed or renamed takes its sources with it.
  watcher.on('unlinkDir', schedule);
  await new Promise<void>((resolve, reject) => {
    watcher.once('ready', resolve);
    watcher.once('error', reject);
  });
  watcher.on('error', (err) => {
    clearTimeout(timer);
    void watcher.close();
    onError(err instanceof Error ? err : new Error(String(err)));
  });
  return {
    async close(): Promise<void> {
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
