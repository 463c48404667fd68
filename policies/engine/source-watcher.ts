/**
 * Watching a policy source directory: editors save a file in several steps (write a temporary,
 * rename, touch), so changes are debounced into one notification once the directory is quiet.
 */
import { watch, type FSWatcher } from 'node:fs';

/** Files whose change can alter a build. */
const RELEVANT = /(\.rego|\.json|\.tar\.gz)$/;

export interface SourceWatcher {
  close(): void;
}

export interface WatchOptions {
  debounceMs: number;
  /** Called once the directory has been quiet for `debounceMs` after a relevant change. */
  onChange: () => void;
  /** Called when watching fails (the directory was removed, say); watching stops. */
  onError: (err: Error) => void;
  /** Paths (relative to the directory) whose changes do not count. */
  ignore?: (relative: string) => boolean;
}

/** Watches `dir` recursively (see the module comment). */
export function watchSources(dir: string, { debounceMs, onChange, onError, ignore = () => false }: WatchOptions): SourceWatcher {
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch(dir, { recursive: true }, (_event, filename) => {
    // Some platforms omit the name; then any change counts.
    if (filename !== null) {
      const name = filename.toString();
      if (!RELEVANT.test(name) || ignore(name)) return;
    }
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  });
  watcher.on('error', (err) => {
    clearTimeout(timer);
    watcher.close();
    onError(err);
  });
  return {
    close(): void {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
