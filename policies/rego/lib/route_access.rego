# How route-access policies read `data.route_access` and a proxied request: rule matching, the
# normal-form check, and what a held request needs when it is acted on. The versioned policy
# (route-access-v1) imports this package and keeps only its answers, so evaluating it computes
# these rules only as far as an answer needs them and returns a small document.
package gatehouse.lib.route_access

import data.gatehouse.lib.decisions

# HTTP methods are case-sensitive (RFC 9110, section 9.1): "get" is not GET and matches nothing.
method_matches(methods, method) if {
	some m in methods
	m in {method, "*"}
}

path_matches(path, prefix) if path == prefix

path_matches(path, prefix) if startswith(path, concat("", [trim_suffix(prefix, "/"), "/"]))

route_matches(rule) if not rule.routes

route_matches(rule) if input.route.name in rule.routes

rule_matches(rule) if {
	method_matches(rule.methods, input.method)
	some prefix in rule.paths
	path_matches(input.path, prefix)
	route_matches(rule)
}

granted if {
	some role in input.principal.roles
	some grant in data.route_access.grants[role]
	rule_matches(grant)
}

# Prefix matching is only sound on a path in normal form: "/api/../admin" starts with "/api" but
# an upstream resolves it to "/admin". Such paths, and encoded or backslash separators that
# upstreams may decode into the same thing, are refused rather than normalised here.
suspicious_fragments := ["//", "\\", "%2e", "%2E", "%2f", "%2F", "%5c", "%5C"]

normal_path if {
	startswith(input.path, "/")
	not dot_segment
	not suspicious_fragment
}

dot_segment if {
	some segment in split(input.path, "/")
	segment in {".", ".."}
}

suspicious_fragment if {
	some fragment in suspicious_fragments
	contains(input.path, fragment)
}

gated if {
	some rule in data.route_access.gated
	rule_matches(rule)
}

default signature_required := false

signature_required if input.route.requireSignature == true

signature_required if {
	some rule in data.route_access.signed
	rule_matches(rule)
}

denials contains "the request has no authenticated principal" if not is_string(input.principal.keyId)

denials contains "the path is not in normal form" if not normal_path

denials contains msg if {
	not granted
	msg := sprintf("no role of this key grants %s %s", [input.method, input.path])
}

denials contains "this route requires a signed request" if {
	signature_required
	not input.signature.verified == true
}

# Held requests. The proxy holds a request answered `gate: "human_approval"` as a governed
# decision under the same policy. Acting on that decision through /v1/decisions evaluates the
# policy again with `action` and `decision` set, the held request's method, path, query, headers,
# route and signature where a proxied request has them, `principal` the key acting on the
# decision and `requester` the key that sent the request. Whoever approves, rejects or executes
# a held request must be granted that request themselves; its requester may not approve it.
acting if is_string(input.action)

route_checked_actions := {"approve", "reject", "execute"}

default required_approvals := 0

required_approvals := 1 if gated

route_cleared if {
	acting
	not input.action in route_checked_actions
}

route_cleared if {
	input.action in route_checked_actions
	granted
	normal_path
}

action_denials contains msg if {
	acting
	some msg in decisions.denials
}

action_denials contains msg if {
	acting
	some msg in decisions.scope_denials(decisions.action_scopes)
}

action_denials contains msg if {
	input.action in route_checked_actions
	some msg in denials
}

action_denials contains "the requester of a held request may not approve it" if {
	input.action == "approve"
	decisions.is_creator
}

action_denials contains "this key has already approved the held request" if {
	input.action == "approve"
	decisions.already_approved_by_principal
}

action_denials contains msg if {
	input.action == "execute"
	not approvals_met(decisions.recorded_approvals)
	msg := sprintf("sending the held request needs %d approval(s) from keys other than its requester", [required_approvals])
}

approvals_met(records) if count(decisions.approver_keys(records)) >= required_approvals

action_allowed if {
	acting
	decisions.known(decisions.action_scopes)
	route_cleared
	count(action_denials) == 0
}

resulting_approvals := decisions.approvals_after if action_allowed

resulting_approvals := decisions.recorded_approvals if not action_allowed

closes if {
	action_allowed
	input.action in {"reject", "execute", "cancel"}
}

closes if {
	acting
	not decisions.known(decisions.action_scopes)
}
