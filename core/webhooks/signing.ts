import { Webhook } from 'standardwebhooks';

/**
 * Standard Webhooks signatures: `webhook-signature` is `v1,<base64 HMAC-SHA256>` over
 * `{webhook-id}.{webhook-timestamp}.{body}`, one per signing secret, separated by spaces (two
 * while a rotated-out secret is in its grace period).
 */
export function signedHeaders(messageId: string, at: Date, payload: string, secrets: readonly string[]): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, at, payload)).join(' '),
  };
}
