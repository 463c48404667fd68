import { createServer } from 'node:net';

/**
 * A listener that could not start: which one, on what address, and why, in words an operator
 * acts on. The CLI prints the message alone and exits non-zero.
 */
const REASONS: Record<string, (host: string, port: number) => string> = {
  EADDRINUSE: (_host, port) => `port ${port} is already in use by another process`,
  EACCES: (_host, port) => `this user may not listen on port ${port}`,
  EADDRNOTAVAIL: (host) => `${host} is not an address of this machine`,
};

export class ListenError extends Error {
  constructor(
    readonly listener: string,
    readonly host: string,
    readonly port: number,
    readonly code: string,
    /** What the operator can do about a port in use (the flags that apply to this listener). */
    inUseHint: string,
  ) {
    const reason = REASONS[code]?.(host, port) ?? `listening failed (${code})`;
    super(`${listener}: cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}: ${reason}${code === 'EADDRINUSE' ? `; ${inUseHint}` : ''}`);
    this.name = 'ListenError';
  }
}

/**
 * Why `host:port` cannot be bound, as the operating system's error code. uWebSockets.js says only
 * that listening failed; binding the same address once with node:net asks the system why.
 */
export function bindFailure(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'unknown'));
    // Free again by now (another process let go of it): the cause is gone with it.
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve('unknown')));
  });
}
