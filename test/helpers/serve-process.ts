import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * `gatehouse serve` as a child process, the way an operator runs it. Resolves once it prints the
 * address it listens on; gives up after `timeoutMs` (the first start compiles the policies).
 */
const BIN = new URL('../../bin/gatehouse.js', import.meta.url).pathname;

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  lines: string[];
  /** What it printed on stderr so far. */
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startServe(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in ${timeoutMs} ms\n${lines.join('\n')}\n${stderr}`));
    }, timeoutMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        // The remaining start-up lines follow at once; give them a moment to arrive.
        setTimeout(() => resolve({ child, url: match[1]!, lines, stderr: () => stderr, exited }), 100);
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening\n${lines.join('\n')}\n${stderr}`));
    });
  });
}
