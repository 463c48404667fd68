import { GatehouseError } from '../../core/errors.ts';
import { problemResponse, type RouteDef } from '../route.ts';

/**
 * GET /v1/streaming — the WebSocket stream (docs/streaming.md). The upgrade request runs the
 * whole request pipeline like any call: the Bearer key is checked (401/403 refuse the upgrade),
 * the rate limit applies, and the upgrade or its refusal is audited. This handler only confirms
 * that it is an upgrade; its 101 makes proxy/server.ts hand the connection to the stream.
 */
export const STREAM_PATH = '/v1/streaming';

export const streamRoute: RouteDef = {
  method: 'GET',
  path: STREAM_PATH,
  operationId: 'stream',
  summary: 'Open the event stream (WebSocket): subscribe to topics, resume from a cursor. Protocol in docs/streaming.md.',
  scope: 'stream:subscribe',
  audited: true,
  responses: {
    101: { description: 'Switching to the WebSocket protocol.' },
    400: problemResponse('Not a WebSocket upgrade request.'),
    401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
    403: problemResponse('The key lacks the stream:subscribe scope.'),
    429: problemResponse('Rate limited.'),
  },
  handle(ctx) {
    if (ctx.headers['upgrade']?.toLowerCase() !== 'websocket' || !ctx.headers['sec-websocket-key']) {
      throw new GatehouseError('invalid_request', 'this endpoint speaks WebSocket: send an upgrade request (Upgrade: websocket)');
    }
    return { status: 101, headers: {}, body: '' };
  },
};
