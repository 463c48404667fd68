/**
 * The body of a webhook message, in the Standard Webhooks shape: `type`, `timestamp` and
 * `data`, plus where the event sits in the log (`cursor`, `topic`) so a receiver can order and
 * deduplicate. Serialised once, when queued: retries and replays send the same bytes.
 */
export function webhookPayload(type: string, timestamp: string, data: unknown, position: { cursor: number; topic: string } | null): string {
  return JSON.stringify({ type, timestamp, data, ...(position ?? {}) });
}
