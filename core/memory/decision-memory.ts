import type { ContextEntry, DecisionRecord } from '../decision.ts';
import type { DecisionWorkflow } from '../decision-workflow.ts';
import type { Env } from '../env.ts';
import { log } from '../log.ts';
import { DECISIONS_DATABASE } from '../decision-store.ts';
import type { Store } from '../store.ts';
import type { MemoryDraft } from './item.ts';
import type { Memory } from './memory.ts';
import type { Objectives } from './objectives.ts';

/**
 * Writes every decision into memory after it is stored: the decision's item (`decisions/<id>`, a new version per transition: its text is the title and context, its
 * attributes the policy's verdict and status) with edges to
 *
 *   uses         each input (`ns:name` → item `name` in namespace `ns`) and each context value
 *                (`risk:score` = 82 → item `score` in `risk`, a new version when the value changes)
 *   serves       each objective (core/memory/objectives.ts)
 *   governed_by  the policy (`policies/<name>`, a new version when its module hash changes)
 *   approved_by  each approver's key (`keys/<keyId>`)
 *   supersedes   the previous decision with the same title under the same policy: a question
 *                decided again
 *
 * Edges name the target version written against, so the memory of a decision says which value
 * of each input it saw. `serves` edges added later through the objectives API are kept.
 *
 * Nobody waits for this before the decision's reply: it cost about a quarter of a decision's CPU
 * inside the request's transaction. Decisions are queued when their transaction commits and
 * recorded together up to `RECORD_WINDOW_MS` later (at 1,000 decisions/s a transaction per
 * decision would cost more than the recording), in one transaction of their own, where memory
 * numbers each version against what is stored (core/memory/memory.ts): in cluster mode two
 * instances recording the same context value at once store two versions of one item. Readers of
 * memory wait for the queue first (`Memory.written`), which records it at once, so a caller still
 * reads its own decision in memory right after the reply.
 */
const RECORD_WINDOW_MS = 25;
/**
 * The most decisions one transaction records. A backlog (decisions that came while the model
 * loaded, or while the cluster refused commits) recorded in one go held the event loop for as
 * long as the backlog was large (60 ms for the 3,600 of a server started under full load); at
 * about 50 µs each, this many take some 13 ms, and steady load at the bench's maximum fills no
 * more than 150 per window.
 */
const MAX_RECORD_BATCH = 256;
/**
 * After a commit that failed (the cluster refused it during a failover, say), how long until its
 * decisions are recorded again, doubling with each failure in a row up to the maximum. They keep
 * their place, before anything queued after them.
 */
const RETRY_MS = 1000;
/** Questions `forgetDropped` looks at between two pauses (well under a millisecond). */
const FORGET_SLICE = 4096;
const MAX_RETRY_MS = 30_000;

export class DecisionMemory {
  /** `env\0policy\0title` → the memory item of the newest decision with that title, as committed; rebuilt on start. */
  private readonly latestByQuestion = new Map<string, string>();

  /** Stored states of decisions whose memory is not yet recorded, oldest first. */
  private queue: DecisionRecord[] = [];
  /** The recording under way, while there is one. */
  private recording: Promise<void> | null = null;
  /** Starts the next recording after a failed one. */
  private retry: NodeJS.Timeout | null = null;
  /** Recordings that failed in a row. */
  private failures = 0;
  /** Starts the recording at the end of the window. */
  private window: NodeJS.Timeout | null = null;

  constructor(
    private readonly memory: Memory,
    private readonly objectives: Objectives,
    workflow: DecisionWorkflow,
    private readonly store: Store,
  ) {
    for (const env of ['sandbox', 'production'] as const) {
      for (const item of memory.list(env, 'decisions')) this.latestByQuestion.set(question(env, item.attributes), item.id);
    }
    // Every instance's decisions, as they commit: a question decided again on another instance supersedes them too.
    memory.onCommitted((item) => {
      if (item.namespace === 'decisions' && item.version === 1) this.latestByQuestion.set(question(item.env, item.attributes), item.id);
    });
    memory.onCompacted((env) => this.forgetDropped(env));
    workflow.use({ written: (record) => store.afterCommit(() => this.enqueue(record)) });
    memory.addLateWriter(() => this.recorded());
  }

