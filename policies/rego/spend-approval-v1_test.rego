package gatehouse.spend_approval.v1_test

import data.gatehouse.spend_approval.v1 as policy

requester := {
	"keyId": "key_requester",
	"env": "sandbox",
	"scopes": ["decisions:write", "decisions:execute"],
	"roles": ["procurement"],
}

approver_a := {
	"keyId": "key_fin_a",
	"env": "sandbox",
	"scopes": ["decisions:approve"],
	"roles": ["finance-approver"],
}

approver_b := {
	"keyId": "key_fin_b",
	"env": "sandbox",
	"scopes": ["decisions:approve"],
	"roles": ["finance-approver"],
}

cfo := {"keyId": "key_cfo", "env": "sandbox", "scopes": ["decisions:approve"], "roles": ["cfo"]}

engineer := {"keyId": "key_eng", "env": "sandbox", "scopes": ["decisions:approve"], "roles": ["engineer"]}

spend(amount, approvals) := {
	"id": "dec_spend",
	"title": "Renew the observability contract",
	"policy": "spend-approval-v1",
	"status": "created",
	"context": [{"source": "finance:amount", "value": amount}],
	"contextValues": {"finance:amount": amount},
	"inputs": ["finance:amount"],
	"objectives": ["stay within the Q3 budget"],
	"createdBy": "key_requester",
	"approvals": approvals,
	"createdAt": "2025-01-01T00:00:00Z",
}

request(action, principal, dec) := {
	"action": action,
	"decision": dec,
	"principal": principal,
	"request": {"method": "POST", "path": "/v1/decisions", "signature": {"verified": false}},
	"now_ns": 1735689600000000000,
}

approval_by(principal) := {"keyId": principal.keyId, "roles": principal.roles, "at": "2025-01-01T00:05:00Z"}

test_small_spend_runs_without_a_human if {
	inp := request("create", requester, spend(250, []))
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
	policy.nextAction == "execute" with input as inp
	policy.approvals == {"roles": [], "count": 0} with input as inp
	count(policy.reasons) == 0 with input as inp
}

test_mid_spend_needs_one_finance_approver if {
	inp := request("create", requester, spend(5000, []))
	policy.allow with input as inp
	policy.gate == "human_approval" with input as inp
	policy.nextAction == "approve" with input as inp
	policy.approvals == {"roles": ["finance-approver"], "count": 1} with input as inp
	policy.reasons == {"amount 5000 is at least 1000: one finance-approver must approve"} with input as inp
}

test_large_spend_needs_two_approvers_with_cfo if {
	inp := request("create", requester, spend(75000, []))
	policy.allow with input as inp
	policy.approvals == {"roles": ["cfo", "finance-approver"], "count": 2} with input as inp
	policy.reasons == {"amount 75000 is at least 50000: two approvers, one of them the cfo, must approve"} with input as inp
}

test_tier_boundaries if {
	just_below := request("create", requester, spend(999.99, []))
	policy.gate == "auto" with input as just_below
	at_auto_limit := request("create", requester, spend(1000, []))
	policy.approvals.count == 1 with input as at_auto_limit
	below_cfo := request("create", requester, spend(49999, []))
	policy.approvals.count == 1 with input as below_cfo
	at_cfo := request("create", requester, spend(50000, []))
	policy.approvals.count == 2 with input as at_cfo
}

test_missing_amount_denied if {
	dec := object.union(object.remove(spend(0, []), ["context", "contextValues"]), {"context": "buy some laptops", "contextValues": {}})
	inp := request("create", requester, dec)
	not policy.allow with input as inp
	policy.reasons == {"the context must carry a numeric finance:amount"} with input as inp
	policy.approvals.count == 2 with input as inp
}

test_an_amount_stored_twice_is_not_one_number if {
	dec := object.union(spend(0, []), {"contextValues": {"finance:amount": [900000, 5]}})
	inp := request("create", requester, dec)
	not policy.allow with input as inp
	policy.reasons == {"the context must carry a numeric finance:amount"} with input as inp
	policy.approvals.count == 2 with input as inp
	execute := request("execute", requester, dec)
	not policy.allow with input as execute
}

test_negative_amount_denied if {
	inp := request("create", requester, spend(-10, []))
	not policy.allow with input as inp
	"finance:amount must not be negative" in policy.reasons with input as inp
}

test_malformed_spend_can_still_be_cancelled if {
	dec := object.union(spend(0, []), {"contextValues": {"finance:amount": "a lot"}})
	inp := request("cancel", requester, dec)
	policy.allow with input as inp
}

test_creator_may_not_approve_even_as_finance_approver if {
	self := object.union(requester, {"scopes": ["decisions:approve"], "roles": ["finance-approver"]})
	inp := request("approve", self, spend(5000, []))
	not policy.allow with input as inp
	"the creator of a spend may not approve it" in policy.reasons with input as inp
}

test_approver_needs_a_finance_role if {
	inp := request("approve", engineer, spend(5000, []))
	not policy.allow with input as inp
	"only a finance-approver or the cfo may approve a spend" in policy.reasons with input as inp
}

test_same_key_cannot_approve_twice if {
	inp := request("approve", approver_a, spend(75000, [approval_by(cfo), approval_by(approver_a)]))
	not policy.allow with input as inp
	"this key has already approved the spend" in policy.reasons with input as inp
}

test_finance_approval_unblocks_mid_spend if {
	approving := request("approve", approver_a, spend(5000, []))
	policy.allow with input as approving
	policy.nextAction == "execute" with input as approving
	executing := request("execute", requester, spend(5000, [approval_by(approver_a)]))
	policy.allow with input as executing
	policy.nextAction == "none" with input as executing
}

test_execution_blocked_until_approved if {
	inp := request("execute", requester, spend(5000, []))
	not policy.allow with input as inp
	"execution needs 1 approval(s) from finance approvers other than the creator, 0 recorded" in policy.reasons with input as inp
	"execution needs an approval from a holder of role finance-approver" in policy.reasons with input as inp
	policy.nextAction == "approve" with input as inp
}

test_cfo_counts_as_finance_approver if {
	inp := request("execute", requester, spend(5000, [approval_by(cfo)]))
	policy.allow with input as inp
}

test_large_spend_without_cfo_blocked if {
	inp := request("execute", requester, spend(75000, [approval_by(approver_a), approval_by(approver_b)]))
	not policy.allow with input as inp
	policy.reasons == {
		"amount 75000 is at least 50000: two approvers, one of them the cfo, must approve",
		"execution needs an approval from a holder of role cfo",
	} with input as inp
}

test_large_spend_with_cfo_and_finance_approver_runs if {
	first := request("approve", cfo, spend(75000, [approval_by(approver_a)]))
	policy.allow with input as first
	policy.nextAction == "execute" with input as first
	inp := request("execute", requester, spend(75000, [approval_by(approver_a), approval_by(cfo)]))
	policy.allow with input as inp
}

test_one_key_counts_once if {
	again := object.union(approval_by(cfo), {"at": "2025-01-01T09:00:00Z"})
	twice := [approval_by(cfo), again]
	inp := request("execute", requester, spend(75000, twice))
	not policy.allow with input as inp
	"execution needs 2 approval(s) from finance approvers other than the creator, 1 recorded" in policy.reasons with input as inp
}

test_production_spend_requires_signature if {
	prod := object.union(requester, {"env": "production"})
	inp := request("create", prod, spend(250, []))
	policy.requireSignature with input as inp
	not policy.allow with input as inp
	signed := object.union(inp, {"request": {"signature": {"verified": true, "keyId": "jwk_req", "alg": "ed25519"}}})
	policy.allow with input as signed
}
