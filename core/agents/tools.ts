import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { sortableId } from '../ids.ts';
import type { PolicyEvaluator } from '../policy-evaluator.ts';
import type { AddressGuard } from '../ssrf-guard.ts';
import type { Store } from '../store.ts';
import { checkInputSchema } from './input-schema.ts';

/**
 * The tools agents may call, per environment, by name. A tool is an HTTP endpoint (`upstream`)
 * that receives the call's input as a JSON body, guarded by a JSON Schema for that input, the
 * scopes an agent must hold to call it, and the policy that judges each call. A tool that can be
 * undone names a `compensate` endpoint, which rollback calls (core/agents/rollback.ts).
 */
export type ToolMethod = 'POST' | 'PUT' | 'PATCH';

export interface ToolEndpoint {
  method: ToolMethod;
  url: string;
  /** How long the endpoint may stay silent before the call fails as timed out. */
  timeoutMs: number;
}

export interface RegisterTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  upstream: { method: ToolMethod; url: string; timeoutMs?: number };
  scopes: string[];
  policy: string;
  compensate?: { method: ToolMethod; url: string; timeoutMs?: number };
  /** The top-level input field holding what a call spends; the run's spend sums it. */
  spendField?: string;
}

export interface ToolRecord {
  id: string;
  env: Env;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  upstream: ToolEndpoint;
  compensate: ToolEndpoint | null;
  scopes: string[];
  policy: string;
  spendField: string | null;
  createdBy: string;
  createdAt: string;
}

export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;

export class ToolRegistry {
  private readonly db: Database<ToolRecord, [Env, string]>;

  constructor(
    store: Store,
    private readonly evaluator: PolicyEvaluator,
    private readonly guard: AddressGuard,
  ) {
    this.db = store.database<ToolRecord, [Env, string]>('agent-tools');
  }

  /**
   * A new tool, checked but not stored (write it with `write` in the call's transaction). Its
   * schema must be valid, its policy loaded, its endpoints http(s) URLs the SSRF guard lets
   * through, its name unused.
   */
  async prepare(env: Env, keyId: string, body: RegisterTool): Promise<ToolRecord> {
    // Resolving names takes a while: the checks against the store come after it, as close to the write as they can.
    const upstream = await this.endpoint('upstream', body.upstream);
    const compensate = body.compensate ? await this.endpoint('compensate', body.compensate) : null;
    if (this.db.get([env, body.name])) throw new GatehouseError('conflict', `a tool named ${body.name} already exists`);
    if (!this.evaluator.has(body.policy)) {
      throw new GatehouseError('unknown_policy', `no policy named ${body.policy} is loaded`, { policies: this.evaluator.names() });
    }
    checkInputSchema(body.inputSchema);
    if (body.spendField !== undefined && !hasProperty(body.inputSchema, body.spendField)) {
      throw new GatehouseError('invalid_request', `spendField ${body.spendField} is not a property of the input schema`);
    }
    return {
      id: sortableId('tool_'),
      env,
      name: body.name,
      description: body.description,
      inputSchema: body.inputSchema,
      upstream,
      compensate,
      scopes: [...new Set(body.scopes)],
      policy: body.policy,
      spendField: body.spendField ?? null,
      createdBy: keyId,
      createdAt: new Date().toISOString(),
    };
  }

  private async endpoint(field: string, given: { method: ToolMethod; url: string; timeoutMs?: number }): Promise<ToolEndpoint> {
    let url: URL;
    try {
      url = new URL(given.url);
    } catch {
      throw new GatehouseError('invalid_request', `${field}.url is not an absolute URL`);
    }
    await this.guard.check(url, `body/${field}/url`);
    return { method: given.method, url: url.href, timeoutMs: given.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS };
  }

  /** Stores a tool; call inside `store.commit`. */
  write(tool: ToolRecord): void {
    this.db.put([tool.env, tool.name], tool);
  }

  get(env: Env, name: string): ToolRecord | undefined {
    return this.db.get([env, name]);
  }

  /** Every tool of the environment, by name. */
  list(env: Env): ToolRecord[] {
    const out: ToolRecord[] = [];
    for (const { value } of this.db.getRange({ start: [env], end: [env, '\uffff'] })) out.push(value);
    return out;
  }
}

function hasProperty(schema: Record<string, unknown>, name: string): boolean {
  const properties = schema.properties;
  return typeof properties === 'object' && properties !== null && Object.hasOwn(properties, name);
}
