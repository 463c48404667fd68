import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * The server's operational log: JSON lines on stderr (stdout stays for the command line's own
 * output), at the level `GATEHOUSE_LOG_LEVEL` names (`info` by default; `debug` adds a line per
 * request with its request id). One logger per process: a sidecar is one process, and every
 * part of it logs the same way. JSON in a terminal too, as pino has it: collectors read it
 * as written, and people pipe it through `npx pino-pretty`.
 *
 * Secrets never reach the log: API keys, session cookies and signing secrets are replaced by
 * `[Redacted]` wherever a logged object carries them under these names, at the top level or one
 * level down (an error's `headers`, say).
 */
export type { Logger };

const SECRET_NAMES = ['authorization', 'cookie', 'set-cookie', 'x-api-key', 'key', 'secret', 'adminKey', 'password', 'token'];

/** Paths in pino's redact syntax: a name with a dash is written as a bracketed string. */
export const REDACTED_PATHS = SECRET_NAMES.flatMap((name) => {
  const member = name.includes('-') ? `["${name}"]` : `.${name}`;
  return [member.startsWith('.') ? name : member, `*${member}`, `*.headers${member}`];
});

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * A logger at `level` writing to `destination` (stderr when unset). A level it does not know is
 * logged as a warning and `info` used: a typo in an environment variable must not stop a sidecar.
 */
export function createLogger(level: string = process.env.GATEHOUSE_LOG_LEVEL || 'info', destination: DestinationStream = pino.destination({ dest: 2, sync: true })): Logger {
  const known = (LOG_LEVELS as readonly string[]).includes(level);
  const logger = pino({ level: known ? level : 'info', base: { service: 'gatehouse' }, redact: REDACTED_PATHS, timestamp: pino.stdTimeFunctions.isoTime }, destination);
  if (!known) logger.warn(`GATEHOUSE_LOG_LEVEL ${level} is not a level (${LOG_LEVELS.join(', ')}); logging at info`);
  return logger;
}

/** The process's logger. */
export const log: Logger = createLogger();
