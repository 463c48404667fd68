package gatehouse.route_access.v1_test

import data.gatehouse.route_access.v1 as policy

principal(roles) := {"keyId": "key_svc", "env": "production", "scopes": [], "roles": roles}

orders_route := {"name": "orders", "upstream": "http://127.0.0.1:9001", "requireSignature": false}

unsigned := {"verified": false}

signed := {"verified": true, "keyId": "jwk_svc", "alg": "ed25519", "label": "sig1", "covered": ["@method", "@target-uri"]}

request(method, path, roles) := {
	"method": method,
	"path": path,
	"query": {},
	"headers": {"content-type": "application/json"},
	"principal": principal(roles),
	"signature": unsigned,
	"route": orders_route,
}

test_viewer_reads if {
	inp := request("GET", "/api/orders/42", ["viewer"])
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
	policy.requireSignature == false with input as inp
	count(policy.reasons) == 0 with input as inp
}

test_viewer_cannot_write if {
	inp := request("POST", "/api/orders", ["viewer"])
	not policy.allow with input as inp
	policy.reasons == {"no role of this key grants POST /api/orders"} with input as inp
}

test_unknown_role_and_no_roles_denied if {
	stranger := request("GET", "/api/orders", ["intern"])
	not policy.allow with input as stranger
	nobody := request("GET", "/api/orders", [])
	not policy.allow with input as nobody
}

test_prefixes_match_whole_segments if {
	exact := request("GET", "/admin/status", ["developer"])
	policy.allow with input as exact
	below := request("GET", "/admin/status/db", ["developer"])
	policy.allow with input as below
	lookalike := request("GET", "/admin/statusboard", ["developer"])
	not policy.allow with input as lookalike
}

test_methods_are_case_sensitive if {
	inp := request("get", "/api/orders", ["viewer"])
	not policy.allow with input as inp
}

test_roles_combine if {
	inp := request("PUT", "/api/orders/42", ["viewer", "developer"])
	policy.allow with input as inp
}

test_dot_segments_refused if {
	inp := request("GET", "/api/../admin/keys", ["viewer"])
	not policy.allow with input as inp
	"the path is not in normal form" in policy.reasons with input as inp
	trailing := request("GET", "/api/orders/..", ["viewer"])
	not policy.allow with input as trailing
}

test_encoded_and_doubled_separators_refused if {
	encoded := request("GET", "/api/%2E%2E/admin", ["viewer"])
	not policy.allow with input as encoded
	doubled := request("GET", "/api//orders", ["viewer"])
	not policy.allow with input as doubled
	backslash := request("GET", "/api/..\\admin", ["viewer"])
	not policy.allow with input as backslash
}

test_admin_delete_is_gated_and_signed if {
	base := request("DELETE", "/admin/users/7", ["operator"])
	inp := object.union(base, {"signature": signed})
	policy.allow with input as inp
	policy.gate == "human_approval" with input as inp
	policy.requireSignature with input as inp
	policy.reasons == {"DELETE /admin/users/7 needs human approval"} with input as inp
}

test_unsigned_admin_write_denied if {
	inp := request("DELETE", "/admin/users/7", ["operator"])
	not policy.allow with input as inp
	"this route requires a signed request" in policy.reasons with input as inp
}

test_reads_under_admin_are_not_gated if {
	inp := request("GET", "/admin/users", ["operator"])
	policy.allow with input as inp
	policy.gate == "auto" with input as inp
	policy.requireSignature == false with input as inp
}

test_admin_wildcard_still_gated if {
	base := request("POST", "/admin/keys/rotate", ["admin"])
	inp := object.union(base, {"signature": signed})
	policy.allow with input as inp
	policy.gate == "human_approval" with input as inp
}

test_route_scoped_grant if {
	billing := {"name": "billing", "upstream": "http://127.0.0.1:9002", "requireSignature": false}
	base := request("POST", "/billing/invoices", ["billing-operator"])
	on_billing := object.union(base, {"route": billing, "signature": signed})
	policy.allow with input as on_billing
	on_orders := object.union(base, {"signature": signed})
	not policy.allow with input as on_orders
}

