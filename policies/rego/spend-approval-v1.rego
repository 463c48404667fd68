# Spending money: small amounts run without a human, larger ones need finance approvers, and
# the largest need the CFO as well. The amount comes from the context value `finance:amount`.
package gatehouse.spend_approval.v1

import data.gatehouse.lib.decisions

# Amounts below `auto_limit` need nobody; below `cfo_limit` one finance approver; from
# `cfo_limit` up two approvers, one of them the CFO.
auto_limit := 1000

cfo_limit := 50000

amount := v if {
	v := input.decision.contextValues["finance:amount"]
	is_number(v)
}

# An amount that is missing or unreadable gets the strictest tier, so whatever the server does
# with `gate` and `approvals` on a denial errs on the side of more scrutiny.
default tier := "cfo"

tier := "auto" if amount < auto_limit

tier := "finance" if {
	amount >= auto_limit
	amount < cfo_limit
}

tiers := {
	"auto": {"gate": "auto", "approvals": {"roles": [], "count": 0}},
	"finance": {"gate": "human_approval", "approvals": {"roles": ["finance-approver"], "count": 1}},
	"cfo": {"gate": "human_approval", "approvals": {"roles": ["cfo", "finance-approver"], "count": 2}},
}

gate := tiers[tier].gate

approvals := tiers[tier].approvals

# The CFO outranks a finance approver: a CFO's approval counts wherever a finance approver's does.
holds(roles, role) if role in roles

holds(roles, role) if {
	role == "finance-approver"
	"cfo" in roles
}

eligible(records) := {a |
	some a in decisions.counted(records)
	holds(a.roles, "finance-approver")
}

approver_keys(records) := {a.keyId | some a in eligible(records)}

covered(records, role) if {
	some a in eligible(records)
	holds(a.roles, role)
}

approvals_met(records) if {
	count(approver_keys(records)) >= approvals.count
	every role in approvals.roles {
		covered(records, role)
	}
}

denials contains msg if some msg in decisions.denials

denials contains msg if some msg in decisions.scope_denials(decisions.action_scopes)

# Rejecting or cancelling a malformed request must stay possible, so only the actions that move
# money forward insist on a readable amount.
denials contains "the context must carry a numeric finance:amount" if {
	input.action in {"create", "approve", "execute"}
	not amount
}

denials contains "finance:amount must not be negative" if {
	input.action in {"create", "approve", "execute"}
	amount < 0
}

denials contains "the creator of a spend may not approve it" if {
	input.action == "approve"
	decisions.is_creator
}

denials contains "this key has already approved the spend" if {
	input.action == "approve"
	decisions.already_approved_by_principal
}

denials contains "only a finance-approver or the cfo may approve a spend" if {
	input.action == "approve"
	not holds(object.get(input.principal, "roles", []), "finance-approver")
}

denials contains msg if {
	input.action == "execute"
	have := count(approver_keys(decisions.recorded_approvals))
	have < approvals.count
	msg := sprintf("execution needs %d approval(s) from finance approvers other than the creator, %d recorded", [approvals.count, have])
}

denials contains msg if {
	input.action == "execute"
	some role in approvals.roles
	not covered(decisions.recorded_approvals, role)
	msg := sprintf("execution needs an approval from a holder of role %s", [role])
}

default allow := false

allow if {
	decisions.known(decisions.action_scopes)
	count(denials) == 0
}

reasons contains msg if some msg in denials

reasons contains msg if {
	tier == "finance"
	msg := sprintf("amount %v is at least %d: one finance-approver must approve", [amount, auto_limit])
}

reasons contains msg if {
	tier == "cfo"
	amount >= cfo_limit
	msg := sprintf("amount %v is at least %d: two approvers, one of them the cfo, must approve", [amount, cfo_limit])
}

# What the spend needs next once this request has been handled. A denied request changes
# nothing, so the answer then is what the spend needed before it.
resulting_approvals := decisions.approvals_after if allow

resulting_approvals := decisions.recorded_approvals if not allow

closes if {
	allow
	input.action in {"reject", "execute", "cancel"}
}

closes if {
	not allow
	input.action == "create"
}

closes if not decisions.known(decisions.action_scopes)

default nextAction := "none"

nextAction := "execute" if {
	not closes
	approvals_met(resulting_approvals)
}

nextAction := "approve" if {
	not closes
	not approvals_met(resulting_approvals)
}

requireSignature := decisions.signature_required
