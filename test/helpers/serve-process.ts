import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * `gatehouse serve` as a child process, the way an operator runs it. Resolves once its log says
 * the address it listens on; gives up after `timeoutMs` (the first start compiles the policies).
 */
const BIN = new URL('../../bin/gatehouse.js', import.meta.url).pathname;

/** One line of the operational log (core/log.ts). */
export type LogEntry = { level: number; msg: string } & Record<string, unknown>;

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** What it printed on stdout for a person, line by line. */
  lines: string[];
  /** What it printed on stderr so far. */
  stderr(): string;
  /** Its log so far: the lines of stderr that are JSON. */
  logs(): LogEntry[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The log line saying where it listens, with the data directory, the policies loaded and the admin key's id. */
export function listening(served: ServeProcess): LogEntry {
  const entry = served.logs().find((e) => e.msg.startsWith('listening on '));
  if (!entry) throw new Error('no listening line in the log');
  return entry;
}

export function startServe(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  // 'close', not 'exit': by then everything it printed has been read.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  let stderr = '';
  const logs: LogEntry[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in ${timeoutMs} ms\n${lines.join('\n')}\n${stderr}`));
    }, timeoutMs);
    createInterface({ input: child.stderr! }).on('line', (line) => {
      stderr += `${line}\n`;
      const entry = parsed(line);
      if (!entry) return;
      logs.push(entry);
      if (entry.msg.startsWith('listening on ') && typeof entry.url === 'string') {
        clearTimeout(timer);
        const url = entry.url;
        // The lines for a person follow at once on stdout; give them a moment to arrive.
        setTimeout(() => resolve({ child, url, lines, stderr: () => stderr, logs: () => logs, exited }), 100);
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening\n${lines.join('\n')}\n${stderr}`));
    });
  });
}

function parsed(line: string): LogEntry | null {
  try {
    const entry = JSON.parse(line) as unknown;
    return typeof entry === 'object' && entry !== null && typeof (entry as LogEntry).msg === 'string' ? (entry as LogEntry) : null;
  } catch {
    return null;
  }
}
