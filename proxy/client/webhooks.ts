import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export { WebhookVerificationError };

/** A webhook message body (core/webhooks/payload.ts); the payload of each `type` is in the OpenAPI document's `webhooks`. */
export interface WebhookMessage<Data = unknown> {
  type: string;
  timestamp: string;
  data: Data;
  /** The event's position in the log: order and deduplicate by it (absent on `webhook.test`). */
  cursor?: number;
  topic?: string;
}

/**
 * Verifies a delivery per Standard Webhooks and returns its message: the signature over the exact
 * body bytes, and a timestamp within five minutes. `secrets` may hold the current and the
 * previous secret while a rotation's grace period runs. Throws WebhookVerificationError.
 */
export function verifyWebhook<Data = unknown>(
  secrets: string | readonly string[],
  body: string,
  headers: Headers | Record<string, string | string[] | undefined>,
): WebhookMessage<Data> {
  const wanted = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
  const flat: Record<string, string> = {};
  for (const name of wanted) {
    const value = headers instanceof Headers ? headers.get(name) : headers[name];
    if (typeof value === 'string') flat[name] = value;
  }
  let failure: unknown = new WebhookVerificationError('no secret given');
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    try {
      return new Webhook(secret).verify(body, flat) as WebhookMessage<Data>;
    } catch (error) {
      failure = error;
    }
  }
  throw failure;
}
