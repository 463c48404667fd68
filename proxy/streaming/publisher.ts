import type { TemplatedApp } from 'uWebSockets.js';
import type { EventLog } from '../../core/events/event-log.ts';
import { envTopic, topicPaths } from '../../core/events/topics.ts';
import { eventMessage } from './protocol.ts';

/**
 * Publishes committed events to the stream's subscribers through uWebSockets.js pub/sub, strictly
 * in cursor order. `publishedCursor` is the highest cursor handed to `app.publish`: every event
 * at or below it has been published, none above it has. That is what makes resuming exact: a
 * subscriber that replays (since, publishedCursor] from the log and subscribes in the same
 * JavaScript turn misses nothing and receives nothing twice, because nothing is published while
 * that turn runs.
 *
 * It reads the log rather than trusting what a request hands it: commits finish in any order,
 * and events written by other processes (the CLI) arrive only through the log.
 */
const BATCH = 512;

export class Publisher {
  private published: number;

  constructor(
    private readonly events: EventLog,
    private readonly app: TemplatedApp,
    /** Told after anything was published (the stream checks for slow consumers). */
    private readonly afterPublish: () => void,
    /** Whether any stream connection is open. */
    private readonly listening: () => boolean,
  ) {
    this.published = events.head();
  }

  get publishedCursor(): number {
    return this.published;
  }

  /**
   * Publishes every committed event not yet published. With no connection open there is no one
   * to publish to, nor a replay that reads up to the published cursor: it moves to the log's head
   * without reading or serialising the events.
   */
  pump(): void {
    if (!this.listening()) {
      this.published = this.events.head();
      return;
    }
    const start = this.published;
    for (let batch = this.events.after(this.published, BATCH); batch.length > 0; batch = this.events.after(this.published, BATCH)) {
      for (const event of batch) {
        const message = eventMessage(event);
        for (const path of topicPaths(event.topic)) this.app.publish(envTopic(event.env, path), message);
        this.published = event.cursor;
      }
    }
    if (this.published !== start) this.afterPublish();
  }
}
