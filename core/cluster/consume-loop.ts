import { setTimeout as sleep } from 'node:timers/promises';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { log } from '../log.ts';

/** A JetStream consumer read for as long as its owner runs, reopened after any failure. */
export interface ConsumeLoop {
  /** Resolves once the loop has ended (after `stop`). */
  readonly done: Promise<void>;
  /** Stops reading; the message being handled finishes first. */
  stop(): Promise<void>;
  /** Closes what is being read, so that the loop opens it again (from where `open` says). */
  reopen(): void;
}

/**
 * Reads what `open` returns, handing each message to `handle`, until stopped; a read that fails
 * (a server gone, a consumer lost) is logged as `what` and opened again after `retryMs`. The one
 * loop both the commit stream's reader and the webhook work share.
 */
export function consumeLoop(what: string, open: () => Promise<ConsumerMessages>, handle: (message: JsMsg) => void, retryMs: number): ConsumeLoop {
  let stopped = false;
  let messages: ConsumerMessages | null = null;
  const done = (async () => {
    while (!stopped) {
      try {
        messages = await open();
        // Stopped while it was being opened: closed, and not read, it has nothing to wait for (its
        // `close` resolves once a reader has seen the end).
        if (stopped) {
          void messages.close();
          break;
        }
        for await (const message of messages) handle(message);
      } catch (error) {
        if (stopped) break;
        log.warn({ err: error }, `${what} failed; reading again`);
      }
      if (!stopped) await sleep(retryMs);
    }
  })();
  return {
    done,
    async stop() {
      stopped = true;
      await messages?.close().catch(() => {});
      await done;
    },
    reopen() {
      void messages?.close().catch(() => {});
    },
  };
}