  /**
   * `--threads` mode, on thread 0, which alone holds memory: records the decisions the other
   * threads store too, as it learns of them from the threads' commit log (core/store.ts), at the
   * latest one window after they committed. A decision changed twice before thread 0 learns of
   * it is read once, as it then stands, and recorded once.
   */
  recordOtherThreads(): void {
    const queuedRevision = new Map<string, number>();
    this.store.onReplicated((writes) => {
      for (const write of writes) {
        if (write.db !== DECISIONS_DATABASE) continue;
        const record = write.value() as DecisionRecord | undefined;
        if (!record || queuedRevision.get(record.id) === record.revision) continue;
        // Bounded: only a repeat within a few windows matters.
        if (queuedRevision.size >= 65_536) queuedRevision.clear();
        queuedRevision.set(record.id, record.revision);
        this.enqueue(record);
      }
    });
    setInterval(() => this.store.catchUpThreads(), RECORD_WINDOW_MS).unref();
  }

  /** Resolves once every decision queued so far has its memory stored; records the queue at once. */
  async recorded(): Promise<void> {
    if (this.queue.length > 0) this.startRecording();
    while (this.recording) await this.recording;
  }

  /**
   * Forgets the questions whose newest decision retention dropped from memory, a slice at a time
   * (a question per decision when titles never repeat, so as many entries as decisions held): a
   * decision asked again after that links to no predecessor, as memory no longer holds it.
   */
  private forgetDropped(env: Env): void {
    const entries = this.latestByQuestion.entries();
    const prefix = `${env}\0`;
    const slice = () => {
      for (let i = 0; i < FORGET_SLICE; i++) {
        const next = entries.next();
        if (next.done) return;
        const [key, id] = next.value;
        if (key.startsWith(prefix) && !this.memory.holds(env, id)) this.latestByQuestion.delete(key);
      }
      setImmediate(slice);
    };
    slice();
  }

  private enqueue(decision: DecisionRecord): void {
    this.queue.push(decision);
    if (!this.recording && !this.window) this.window = setTimeout(() => this.startRecording(), RECORD_WINDOW_MS).unref();
  }

  private startRecording(): void {
    if (this.window) clearTimeout(this.window);
    if (this.retry) clearTimeout(this.retry);
    this.window = null;
    this.retry = null;
    this.recording ??= this.recordQueued();
  }

  private async recordQueued(): Promise<void> {
    let decisions: DecisionRecord[] = [];
    try {
      // Indexing a version embeds its text: with a model still loading, the first decisions of a
      // server just started would load it in one go (250 ms with every request waiting).
      await this.memory.embedderReady();
      while (this.queue.length > 0) {
        decisions = this.queue.splice(0, MAX_RECORD_BATCH);
        await this.store.commit(() => {
          // The newest decision per question this transaction recorded: the map learns them once they commit.
          const questions = new Map<string, string>();
          for (const decision of decisions) this.record(decision, questions);
        });
        decisions = [];
        this.failures = 0;
      }
    } catch (error) {
      // The decisions of the failed commit keep their place, before anything queued since.
      this.queue = decisions.concat(this.queue);
      if (this.store.isOpen) {
        const retryInMs = Math.min(RETRY_MS * 2 ** this.failures++, MAX_RETRY_MS);
        log.warn({ err: error, decisions: this.queue.length, retryInMs }, 'recording decisions into memory failed; retrying');
        this.retry = setTimeout(() => this.startRecording(), retryInMs).unref();
      } else {
        log.error({ err: error, decisions: this.queue.length }, 'recording decisions into memory failed as the store closed');
      }
    } finally {
      this.recording = null;
    }
  }

