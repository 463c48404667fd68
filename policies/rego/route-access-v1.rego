# Proxy mode: may this principal send this request to this upstream route? What a role may do
# lives in `data.route_access` (policies/rego/data.json), so granting access is a data change:
#   grants: role → [{methods, paths, routes?}]   methods "*" means any; `routes` limits a grant
#                                                to the named proxy routes
#   gated:  [{methods, paths, routes?}]          requests a human must approve first
#   signed: [{methods, paths, routes?}]          requests that must carry a verified signature
# A path entry is a prefix matched on segment boundaries: "/admin" covers "/admin" and
# "/admin/users", not "/administrator".
package gatehouse.route_access.v1

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

default gate := "auto"

gate := "human_approval" if gated

default requireSignature := false

requireSignature if input.route.requireSignature == true

requireSignature if {
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
	requireSignature
	not input.signature.verified == true
}

# `granted` is required directly, not only through the absence of its denial: a denial whose
# message could not be built (say, a method that is not a string) must still deny.
default allow := false

allow if {
	granted
	normal_path
	count(denials) == 0
}

reasons contains msg if some msg in denials

reasons contains msg if {
	gated
	msg := sprintf("%s %s needs human approval", [input.method, input.path])
}
