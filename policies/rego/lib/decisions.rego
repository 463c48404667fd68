# Rules every decision policy shares: who is asking, what they may do, and which approvals count.
# Decision policies import this package; it is compiled into each of them, never on its own.
package gatehouse.lib.decisions

# The scope each action needs in the ordinary decision workflow. A policy passes its own map to
# `scope_denials` and `known`; an action missing from the map is unknown and denied, so a new
# server action fails closed until a policy names it.
action_scopes := {
	"create": "decisions:write",
	"approve": "decisions:approve",
	"reject": "decisions:approve",
	"execute": "decisions:execute",
	"cancel": "decisions:write",
}

known(scopes) if scopes[input.action]

scope_denials(scopes) := {"unknown action"} if not known(scopes)

scope_denials(scopes) := {msg |
	scope := scopes[input.action]
	not scope in input.principal.scopes
	msg := sprintf("scope %s is required to %s a decision", [scope, input.action])
} if known(scopes)

# Denials every decision policy applies. Each message is built only from constants or from
# values a condition has already established, so a denial never vanishes because a field it
# quotes is missing (that would turn a denial into an allow).
denials contains "the request has no authenticated principal" if not is_string(input.principal.keyId)

denials contains "production keys must sign their requests" if {
	signature_required
	not input.request.signature.verified == true
}

# Cancelling withdraws a decision: only whoever proposed it, or an administrator, may do that.
denials contains "only the creator of a decision or an admin may cancel it" if {
	input.action == "cancel"
	not is_creator
	not "admin" in input.principal.scopes
}

# Production traffic moves real money and real access, so its requests must be attributable to
# a signing key and not only to a bearer token that may have leaked. The operator at the host's
# command line (`gatehouse keys …`, principal `operator:…`, a name no API key or JWT identity can
# take) already controls the data directory and presents no token that could leak.
default signature_required := false

signature_required if {
	input.principal.env == "production"
	not startswith(input.principal.keyId, "operator:")
}

is_creator if input.principal.keyId == input.decision.createdBy

# A decision that was just created has no approval records yet; the server may send [] or
# leave the field out.
default recorded_approvals := []

recorded_approvals := input.decision.approvals if is_array(input.decision.approvals)

# The approvals recorded so far plus the one this request would add: what the decision holds
# once an `approve` action is carried out.
approvals_after := array.concat(recorded_approvals, [{
	"keyId": input.principal.keyId,
	"roles": object.get(input.principal, "roles", []),
}]) if input.action == "approve"

approvals_after := recorded_approvals if input.action != "approve"

# The approval records that count: never the creator's own (separation of duties). Records keep
# the roles the approver held at the time, so a later change of roles does not rewrite history.
counted(records) := {a |
	some a in records
	a.keyId != input.decision.createdBy
}

# Distinct approving keys: a key that somehow approved twice is still one approver.
approver_keys(records) := {a.keyId | some a in counted(records)}

already_approved_by_principal if {
	some a in recorded_approvals
	a.keyId == input.principal.keyId
}
