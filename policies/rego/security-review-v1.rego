# Security review of a production API key. The key stays `pending_review` until an administrator
# other than the one who opened the review approves it; the approval itself activates the key,
# so there is nothing to execute afterwards.
package gatehouse.security_review.v1

import data.gatehouse.lib.decisions

# Granting production access is an administrator's act at every step.
action_scopes := {
	"create": "admin",
	"approve": "admin",
	"reject": "admin",
	"execute": "admin",
	"cancel": "admin",
}

gate := "security_review"

approvals := {"roles": [], "count": 1}

approvals_met(records) if count(decisions.approver_keys(records)) >= approvals.count

denials contains msg if some msg in decisions.denials

denials contains msg if some msg in decisions.scope_denials(action_scopes)

denials contains "the admin who opened a security review may not approve it" if {
	input.action == "approve"
	decisions.is_creator
}

denials contains "this key has already approved the security review" if {
	input.action == "approve"
	decisions.already_approved_by_principal
}

denials contains "a security review takes effect when approved: there is nothing to execute" if {
	input.action == "execute"
}

default allow := false

allow if {
	decisions.known(action_scopes)
	count(denials) == 0
}

reasons contains msg if some msg in denials

reasons contains "production access needs a security review approved by a second admin" if {
	input.action in {"create", "approve"}
	not approvals_met(decisions.recorded_approvals)
}

resulting_approvals := decisions.approvals_after if allow

resulting_approvals := decisions.recorded_approvals if not allow

closes if {
	allow
	input.action in {"reject", "cancel"}
}

closes if {
	not allow
	input.action == "create"
}

closes if input.action == "execute"

closes if not decisions.known(action_scopes)

default nextAction := "none"

nextAction := "approve" if {
	not closes
	not approvals_met(resulting_approvals)
}

requireSignature := decisions.signature_required
