import type { Static } from '@sinclair/typebox';
import type * as A from '../agent-schemas.ts';
import type * as C from '../context-schemas.ts';
import type * as I from '../impact-schemas.ts';
import type * as M from '../memory-schemas.ts';
import type { AuditStatus } from '../routes/audit.ts';
import type { DecisionResult } from '../routes/decision-results.ts';
import type { Held } from '../routes/held.ts';
import type { PolicyDetail, PolicyList } from '../routes/policies.ts';
import type { RedeemSessionCodeBody, Session, SessionCode } from '../routes/sessions.ts';
import type { RegisterSigningKeyBody, SigningKey as SigningKeySchema } from '../routes/signing-key-schemas.ts';
import type * as S from '../schemas.ts';
import type * as W from '../webhook-schemas.ts';
import { subscribe, type StreamEvent, type SubscribeOptions } from './stream.ts';
import { seg, Transport, type ClientOptions, type WriteOptions } from './transport.ts';

/**
 * A typed client for the /v1 API: one method per operation, named by its operationId (the
 * OpenAPI document's), with types from the same schemas the server validates with. Lists that
 * page have async iterators; writes that accept an Idempotency-Key always send one and retry
 * with it (proxy/client/transport.ts).
 */
export type Decision = Static<typeof S.Decision> & {
  /** `<gate>:<nextAction>`, e.g. `human_approval:approve`. */
  label: string;
};
export type Key = Static<typeof S.Key>;
export type IssuedKey = Static<typeof S.CreatedKey>;
export type Trace = Static<typeof S.Trace>;
export type InfluenceTrace = Static<typeof I.InfluenceTrace>;
export type DecisionFilter = S.ListDecisionsQuery;
export type DecisionAction = 'approve' | 'reject' | 'execute' | 'cancel';
export type RegisteredSigningKey = Static<typeof SigningKeySchema>;
export type MemoryItem = Static<typeof M.MemoryItem>;
export type Objective = Static<typeof M.ObjectiveWithDecisions>;
export type WebhookEndpoint = Static<typeof W.WebhookEndpoint>;
export type WebhookEndpointWithSecret = Static<typeof W.WebhookEndpointWithSecret>;
export type WebhookDelivery = Static<typeof W.Delivery>;
export type AgentRun = Static<typeof A.Run>;
export type ToolCallResult = Static<typeof A.ToolCallResult>;
export type { ClientOptions, WriteOptions };

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

function labelled(decision: Static<typeof S.Decision>): Decision {
  return { ...decision, label: `${decision.gate}:${decision.nextAction}` };
}

export class GatehouseClient {
  private readonly http: Transport;

  constructor(options: ClientOptions) {
    this.http = new Transport(options);
  }

  // Decisions

  async createDecision(body: S.CreateDecisionBody, options?: WriteOptions): Promise<Decision> {
    return labelled(await this.http.idempotent('POST', '/v1/decisions', body, options));
  }

  async getDecision(id: string): Promise<Decision> {
    return labelled(await this.http.read(`/v1/decisions/${seg(id)}`));
  }

  async listDecisions(filter: Partial<DecisionFilter> = {}): Promise<Page<Decision>> {
    const page = await this.http.read<Page<Static<typeof S.Decision>>>('/v1/decisions', filter);
    return { data: page.data.map(labelled), nextCursor: page.nextCursor };
  }

  /** Every decision matching `filter`, page after page. */
  decisions(filter: Partial<Omit<DecisionFilter, 'cursor'>> = {}): AsyncGenerator<Decision> {
    return pages((cursor) => this.listDecisions({ ...filter, ...(cursor ? { cursor } : {}) }));
  }

  countDecisions(filter: S.DecisionCountsQuery = {}): Promise<Static<typeof S.DecisionCounts>> {
    return this.http.read('/v1/decisions/counts', filter);
  }

  approveDecision(id: string, body: S.ActionBody = {}, options?: WriteOptions): Promise<Decision> {
    return this.act(id, 'approve', body, options);
  }

  rejectDecision(id: string, body: S.ActionBody = {}, options?: WriteOptions): Promise<Decision> {
    return this.act(id, 'reject', body, options);
  }

