import { Type, type Static } from '@sinclair/typebox';
import type { StoredEvent } from '../../core/events/event.ts';
import { GatehouseError } from '../../core/errors.ts';
import { validate } from '../validation.ts';

/**
 * The stream's wire format (docs/streaming.md): JSON text frames. Clients send `subscribe` and
 * `unsubscribe`; the server sends `event`, `subscribed`, `unsubscribed`, `heartbeat` and
 * `error`. Server messages are built here so each is serialised once, however many subscribers
 * receive it.
 */
const Topics = Type.Array(Type.String({ minLength: 1, maxLength: 160 }), { minItems: 1, maxItems: 100, uniqueItems: true });

export const ClientMessage = Type.Union([
  Type.Object(
    { type: Type.Literal('subscribe'), topics: Topics, since: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })) },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal('unsubscribe'), topics: Topics }, { additionalProperties: false }),
]);
export type ClientMessage = Static<typeof ClientMessage>;

/** Close codes the server uses (4000–4999 are the application's). */
export const CLOSE = {
  /** The server is shutting down: reconnect elsewhere or later, with `since`. */
  goingAway: 1001,
  /** The client fell too far behind (its unsent backlog passed the bound): reconnect with `since`. */
  slowConsumer: 4008,
} as const;

/** Error codes of `{"type":"error"}` messages. */
export type StreamErrorCode = 'invalid_message' | 'unknown_topic' | 'insufficient_scope' | 'cursor_expired' | 'invalid_cursor' | 'internal';

export class StreamError extends Error {
  constructor(
    readonly code: StreamErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A client frame as a message, or a StreamError saying what is wrong with it. */
export function parseClientMessage(frame: ArrayBuffer, isBinary: boolean): ClientMessage {
  if (isBinary) throw new StreamError('invalid_message', 'send JSON text frames, not binary ones');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(frame).toString('utf8'));
  } catch (error) {
    throw new StreamError('invalid_message', `the message is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return validate<ClientMessage>(ClientMessage, value, 'body');
  } catch (error) {
    const first = ((error as GatehouseError).extensions.errors as Array<{ path: string; message: string }> | undefined)?.[0];
    const where = first ? ` (${first.path.replace(/^body/, 'message')}: ${first.message})` : '';
    throw new StreamError('invalid_message', `expected {"type":"subscribe","topics":[…],"since"?:cursor} or {"type":"unsubscribe","topics":[…]}${where}`);
  }
}

export function eventMessage(event: StoredEvent): string {
  const { cursor, id, kind, topic, time, dataJson } = event;
  // The data is JSON text as the log keeps it: spliced in, not parsed and written again.
  return `${JSON.stringify({ type: 'event', cursor, id, kind, topic, time }).slice(0, -1)},"data":${dataJson}}`;
}

export function errorMessage(error: StreamError): string {
  return JSON.stringify({ type: 'error', code: error.code, message: error.message });
}

export function subscribedMessage(topics: string[], cursor: number, replayed: number | null): string {
  return JSON.stringify({ type: 'subscribed', topics, cursor, ...(replayed === null ? {} : { replayed }) });
}

export function unsubscribedMessage(topics: string[]): string {
  return JSON.stringify({ type: 'unsubscribed', topics });
}

export function heartbeatMessage(): string {
  return JSON.stringify({ type: 'heartbeat', time: new Date().toISOString() });
}
