# Governed agents (docs/agents.md): may this agent make this tool call, and must a human approve
# it first? The server asks with `action` `tool_call` (a call) or `rollback` (its compensating
# action) and the input
#   {agent: {id, name, scopes, tools}, tool: {name, scopes, spendField, compensate},
#    input, run: {id, state, history (the last 20 steps), spend, calls, byState, byTool, limits},
#    principal, request}
# Budgets and review rules live in `data.agent_tools` (policies/rego/data.json):
#   default_budget, budgets: {agentName: n}   the most an agent's run may spend (sum of the tool's
#                                             spend field over the calls not refused)
#   review_amount                             calls spending at least this need a human
#   always_review: [toolName]                 tools whose every call needs a human
# A call answered `gate: "human_approval"` is held as a governed decision under this same policy;
# approving, rejecting, executing or cancelling it evaluates the policy again with that action,
# the decision, the call's facts as above and `requester` (the key that made the call).
package gatehouse.agent_tools.v1

import data.gatehouse.lib.decisions

settings := data.agent_tools

calling if input.action in {"tool_call", "rollback"}

acting if {
	is_string(input.action)
	not calling
}

# The amount a call spends: the input field the tool names as its spend field, or nothing.
default amount := 0

amount := v if {
	is_string(input.tool.spendField)
	v := input.input[input.tool.spendField]
}

budget := object.get(settings.budgets, input.agent.name, settings.default_budget)

run_open if input.run.state == "open"

on_agent if input.tool.name in input.agent.tools

scopes_covered if {
	every scope in input.tool.scopes {
		scope in input.agent.scopes
	}
}

can_run if "agents:run" in input.principal.scopes

can_run if "admin" in input.principal.scopes

call_denials contains msg if some msg in decisions.denials

call_denials contains "scope agents:run is required to act for an agent" if not can_run

# A rollback undoes a run that has stopped or was rolled back before; only calls need it open.
run_ok if input.action == "rollback"

run_ok if run_open

call_denials contains "the run is not open" if not run_ok

call_denials contains "the tool is not one the agent may call" if not on_agent

call_denials contains msg if {
	some scope in input.tool.scopes
	not scope in input.agent.scopes
	msg := sprintf("the tool needs scope %s, which the agent does not hold", [scope])
}

call_denials contains "the spend field must be a non-negative number" if {
	not is_number(amount)
}

call_denials contains "the spend field must be a non-negative number" if amount < 0

call_denials contains msg if {
	input.action == "tool_call"
	total := input.run.spend + amount
	total > budget
	msg := sprintf("spending %v would bring the run to %v, over the agent's budget of %v", [amount, total, budget])
}

# Only calls wait for a human: a rollback undoes what already happened and is judged on scope
# alone, so that undoing is never stuck behind the approvals that doing needed.
review_reasons contains msg if {
	input.action == "tool_call"
	input.tool.name in settings.always_review
	msg := sprintf("every call of tool %s needs human approval", [input.tool.name])
}

review_reasons contains msg if {
	input.action == "tool_call"
	amount >= settings.review_amount
	msg := sprintf("spending %v is at least %v: a human must approve", [amount, settings.review_amount])
}

review if count(review_reasons) > 0

default gate := "auto"

gate := "human_approval" if review

default approvals := {"roles": [], "count": 0}

approvals := {"roles": [], "count": 1} if review

default allow := false

allow if {
	calling
	can_run
	run_ok
	on_agent
	scopes_covered
	count(call_denials) == 0
}

reasons contains msg if {
	calling
	some msg in call_denials
}

# A refused call is explained by its denials alone: what a human would have had to approve
# does not matter once nothing will be approved.
reasons contains msg if {
	calling
	count(call_denials) == 0
	some msg in review_reasons
}

# Held calls, acted on through /v1/decisions. The requester may not approve its own call, and a
# call whose run has stopped or been rolled back is never approved or executed.
action_denials contains msg if some msg in decisions.denials

action_denials contains msg if some msg in decisions.scope_denials(decisions.action_scopes)

action_denials contains "the requester of a tool call may not approve it" if {
	input.action == "approve"
	decisions.is_creator
}

action_denials contains "this key has already approved the tool call" if {
	input.action == "approve"
	decisions.already_approved_by_principal
}

action_denials contains "the run is not open" if {
	input.action in {"approve", "execute"}
	not run_open
}

action_denials contains "executing the tool call needs 1 approval from a key other than its requester" if {
	input.action == "execute"
	not approvals_met(decisions.recorded_approvals)
}

approvals_met(records) if count(decisions.approver_keys(records)) >= 1

allow if {
	acting
	decisions.known(decisions.action_scopes)
	count(action_denials) == 0
}

reasons contains msg if {
	acting
	some msg in action_denials
}

resulting_approvals := decisions.approvals_after if allow

resulting_approvals := decisions.recorded_approvals if not allow

closes if {
	allow
	input.action in {"reject", "execute", "cancel"}
}

closes if {
	acting
	not decisions.known(decisions.action_scopes)
}

default nextAction := "none"

nextAction := "approve" if {
	calling
	allow
	review
}

nextAction := "execute" if {
	acting
	not closes
	approvals_met(resulting_approvals)
}

nextAction := "approve" if {
	acting
	not closes
	not approvals_met(resulting_approvals)
}

requireSignature := decisions.signature_required
