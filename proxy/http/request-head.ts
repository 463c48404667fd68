/**
 * The malformed request heads uWebSockets.js hands to the application (docs/security.md,
 * "Malformed HTTP"). Its parser drops or holds most malformed requests itself, but passes on a
 * Content-Length or Host field sent more than once, a transfer coding other than `chunked`
 * (which it reads as chunked anyway), and DEL in a field value. HTTP forbids each (RFC 9112 §3.2,
 * §6.1, §6.3; RFC 9110 §5.5): the request is refused with 400 and its connection closed, since
 * where its body ends is in doubt.
 *
 * `headers` holds each field once, lines sent repeatedly joined with ", " (proxy/server.ts).
 */
const DIGITS = /^\d+$/;
/** Control characters other than HTAB: RFC 9110 §5.5 allows none of them in a field value. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** Why the head is malformed, or null when it is not. */
export function malformedHead(headers: Record<string, string>): string | null {
  const length = headers['content-length'];
  if (length !== undefined && !DIGITS.test(length)) return 'Content-Length must be sent once, as one decimal number';
  const coding = headers['transfer-encoding'];
  if (coding !== undefined && coding.toLowerCase() !== 'chunked') return 'Transfer-Encoding must be sent once, as chunked alone';
  // A host never holds a comma: one here joins two Host lines.
  if (headers['host']?.includes(',')) return 'Host must be sent once';
  for (const name in headers) if (CONTROL.test(headers[name]!)) return `the ${name} field holds a control character`;
  return null;
}