  executeDecision(id: string, body: S.ActionBody = {}, options?: WriteOptions): Promise<Decision> {
    return this.act(id, 'execute', body, options);
  }

  cancelDecision(id: string, body: S.ActionBody = {}, options?: WriteOptions): Promise<Decision> {
    return this.act(id, 'cancel', body, options);
  }

  /** What a proxied request or tool call held by the decision sent, once it was sent. */
  getDecisionResult(id: string): Promise<Static<typeof DecisionResult>> {
    return this.http.read(`/v1/decisions/${seg(id)}/result`);
  }

  getHeld(id: string): Promise<Static<typeof Held>> {
    return this.http.read(`/v1/decisions/${seg(id)}/held`);
  }

  // Keys and signing keys

  /** Not retried: the route takes no Idempotency-Key (its reply holds the secret). */
  createKey(body: S.CreateKeyBody): Promise<IssuedKey> {
    return this.http.once('POST', '/v1/keys', body);
  }

  async listKeys(env?: 'sandbox' | 'production'): Promise<Key[]> {
    return (await this.http.read<{ data: Key[] }>('/v1/keys', { env })).data;
  }

  revokeKey(id: string, options?: WriteOptions): Promise<Key> {
    return this.http.idempotent('DELETE', `/v1/keys/${seg(id)}`, undefined, options);
  }

  /** Registers a signing key (a public JWK, or an HMAC secret) for API key `keyId`. */
  registerSigningKey(keyId: string, body: RegisterSigningKeyBody, options?: WriteOptions): Promise<RegisteredSigningKey> {
    return this.http.idempotent('POST', `/v1/keys/${seg(keyId)}/signing-keys`, body, options);
  }

  async listSigningKeys(keyId: string): Promise<RegisteredSigningKey[]> {
    return (await this.http.read<{ data: RegisteredSigningKey[] }>(`/v1/keys/${seg(keyId)}/signing-keys`)).data;
  }

  revokeSigningKey(keyId: string, kid: string, options?: WriteOptions): Promise<RegisteredSigningKey> {
    return this.http.idempotent('DELETE', `/v1/keys/${seg(keyId)}/signing-keys/${seg(kid)}`, undefined, options);
  }

  // Sessions (the console's; a browser page keeps the cookie)

  createSession(): Promise<Static<typeof Session>> {
    return this.http.once('POST', '/v1/sessions');
  }

  /** A one-time code that signs the console in for this key; the client's `signer` must sign it (docs/console.md). */
  createSessionCode(): Promise<Static<typeof SessionCode>> {
    return this.http.once('POST', '/v1/sessions/codes');
  }

  /** Redeems a sign-in code with the public key that will sign the session's requests (what the console's page does). */
  redeemSessionCode(body: Static<typeof RedeemSessionCodeBody>): Promise<Static<typeof Session>> {
    return this.http.once('POST', '/v1/sessions/redeem', body);
  }

  getSession(): Promise<Static<typeof Session>> {
    return this.http.read('/v1/sessions/current');
  }

  async deleteSession(): Promise<void> {
    await this.http.once('DELETE', '/v1/sessions/current');
  }

  // Policies, audit, impact

  async listPolicies(): Promise<Static<typeof PolicyList>['data']> {
    return (await this.http.read<Static<typeof PolicyList>>('/v1/policies')).data;
  }

  getPolicy(name: string): Promise<Static<typeof PolicyDetail>> {
    return this.http.read(`/v1/policies/${seg(name)}`);
  }

  auditStatus(): Promise<Static<typeof AuditStatus>> {
    return this.http.read('/v1/audit/status');
  }

  /** A decision's trace (by trace reference or decision id), or, for `input` and `objective`, what it influenced. */
  getTrace(query: string | I.TraceQuery): Promise<Trace | InfluenceTrace> {
    return this.http.read('/v1/impact/trace', typeof query === 'string' ? { ref: query } : query);
  }

  // Memory and context

  writeMemory(body: M.WriteMemoryBody, options?: WriteOptions): Promise<MemoryItem> {
    return this.http.idempotent('POST', '/v1/memory', body, options);
  }

