package gatehouse.agent_tools.v1_test

import data.gatehouse.agent_tools.v1 as policy

runner := {"keyId": "key_runner", "env": "sandbox", "scopes": ["agents:run"], "roles": []}

approver := {"keyId": "key_approver", "env": "sandbox", "scopes": ["decisions:approve", "decisions:execute"], "roles": []}

agent := {"id": "agt_1", "name": "billing-bot", "scopes": ["payments:write", "records:delete"], "tools": ["pay", "delete-records"]}

pay := {"name": "pay", "scopes": ["payments:write"], "spendField": "amount", "compensate": true}

run(spend, state) := {"id": "run_1", "state": state, "history": [], "spend": spend, "calls": 0, "limits": {"maxToolCalls": 10, "maxSpend": 100000, "maxWallMs": 60000}}

call(tool, inp, spend) := {
	"action": "tool_call",
	"agent": agent,
	"tool": tool,
	"input": inp,
	"run": run(spend, "open"),
	"principal": runner,
	"request": {"method": "POST", "path": "/v1/agents/runs/run_1/tool-calls", "signature": {"verified": false}},
}

held(action, principal, approvals, state) := object.union(call(pay, {"amount": 5000}, 0), {
	"action": action,
	"principal": principal,
	"run": run(0, state),
	"requester": runner,
	"decision": {"id": "dec_1", "status": "created", "createdBy": "key_runner", "approvals": approvals},
})

test_small_call_runs_without_a_human if {
	inp := call(pay, {"amount": 20}, 0)
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
	count(policy.reasons) == 0 with input as inp
}

test_large_amount_needs_review if {
	inp := call(pay, {"amount": 1000}, 0)
	policy.allow with input as inp
	policy.gate == "human_approval" with input as inp
	policy.nextAction == "approve" with input as inp
	policy.reasons == {"spending 1000 is at least 1000: a human must approve"} with input as inp
}

test_some_tools_always_need_review if {
	inp := call({"name": "delete-records", "scopes": ["records:delete"]}, {"table": "t"}, 0)
	policy.allow with input as inp
	policy.gate == "human_approval" with input as inp
}

test_budget_is_summed_over_the_run if {
	inp := call(pay, {"amount": 600}, 9500)
	not policy.allow with input as inp
	policy.reasons == {"spending 600 would bring the run to 10100, over the agent's budget of 10000"} with input as inp
	within := call(pay, {"amount": 500}, 9500)
	policy.allow with input as within
}

test_tool_scope_must_be_within_the_agent_scopes if {
	wide := {"name": "pay", "scopes": ["payments:write", "payments:admin"], "spendField": "amount"}
	inp := call(wide, {"amount": 1}, 0)
	not policy.allow with input as inp
	policy.reasons == {"the tool needs scope payments:admin, which the agent does not hold"} with input as inp
}

test_tool_not_on_the_agent_is_denied if {
	inp := call({"name": "transfer", "scopes": []}, {}, 0)
	not policy.allow with input as inp
	"the tool is not one the agent may call" in policy.reasons with input as inp
}

test_negative_spend_denied if {
	inp := call(pay, {"amount": -5}, 0)
	not policy.allow with input as inp
	"the spend field must be a non-negative number" in policy.reasons with input as inp
}

test_caller_needs_agents_run if {
	inp := object.union(call(pay, {"amount": 1}, 0), {"principal": approver})
	not policy.allow with input as inp
}

test_stopped_run_denies_calls if {
	inp := object.union(call(pay, {"amount": 1}, 0), {"run": run(0, "stopped")})
	not policy.allow with input as inp
	"the run is not open" in policy.reasons with input as inp
}

test_rollback_never_waits_for_a_human if {
	inp := object.union(call(pay, {"amount": 5000}, 0), {"action": "rollback"})
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
}

test_requester_cannot_approve if {
	inp := held("approve", object.union(runner, {"scopes": ["decisions:approve"]}), [], "open")
	not policy.allow with input as inp
	"the requester of a tool call may not approve it" in policy.reasons with input as inp
}

test_approve_then_execute if {
	approve := held("approve", approver, [], "open")
	policy.allow with input as approve
	policy.nextAction == "execute" with input as approve
	early := held("execute", approver, [], "open")
	not policy.allow with input as early
	execute := held("execute", approver, [{"keyId": "key_approver", "roles": [], "at": "2025-01-01T00:00:00Z"}], "open")
	policy.allow with input as execute
	policy.nextAction == "none" with input as execute
}

test_a_stopped_run_is_never_executed if {
	inp := held("execute", approver, [{"keyId": "key_approver", "roles": [], "at": "2025-01-01T00:00:00Z"}], "rolled_back")
	not policy.allow with input as inp
	"the run is not open" in policy.reasons with input as inp
	reject := held("reject", approver, [], "rolled_back")
	policy.allow with input as reject
}

test_rollback_of_a_closed_run_is_allowed if {
	inp := object.union(call(pay, {"amount": 5}, 0), {"action": "rollback", "run": run(0, "rolled_back")})
	policy.allow with input as inp
}

test_denied_call_gives_only_its_denials if {
	inp := call(pay, {"amount": 9990}, 9500)
	policy.reasons == {"spending 9990 would bring the run to 19490, over the agent's budget of 10000"} with input as inp
}
