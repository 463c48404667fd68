import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The command line as users run it. */
export const CLI = fileURLToPath(new URL('../../bin/gatehouse.js', import.meta.url));

/** How one run of the command ended. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `gatehouse <args>` to its end, with `env` added to this process's environment; a run that
 * hangs is killed (by its PID) after `timeoutMs`.
 */
export function gatehouse(args: string[], { env = {}, timeoutMs = 180_000 }: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { timeout: timeoutMs, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
