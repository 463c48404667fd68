package gatehouse.security_review.v1_test

import data.gatehouse.security_review.v1 as policy

opener := {"keyId": "key_admin_1", "env": "sandbox", "scopes": ["admin"], "roles": ["security"]}

second_admin := {"keyId": "key_admin_2", "env": "sandbox", "scopes": ["admin"], "roles": ["security"]}

writer := {"keyId": "key_writer", "env": "sandbox", "scopes": ["decisions:write", "decisions:approve"], "roles": []}

review(approvals) := {
	"id": "dec_review",
	"title": "Activate production key key_prod_7",
	"policy": "security-review-v1",
	"status": "created",
	"context": "production key key_prod_7 for the billing service",
	"contextValues": {},
	"inputs": [],
	"objectives": [],
	"createdBy": "key_admin_1",
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

test_admin_opens_a_review if {
	inp := request("create", opener, review([]))
	policy.allow with input as inp
	policy.gate == "security_review" with input as inp
	policy.nextAction == "approve" with input as inp
	policy.approvals == {"roles": [], "count": 1} with input as inp
	policy.reasons == {"production access needs a security review approved by a second admin"} with input as inp
}

test_non_admin_cannot_open_a_review if {
	inp := request("create", writer, review([]))
	not policy.allow with input as inp
	"scope admin is required to create a decision" in policy.reasons with input as inp
	policy.nextAction == "none" with input as inp
}

test_second_admin_approves if {
	inp := request("approve", second_admin, review([]))
	policy.allow with input as inp
	policy.nextAction == "none" with input as inp
}

test_opener_cannot_approve if {
	inp := request("approve", opener, review([]))
	not policy.allow with input as inp
	"the admin who opened a security review may not approve it" in policy.reasons with input as inp
	policy.nextAction == "approve" with input as inp
}

test_decision_scopes_cannot_approve if {
	inp := request("approve", writer, review([]))
	not policy.allow with input as inp
	"scope admin is required to approve a decision" in policy.reasons with input as inp
}

test_same_admin_cannot_approve_twice if {
	inp := request("approve", second_admin, review([approval_by(second_admin)]))
	not policy.allow with input as inp
	policy.reasons == {"this key has already approved the security review"} with input as inp
}

test_admin_may_reject if {
	inp := request("reject", second_admin, review([]))
	policy.allow with input as inp
	policy.nextAction == "none" with input as inp
}

test_nothing_to_execute if {
	inp := request("execute", opener, review([approval_by(second_admin)]))
	not policy.allow with input as inp
	policy.reasons == {"a security review takes effect when approved: there is nothing to execute"} with input as inp
}

test_production_admin_must_sign if {
	prod := object.union(second_admin, {"env": "production"})
	inp := request("approve", prod, review([]))
	policy.requireSignature with input as inp
	not policy.allow with input as inp
	signed := object.union(inp, {"request": {"signature": {"verified": true, "keyId": "jwk_admin_2", "alg": "ecdsa-p256-sha256"}}})
	policy.allow with input as signed
}

test_the_host_operator_opens_a_review_unsigned if {
	operator := {"keyId": "operator:cli", "env": "production", "scopes": ["admin"], "roles": ["operator"]}
	inp := request("create", operator, object.union(review([]), {"createdBy": "operator:cli"}))
	not policy.requireSignature with input as inp
	policy.allow with input as inp
}

test_an_api_key_cannot_pass_for_the_operator if {
	prod := object.union(second_admin, {"env": "production", "roles": ["operator"]})
	inp := request("approve", prod, review([]))
	policy.requireSignature with input as inp
	not policy.allow with input as inp
}
