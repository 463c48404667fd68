import { EXCERPT_BYTES, type RunStore } from './agents/runs.ts';
import type { ToolRegistry } from './agents/tools.ts';
import type { DecisionRecord } from './decision.ts';
import type { HeldRequests } from './held-requests.ts';

/**
 * What a decision holds back, as a reviewer judges it before approving: the request that will be
 * sent once it is executed (method, target and the beginning of the body) and who asked for it.
 * Held proxied requests (core/held-requests.ts) and held agent tool calls (core/agents/) are
 * described alike; other decisions hold nothing.
 */
export interface HeldView {
  decisionId: string;
  kind: 'proxy-request' | 'agent-tool-call';
  /** The held request's or step's own state (`held`, `pending`, `executing`, `complete`, …). */
  state: string;
  /** The key that made the request or opened the run; null for a proxy route that authenticates no one. */
  requestedBy: string | null;
  requestedAt: string;
  /** The proxy route, or the tool and the agent run that called it. */
  via: { route: string } | { tool: string; agentId: string; runId: string };
  request: { method: string; target: string; upstream: string | null; body: string; bodyBytes: number; truncated: boolean };
}

/** The body's beginning, as much as an agent step's trace keeps: enough to judge it, bounded whatever was sent. */
function excerpt(body: Buffer): { body: string; bodyBytes: number; truncated: boolean } {
  // Cutting may end inside a multi-byte character: it decodes as U+FFFD, never as an error.
  return { body: body.subarray(0, EXCERPT_BYTES).toString('utf8'), bodyBytes: body.length, truncated: body.length > EXCERPT_BYTES };
}

export interface HeldSources {
  heldRequests: HeldRequests;
  runs: RunStore;
  tools: ToolRegistry;
}

export function heldView(decision: DecisionRecord, sources: HeldSources): HeldView | undefined {
  const held = sources.heldRequests.forDecision(decision);
  if (held) {
    return {
      decisionId: decision.id,
      kind: 'proxy-request',
      state: held.state,
      requestedBy: held.requester?.keyId ?? null,
      requestedAt: held.createdAt,
      via: { route: held.facts.route.name },
      request: { method: held.facts.method, target: held.forward.target, upstream: held.facts.route.upstream, ...excerpt(held.forward.body) },
    };
  }
  if (decision.subject?.type !== 'agent-tool-call') return undefined;
  const found = sources.runs.forStep(decision.env, decision.subject.id);
  if (!found) return undefined;
  const { run, step } = found;
  const tool = sources.tools.get(decision.env, step.tool);
  return {
    decisionId: decision.id,
    kind: 'agent-tool-call',
    state: step.state,
    requestedBy: run.keyId,
    requestedAt: step.requestedAt,
    via: { tool: step.tool, agentId: run.agentId, runId: run.id },
    request: {
      method: tool?.upstream.method ?? 'POST',
      target: tool?.upstream.url ?? '',
      upstream: null,
      ...excerpt(Buffer.from(JSON.stringify(step.input))),
    },
  };
}
