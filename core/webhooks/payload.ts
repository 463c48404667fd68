/**
 * The body of a webhook message, in the Standard Webhooks shape: `type`, `timestamp` and
 * `data` (given as JSON text, as the event log keeps it), plus where the event sits in the log
 * (`cursor`, `topic`) so a receiver can order and deduplicate. Serialised once, when queued:
 * retries and replays send the same bytes.
 */
export function webhookPayload(type: string, timestamp: string, dataJson: string, position: { cursor: number; topic: string } | null): string {
  const where = position ? `,"cursor":${position.cursor},"topic":${JSON.stringify(position.topic)}` : '';
  return `${JSON.stringify({ type, timestamp }).slice(0, -1)},"data":${dataJson}${where}}`;
}