test_route_flag_requires_signature if {
	strict := {"name": "orders", "upstream": "http://127.0.0.1:9001", "requireSignature": true}
	inp := object.union(request("GET", "/api/orders", ["viewer"]), {"route": strict})
	policy.requireSignature with input as inp
	not policy.allow with input as inp
	signed_inp := object.union(inp, {"signature": signed})
	policy.allow with input as signed_inp
}

test_missing_principal_denied if {
	inp := object.remove(request("GET", "/api/orders", ["viewer"]), ["principal"])
	not policy.allow with input as inp
	"the request has no authenticated principal" in policy.reasons with input as inp
}

custom := {
	"grants": {"auditor": [{"methods": ["GET"], "paths": ["/ledger"]}]},
	"gated": [{"methods": ["GET"], "paths": ["/ledger/export"]}],
	"signed": [],
}

test_rules_come_from_data if {
	ledger := request("GET", "/ledger/2025", ["auditor"])
	policy.allow with input as ledger with data.route_access as custom
	not policy.allow with input as ledger
	export := request("GET", "/ledger/export", ["auditor"])
	policy.gate == "human_approval" with input as export with data.route_access as custom
	api := request("GET", "/api/orders", ["viewer"])
	not policy.allow with input as api with data.route_access as custom
}

test_no_data_denies_everything if {
	inp := request("GET", "/api/orders", ["admin"])
	not policy.allow with input as inp with data.route_access as {}
}

# Held requests: the decision a gated request becomes, acted on through /v1/decisions.

held_delete := {
	"method": "DELETE",
	"path": "/admin/users/7",
	"query": {},
	"headers": {},
	"signature": signed,
	"route": orders_route,
	"requester": principal(["operator"]),
}

actor(key_id, roles, scopes) := {"keyId": key_id, "env": "sandbox", "scopes": scopes, "roles": roles}

acting_on(action, who, approvals) := object.union(held_delete, {
	"action": action,
	"principal": who,
	"decision": {"id": "dec_1", "createdBy": "key_svc", "approvals": approvals},
	"request": {"method": "POST", "path": "/v1/decisions/dec_1/approve", "signature": unsigned},
})

approver := actor("key_ops", ["operator"], ["decisions:approve", "decisions:execute"])

test_gated_request_waits_for_one_approval if {
	inp := object.union(held_delete, {"principal": principal(["operator"])})
	policy.allow with input as inp
	policy.nextAction == "approve" with input as inp
	policy.approvals == {"roles": [], "count": 1} with input as inp
}

test_ungated_request_needs_nothing if {
	inp := request("GET", "/api/orders", ["viewer"])
	policy.nextAction == "none" with input as inp
	policy.approvals == {"roles": [], "count": 0} with input as inp
}

test_another_granted_key_approves_then_executes if {
	approve := acting_on("approve", approver, [])
	policy.allow with input as approve
	policy.nextAction == "execute" with input as approve
	execute := acting_on("execute", approver, [{"keyId": "key_ops", "roles": ["operator"]}])
	policy.allow with input as execute
	policy.nextAction == "none" with input as execute
}

test_requester_cannot_approve if {
	inp := acting_on("approve", actor("key_svc", ["operator"], ["decisions:approve"]), [])
	not policy.allow with input as inp
	"the requester of a held request may not approve it" in policy.reasons with input as inp
}

test_approver_must_be_granted_the_request if {
	inp := acting_on("approve", actor("key_viewer", ["viewer"], ["decisions:approve"]), [])
	not policy.allow with input as inp
	"no role of this key grants DELETE /admin/users/7" in policy.reasons with input as inp
}

test_execute_needs_an_approval if {
	inp := acting_on("execute", approver, [])
	not policy.allow with input as inp
	policy.nextAction == "approve" with input as inp
	own := acting_on("execute", approver, [{"keyId": "key_svc", "roles": ["operator"]}])
	not policy.allow with input as own
}

test_actions_need_their_scope if {
	inp := acting_on("approve", actor("key_ops", ["operator"], []), [])
	not policy.allow with input as inp
	"scope decisions:approve is required to approve a decision" in policy.reasons with input as inp
}

test_requester_may_cancel if {
	inp := acting_on("cancel", actor("key_svc", [], ["decisions:write"]), [])
	policy.allow with input as inp
	policy.nextAction == "none" with input as inp
}

test_unknown_action_denied if {
	inp := acting_on("archive", approver, [])
	not policy.allow with input as inp
}
