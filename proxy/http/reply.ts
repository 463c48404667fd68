/**
 * A response before it is written: status, headers and the body already serialised, so the
 * same bytes can be stored for idempotent replay and sent.
 */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return { status, headers: Object.assign({ 'content-type': 'application/json' }, headers), body: JSON.stringify(value) };
}

/**
 * A JSON reply whose value is worked out inside the request's transaction, by a write queued on
 * `writes` (after the ones queued before it): for records numbered where they are stored, such
 * as memory versions. What the transaction refuses replaces it; idempotency stores it filled.
 */
export function committedJson(status: number, writes: Array<() => void>, value: () => unknown): Reply {
  const reply = json(status, null);
  writes.push(() => {
    reply.body = JSON.stringify(value());
  });
  return reply;
}

/** HTTP status lines uWebSockets.js expects in `writeStatus`. */
const REASONS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  302: 'Found',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? 'Unknown'}`;
}