  listMemory(filter: M.ListMemoryQuery = {}): Promise<Page<MemoryItem> & { revision: number }> {
    return this.http.read('/v1/memory', filter);
  }

  /** Every live item matching `filter`, page after page, all from the memory state of the first page. */
  async *memoryItems(filter: Omit<M.ListMemoryQuery, 'cursor'> = {}): AsyncGenerator<MemoryItem> {
    let asOf = filter.asOf;
    yield* pages(async (cursor) => {
      const page = await this.listMemory({ ...filter, ...(asOf ? { asOf } : {}), ...(cursor ? { cursor } : {}) });
      asOf ??= String(page.revision);
      return page;
    });
  }

  queryMemory(body: M.QueryMemoryBody): Promise<Static<typeof M.MemoryAnswer>> {
    return this.http.json({ method: 'POST', path: '/v1/memory/query', body, retryable: true });
  }

  /** An item by id or `namespace:key`: its current version, or one version (`version`, `asOf`). */
  getMemory(id: string, query: M.GetMemoryQuery = {}): Promise<MemoryItem> {
    return this.http.read(`/v1/memory/${seg(id)}`, query);
  }

  listMemoryVersions(id: string): Promise<Static<typeof M.MemoryVersions>> {
    return this.http.read(`/v1/memory/${seg(id)}/versions`);
  }

  deleteMemory(id: string, options?: WriteOptions): Promise<MemoryItem> {
    return this.http.idempotent('DELETE', `/v1/memory/${seg(id)}`, undefined, options);
  }

  /** Beta: sends the `gatehouse-beta: context-synthesis` opt-in. */
  synthesizeContext(body: Static<typeof C.SynthesisBody>): Promise<Static<typeof C.Synthesis>> {
    return this.http.json({ method: 'POST', path: '/v1/context/synthesis', body, retryable: true, headers: { 'gatehouse-beta': 'context-synthesis' } });
  }

  // Objectives

  createObjective(body: M.CreateObjectiveBody, options?: WriteOptions): Promise<MemoryItem> {
    return this.http.idempotent('POST', '/v1/objectives', body, options);
  }

  async listObjectives(): Promise<MemoryItem[]> {
    return (await this.http.read<{ data: MemoryItem[] }>('/v1/objectives')).data;
  }

  getObjective(id: string): Promise<Objective> {
    return this.http.read(`/v1/objectives/${seg(id)}`);
  }

  linkObjectiveDecision(id: string, body: M.LinkDecisionBody): Promise<Objective> {
    return this.http.once('POST', `/v1/objectives/${seg(id)}/decisions`, body);
  }

  // Webhook endpoints

  createWebhook(body: W.CreateWebhookBody): Promise<WebhookEndpointWithSecret> {
    return this.http.once('POST', '/v1/webhooks/config', body);
  }

  async listWebhooks(): Promise<WebhookEndpoint[]> {
    return (await this.http.read<{ data: WebhookEndpoint[] }>('/v1/webhooks/config')).data;
  }

  getWebhook(id: string): Promise<WebhookEndpoint> {
    return this.http.read(`/v1/webhooks/config/${seg(id)}`);
  }

  updateWebhook(id: string, body: W.UpdateWebhookBody): Promise<WebhookEndpoint> {
    return this.http.once('PATCH', `/v1/webhooks/config/${seg(id)}`, body);
  }

  deleteWebhook(id: string): Promise<WebhookEndpoint> {
    return this.http.once('DELETE', `/v1/webhooks/config/${seg(id)}`);
  }

  rotateWebhookSecret(id: string, body: W.RotateSecretBody = {}): Promise<WebhookEndpointWithSecret> {
    return this.http.once('POST', `/v1/webhooks/config/${seg(id)}/rotate-secret`, body);
  }

  testWebhook(id: string): Promise<WebhookDelivery> {
    return this.http.once('POST', `/v1/webhooks/config/${seg(id)}/test`);
  }

