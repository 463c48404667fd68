# Proxy mode: may this principal send this request to this upstream route? What a role may do
# lives in `data.route_access` (policies/rego/data.json), so granting access is a data change:
#   grants: role → [{methods, paths, routes?}]   methods "*" means any; `routes` limits a grant
#                                                to the named proxy routes
#   gated:  [{methods, paths, routes?}]          requests a human must approve first
#   signed: [{methods, paths, routes?}]          requests that must carry a verified signature
# A path entry is a prefix matched on segment boundaries: "/admin" covers "/admin" and
# "/admin/users", not "/administrator". How rules match, and what a held request needs, is in
# gatehouse.lib.route_access (lib/route_access.rego); this package holds only the answers, the
# document the gateway reads on every proxied request.
package gatehouse.route_access.v1

import data.gatehouse.lib.route_access as ra

default gate := "auto"

gate := "human_approval" if ra.gated

requireSignature := ra.signature_required

# `granted` is required directly, not only through the absence of its denial: a denial whose
# message could not be built (say, a method that is not a string) must still deny.
default allow := false

allow if {
	not ra.acting
	ra.granted
	ra.normal_path
	count(ra.denials) == 0
}

allow if ra.action_allowed

reasons contains msg if {
	not ra.acting
	some msg in ra.denials
}

reasons contains msg if {
	ra.gated
	msg := sprintf("%s %s needs human approval", [input.method, input.path])
}

reasons contains msg if {
	ra.acting
	some msg in ra.action_denials
}

approvals := {"roles": [], "count": ra.required_approvals}

# Outside the workflow, a request permitted behind the gate waits for an approval; inside it,
# what the held request needs after this action.
default nextAction := "none"

nextAction := "approve" if {
	not ra.acting
	allow
	ra.gated
}

nextAction := "execute" if {
	ra.acting
	not ra.closes
	ra.approvals_met(ra.resulting_approvals)
}

nextAction := "approve" if {
	ra.acting
	not ra.closes
	not ra.approvals_met(ra.resulting_approvals)
}
