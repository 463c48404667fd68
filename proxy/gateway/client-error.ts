import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { GatehouseError, type ErrorCode } from '../../core/errors.ts';
import { requestId } from '../../core/ids.ts';
import { problemReply } from '../http/problem.ts';

/**
 * The gateway's answer to a request node's parser (llhttp) refuses before any handler sees it
 * (docs/security.md, "Malformed HTTP"). Node's own answer is a bare status line; this one is the
 * problem document every other refusal gets, with 501 for a method the parser does not know
 * (RFC 9110 §9.1), and the connection is closed: where the request ends is unknown. Nothing is
 * audited, since no request was read.
 */
const REFUSALS: Record<string, ErrorCode> = {
  HPE_HEADER_OVERFLOW: 'request_header_fields_too_large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'payload_too_large',
  ERR_HTTP_REQUEST_TIMEOUT: 'request_timeout',
};

type ParserError = NodeJS.ErrnoException & { reason?: string; rawPacket?: Buffer };

/** A request line of the right form, `TOKEN SP target SP HTTP/x.y`: llhttp calls any other first word an invalid method too. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP\/\d\.\d\r?\n/;

function refusalOf(error: ParserError): ErrorCode {
  if (error.code === 'HPE_INVALID_METHOD') return REQUEST_LINE.test(error.rawPacket?.toString('latin1') ?? '') ? 'not_implemented' : 'invalid_request';
  return REFUSALS[error.code ?? ''] ?? 'invalid_request';
}

export function answerClientError(error: ParserError, socket: Socket): void {
  // A response already under way on this connection (node keeps it as `_httpMessage`, as its own
  // default handler checks) cannot be followed by another status line.
  const current = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || current?.headersSent) {
    socket.destroy();
    return;
  }
  const code = refusalOf(error);
  const detail = code === 'not_implemented' ? 'the gateway does not implement this request method' : `node's HTTP parser refused the request: ${error.reason ?? error.message}`;
  const id = requestId();
  const reply = problemReply(new GatehouseError(code, detail), id);
  const head = [
    `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status]}`,
    `content-type: ${reply.headers['content-type']}`,
    `content-length: ${Buffer.byteLength(reply.body)}`,
    `request-id: ${id}`,
    'connection: close',
  ];
  // The server keeps connections half-open: once the answer is flushed, close both ways.
  socket.end(`${head.join('\r\n')}\r\n\r\n${reply.body}`, () => socket.destroy());
}
