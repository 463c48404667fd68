import type { AuditLog } from '../audit-log.ts';
import type { DecisionWorkflow } from '../decision-workflow.ts';
import type { EventLog } from '../events/event-log.ts';
import type { PolicyEvaluator } from '../policy-evaluator.ts';
import type { AddressGuard } from '../ssrf-guard.ts';
import type { Store } from '../store.ts';
import { AgentRegistry } from './agents.ts';
import type { RollbackDeps } from './rollback.ts';
import { RunStore } from './runs.ts';
import { ToolCalls } from './tool-calls.ts';
import { ToolSender } from './tool-sender.ts';
import { ToolRegistry } from './tools.ts';

/** The governed-agents services one server runs on (docs/agents.md), built over its store. */
export class GovernedAgents implements RollbackDeps {
  readonly tools: ToolRegistry;
  readonly agents: AgentRegistry;
  readonly runs: RunStore;
  readonly sender = new ToolSender();
  readonly calls: ToolCalls;

  constructor(
    readonly store: Store,
    readonly workflow: DecisionWorkflow,
    readonly audit: AuditLog,
    readonly events: EventLog,
    evaluator: PolicyEvaluator,
    /** Judges tools' endpoints when registered and every connection to them. */
    readonly guard: AddressGuard,
  ) {
    this.tools = new ToolRegistry(store, evaluator, guard);
    this.agents = new AgentRegistry(store, this.tools);
    this.runs = new RunStore(store);
    this.calls = new ToolCalls(store, workflow, audit, events, this.tools, this.agents, this.runs, this.sender);
  }
}