  listWebhookDeliveries(id: string, query: W.ListDeliveriesQuery = {}): Promise<Page<WebhookDelivery>> {
    return this.http.read(`/v1/webhooks/config/${seg(id)}/deliveries`, query);
  }

  /** Every delivery to endpoint `id`, page after page. */
  webhookDeliveries(id: string, query: Omit<W.ListDeliveriesQuery, 'cursor'> = {}): AsyncGenerator<WebhookDelivery> {
    return pages((cursor) => this.listWebhookDeliveries(id, { ...query, ...(cursor ? { cursor } : {}) }));
  }

  replayWebhookDelivery(id: string, deliveryId: string): Promise<WebhookDelivery> {
    return this.http.once('POST', `/v1/webhooks/config/${seg(id)}/deliveries/${seg(deliveryId)}/replay`);
  }

  // Governed agents

  registerAgentTool(body: A.RegisterToolBody): Promise<Static<typeof A.Tool>> {
    return this.http.once('POST', '/v1/agents/tools', body);
  }

  async listAgentTools(): Promise<Static<typeof A.Tool>[]> {
    return (await this.http.read<Static<typeof A.ToolList>>('/v1/agents/tools')).data;
  }

  registerAgent(body: A.RegisterAgentBody): Promise<Static<typeof A.Agent>> {
    return this.http.once('POST', '/v1/agents', body);
  }

  openAgentRun(body: A.OpenRunBody): Promise<AgentRun> {
    return this.http.once('POST', '/v1/agents/runs', body);
  }

  /** Executed (the step and the tool's answer), or held for a human: the governing decision. */
  callAgentTool(runId: string, body: A.ToolCallBody, options?: WriteOptions): Promise<ToolCallResult | Decision> {
    return this.http.idempotent('POST', `/v1/agents/runs/${seg(runId)}/tool-calls`, body, options);
  }

  /** The run and one page of its steps (`after`, `limit`; the next page's `after` is `nextAfter`). */
  getAgentRun(runId: string, query: A.StepPageQuery = {}): Promise<AgentRun> {
    return this.http.read(`/v1/agents/runs/${seg(runId)}`, query);
  }

  replayAgentRun(runId: string, body: A.ReplayBody = {}): Promise<Static<typeof A.ReplayResult>> {
    return this.http.json({ method: 'POST', path: `/v1/agents/runs/${seg(runId)}/replay`, body, retryable: true });
  }

  rollbackAgentRun(runId: string): Promise<Static<typeof A.RollbackResult>> {
    return this.http.once('POST', `/v1/agents/runs/${seg(runId)}/rollback`);
  }

  // The event stream

  /** Events on `topics` as they happen, resuming from the last cursor across reconnects (proxy/client/stream.ts). */
  stream(options: SubscribeOptions): AsyncGenerator<StreamEvent> {
    const url = this.http.url('/v1/streaming').replace(/^http/, 'ws');
    const { apiKey, headers } = this.http.options;
    const auth = apiKey ? { ...headers, authorization: `Bearer ${apiKey}` } : null;
    return subscribe(url, auth, options);
  }

  // Operations

  openapi(): Promise<Record<string, unknown>> {
    return this.http.read('/v1/openapi.json');
  }

  async healthz(): Promise<boolean> {
    return (await this.http.request({ method: 'GET', path: '/healthz', retryable: true })).status === 200;
  }

  async readyz(): Promise<Static<typeof S.Readiness>> {
    return this.http.read('/readyz');
  }

  /** Prometheus text exposition. */
  async metrics(): Promise<string> {
    return (await this.http.request({ method: 'GET', path: '/metrics', retryable: true, headers: { accept: 'text/plain' } })).body;
  }

  private async act(id: string, action: DecisionAction, body: S.ActionBody, options?: WriteOptions): Promise<Decision> {
    return labelled(await this.http.idempotent('POST', `/v1/decisions/${seg(id)}/${action}`, body, options));
  }
}

async function* pages<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>): AsyncGenerator<T> {
  let cursor: string | null = null;
  do {
    const page: Page<T> = await fetchPage(cursor);
    yield* page.data;
    cursor = page.nextCursor;
  } while (cursor);
}

