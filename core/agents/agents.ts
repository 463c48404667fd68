import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { sortableId } from '../ids.ts';
import type { Store } from '../store.ts';
import type { ToolRegistry } from './tools.ts';

/**
 * Agents: named callers of tools. An agent holds scopes and lists the tools it may call; every
 * tool it lists must need only scopes the agent holds, so an agent can never be given a tool
 * wider than itself. Each call is checked again by the tool's policy (core/agents/tool-calls.ts).
 */
export interface RegisterAgent {
  name: string;
  scopes: string[];
  tools: string[];
}

export interface AgentRecord {
  id: string;
  env: Env;
  name: string;
  scopes: string[];
  tools: string[];
  createdBy: string;
  createdAt: string;
}

export class AgentRegistry {
  private readonly db: Database<AgentRecord, [Env, string]>;

  constructor(
    store: Store,
    private readonly tools: ToolRegistry,
  ) {
    this.db = store.database<AgentRecord, [Env, string]>('agents');
  }

  /**
   * A new agent, checked but not stored. An unknown tool is 400; a tool needing a scope the
   * agent does not hold is 403 `forbidden`, naming the tool and the scopes it lacks.
   */
  prepare(env: Env, keyId: string, body: RegisterAgent): AgentRecord {
    const scopes = [...new Set(body.scopes)];
    for (const name of new Set(body.tools)) {
      const tool = this.tools.get(env, name);
      if (!tool) throw new GatehouseError('invalid_request', `no tool named ${name} is registered`, { tool: name });
      const missing = tool.scopes.filter((scope) => !scopes.includes(scope));
      if (missing.length) {
        throw new GatehouseError('forbidden', `tool ${name} needs scopes the agent does not hold: ${missing.join(', ')}`, { tool: name, missing });
      }
    }
    return { id: sortableId('agt_'), env, name: body.name, scopes, tools: [...new Set(body.tools)], createdBy: keyId, createdAt: new Date().toISOString() };
  }

  /** Stores an agent; call inside `store.commit`. */
  write(agent: AgentRecord): void {
    this.db.put([agent.env, agent.id], agent);
  }

  /** The agent, only in its own environment. */
  load(env: Env, id: string): AgentRecord {
    const agent = this.db.get([env, id]);
    if (!agent) throw new GatehouseError('not_found', `no agent ${id}`);
    return agent;
  }
}
