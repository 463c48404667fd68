package gatehouse.decision_gate.v1_test

import data.gatehouse.decision_gate.v1 as policy

creator := {
	"keyId": "key_creator",
	"env": "sandbox",
	"scopes": ["decisions:read", "decisions:write", "decisions:execute"],
	"roles": ["engineer"],
}

reviewer := {
	"keyId": "key_reviewer",
	"env": "sandbox",
	"scopes": ["decisions:read", "decisions:approve", "decisions:execute"],
	"roles": ["sre"],
}

reader := {"keyId": "key_reader", "env": "sandbox", "scopes": ["decisions:read"], "roles": []}

unsigned := {"method": "POST", "path": "/v1/decisions", "signature": {"verified": false}}

signed := {"method": "POST", "path": "/v1/decisions", "signature": {
	"verified": true,
	"keyId": "jwk_creator",
	"alg": "ed25519",
	"label": "sig1",
	"covered": ["@method", "@target-uri", "content-digest"],
}}

decision(values, approvals) := {
	"id": "dec_01",
	"title": "Raise the connection pool limit",
	"policy": "decision-gate-v1",
	"status": "created",
	"context": [{"source": k, "value": v} | some k, v in values],
	"contextValues": values,
	"inputs": ["ops:pool_saturation"],
	"objectives": ["keep p99 under 200ms"],
	"createdBy": "key_creator",
	"approvals": approvals,
	"createdAt": "2025-01-01T00:00:00Z",
}

request(action, principal, dec) := {
	"action": action,
	"decision": dec,
	"principal": principal,
	"request": unsigned,
	"now_ns": 1735689600000000000,
}

approval_by(principal) := {"keyId": principal.keyId, "roles": principal.roles, "at": "2025-01-01T00:05:00Z"}

low_risk := decision({"risk:score": 20, "ops:pool_saturation": 95}, [])

high_risk := decision({"risk:score": 85}, [])

test_low_risk_create_runs_without_a_human if {
	inp := request("create", creator, low_risk)
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
	policy.nextAction == "execute" with input as inp
	policy.approvals == {"roles": [], "count": 0} with input as inp
	count(policy.reasons) == 0 with input as inp
	policy.requireSignature == false with input as inp
}

test_high_risk_create_waits_for_a_human if {
	inp := request("create", creator, high_risk)
	policy.allow with input as inp
	policy.gate == "human_approval" with input as inp
	policy.nextAction == "approve" with input as inp
	policy.approvals == {"roles": [], "count": 1} with input as inp
	policy.reasons == {"risk:score is 85, at or above the risk threshold 70: a human must approve"} with input as inp
}

test_threshold_is_inclusive if {
	below := request("create", creator, decision({"risk:score": 69.9}, []))
	policy.gate == "auto" with input as below
	at := request("create", creator, decision({"risk:score": 70}, []))
	policy.gate == "human_approval" with input as at
}

test_a_label_stored_twice_gates_on_its_highest_value if {
	inp := request("create", creator, decision({"risk:score": [20, 90, 5]}, []))
	policy.gate == "human_approval" with input as inp
	policy.reasons == {"risk:score is 90, at or above the risk threshold 70: a human must approve"} with input as inp
	low := request("create", creator, decision({"risk:score": [20, 5]}, []))
	policy.gate == "auto" with input as low
}

test_only_the_risk_namespace_gates if {
	inp := request("create", creator, decision({"finance:amount": 1000000, "risk:label": "critical"}, []))
	policy.gate == "auto" with input as inp
}

test_string_context_runs_without_a_human if {
	dec := object.union(decision({}, []), {"context": "routine certificate rotation"})
	inp := request("create", creator, dec)
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
}

test_create_needs_write_scope if {
	inp := request("create", reader, low_risk)
	not policy.allow with input as inp
	policy.reasons == {"scope decisions:write is required to create a decision"} with input as inp
	policy.nextAction == "none" with input as inp
}

test_creator_may_not_approve if {
	self_approver := object.union(creator, {"scopes": ["decisions:write", "decisions:approve"]})
	inp := request("approve", self_approver, high_risk)
	not policy.allow with input as inp
	"the creator of a decision may not approve it" in policy.reasons with input as inp
	policy.nextAction == "approve" with input as inp
}

test_approve_needs_approve_scope if {
	inp := request("approve", reader, high_risk)
	not policy.allow with input as inp
	"scope decisions:approve is required to approve a decision" in policy.reasons with input as inp
}

test_reviewer_approval_unblocks_execution if {
	inp := request("approve", reviewer, high_risk)
	policy.allow with input as inp
	policy.nextAction == "execute" with input as inp
}

test_same_key_cannot_approve_twice if {
	inp := request("approve", reviewer, decision({"risk:score": 85}, [approval_by(reviewer)]))
	not policy.allow with input as inp
	"this key has already approved the decision" in policy.reasons with input as inp
}

test_gated_execution_blocked_without_approval if {
	inp := request("execute", creator, high_risk)
	not policy.allow with input as inp
	"execution needs 1 approval(s) from keys other than the creator, 0 recorded" in policy.reasons with input as inp
	policy.nextAction == "approve" with input as inp
}

test_creators_own_approval_does_not_count if {
	inp := request("execute", creator, decision({"risk:score": 85}, [approval_by(creator)]))
	not policy.allow with input as inp
}

test_gated_execution_allowed_after_approval if {
	inp := request("execute", creator, decision({"risk:score": 85}, [approval_by(reviewer)]))
	policy.allow with input as inp
	policy.nextAction == "none" with input as inp
}

test_execute_needs_execute_scope if {
	no_exec := object.union(creator, {"scopes": ["decisions:write"]})
	inp := request("execute", no_exec, low_risk)
	not policy.allow with input as inp
	policy.reasons == {"scope decisions:execute is required to execute a decision"} with input as inp
}

test_reject_allowed_for_approvers if {
	inp := request("reject", reviewer, high_risk)
	policy.allow with input as inp
	policy.nextAction == "none" with input as inp
}

test_production_requires_a_verified_signature if {
	prod := object.union(creator, {"env": "production"})
	inp := request("create", prod, low_risk)
	policy.requireSignature with input as inp
	not policy.allow with input as inp
	"production keys must sign their requests" in policy.reasons with input as inp
	signed_inp := object.union(inp, {"request": signed})
	policy.allow with input as signed_inp
}

test_cancel_by_creator_or_admin_only if {
	by_creator := request("cancel", creator, high_risk)
	policy.allow with input as by_creator
	outsider := object.union(reviewer, {"scopes": ["decisions:write"]})
	by_outsider := request("cancel", outsider, high_risk)
	not policy.allow with input as by_outsider
	"only the creator of a decision or an admin may cancel it" in policy.reasons with input as by_outsider
	admin := object.union(outsider, {"scopes": ["decisions:write", "admin"]})
	by_admin := request("cancel", admin, high_risk)
	policy.allow with input as by_admin
}

test_unknown_action_denied if {
	inp := request("archive", creator, low_risk)
	not policy.allow with input as inp
	policy.reasons == {"unknown action"} with input as inp
}

test_missing_principal_denied if {
	inp := object.remove(request("create", creator, low_risk), ["principal"])
	not policy.allow with input as inp
	"the request has no authenticated principal" in policy.reasons with input as inp
}

test_production_signature_must_be_verified_true if {
	prod := object.union(creator, {"env": "production"})
	no_request := object.remove(request("create", prod, low_risk), ["request"])
	not policy.allow with input as no_request
	stringly := object.union(request("create", prod, low_risk), {"request": {"signature": {"verified": "true"}}})
	not policy.allow with input as stringly
}
