/**
 * `gatehouse/client`: the typed client alone. It loads nothing of the server (no LMDB, no policy
 * compiler, no uWebSockets.js), so it runs in plain Node 20 and in browsers.
 */
export * from './gatehouse-client.ts';
export * from './errors.ts';
export { subscribe, StreamClosedError, StreamSubscriptionError, type StreamEvent, type SubscribeOptions, type WebSocketConstructor, type WebSocketLike } from './stream.ts';
export { verifyWebhook, WebhookVerificationError, type WebhookMessage } from './webhooks.ts';
export type { RawResponse } from './transport.ts';