  /** Stores one state of a decision into memory; call inside `store.commit`. */
  private record(decision: DecisionRecord, questions: Map<string, string>): void {
    const { env } = decision;
    const by = decision.history.at(-1)?.keyId ?? decision.createdBy;
    const previousId = this.memory.idForKey(env, 'decisions', decision.id);
    const previous = previousId === undefined ? undefined : this.memory.current(env, previousId);
    // A transition keeps the edges (and the versions they name) the decision was created with.
    const links: Array<{ to: string; relation: string; version?: number }> = previous ? [...previous.links] : this.creationLinks(decision, by, questions);
    for (const approval of decision.approvals) {
      const to = this.ensure(env, by, 'keys', approval.keyId, `API key ${approval.keyId}`, { roles: approval.roles });
      if (!links.some((link) => link.relation === 'approved_by' && link.to === to)) links.push({ to, relation: 'approved_by' });
    }
    const item = this.memory.write(env, by, {
      namespace: 'decisions',
      key: decision.id,
      text: typeof decision.context === 'string' ? `${decision.title}\n${decision.context}` : decision.title,
      attributes: {
        title: decision.title,
        policy: decision.policy,
        moduleHash: decision.moduleHash,
        status: decision.status,
        gate: decision.gate,
        nextAction: decision.nextAction,
        reasons: decision.reasons,
        auditTrail: decision.auditTrail,
      },
      links,
    }, null);
    if (!previous) questions.set(question(env, decision), item.id);
  }

  /** The edges of a new decision: its policy, inputs, context values, objectives and predecessor. */
  private creationLinks(decision: DecisionRecord, by: string, questions: Map<string, string>): Array<{ to: string; relation: string }> {
    const { env } = decision;
    const links: Array<{ to: string; relation: string }> = [];
    links.push({
      to: this.ensure(env, by, 'policies', decision.policy, `Policy ${decision.policy}, module ${decision.moduleHash}`, { moduleHash: decision.moduleHash }),
      relation: 'governed_by',
    });
    for (const label of decision.inputs) {
      const [namespace, key] = splitLabel(label);
      links.push({ to: this.ensure(env, by, namespace, key, label, null), relation: 'uses' });
    }
    if (Array.isArray(decision.context)) {
      for (const entry of decision.context as ContextEntry[]) {
        const [namespace, key] = splitLabel(entry.source);
        links.push({ to: this.ensure(env, by, namespace, key, `${entry.source} = ${entry.value}`, { value: entry.value }), relation: 'uses' });
      }
    }
    for (const objective of decision.objectives) links.push({ to: this.objectives.ensure(env, by, objective), relation: 'serves' });
    const key = question(env, decision);
    const earlier = questions.get(key) ?? this.latestByQuestion.get(key);
    if (earlier !== undefined) links.push({ to: earlier, relation: 'supersedes' });
    return links;
  }

  /**
   * The id of `namespace/key`, writing it first when it does not exist or (for values that can
   * change, `attributes` not null) when its attributes differ from the latest version.
   */
  private ensure(env: Env, by: string, namespace: string, key: string, text: string, attributes: MemoryDraft['attributes'] | null): string {
    const id = this.memory.idForKey(env, namespace, key);
    const latest = id === undefined ? undefined : this.memory.current(env, id);
    if (id !== undefined && latest && !latest.tombstone && (attributes === null || JSON.stringify(latest.attributes) === JSON.stringify(attributes))) return id;
    return this.memory.write(env, by, { namespace, key, text, attributes: attributes ?? {} }, null).id;
  }
}

function question(env: Env, decision: { policy?: unknown; title?: unknown }): string {
  return `${env}\0${String(decision.policy)}\0${String(decision.title)}`;
}

/** `finance:budget_q3` → [`finance`, `budget_q3`]; labels are validated by the decisions schema. */
function splitLabel(label: string): [string, string] {
  const at = label.indexOf(':');
  return [label.slice(0, at), label.slice(at + 1)];
}
