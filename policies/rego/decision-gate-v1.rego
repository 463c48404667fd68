# The generic gate: a decision runs without a human unless its context reports elevated risk, in
# which case someone other than its creator must approve it before it can be executed.
package gatehouse.decision_gate.v1

import data.gatehouse.lib.decisions

# Context values in the `risk` namespace (`risk:score`, `risk:blast_radius`, …) at or above this
# need a human. Other namespaces carry facts, not risk, and never gate on their own.
risk_threshold := 70

# The value a risk label gates on. A label named twice (in a decision stored before the API
# refused repeated sources) holds its values as a list, and gates on the highest.
level(value) := value if is_number(value)

level(values) := max(values) if is_array(values)

risky contains name if {
	some name, value in input.decision.contextValues
	startswith(name, "risk:")
	level(value) >= risk_threshold
}

gated if count(risky) > 0

default gate := "auto"

gate := "human_approval" if gated

default approvals := {"roles": [], "count": 0}

approvals := {"roles": [], "count": 1} if gated

approvals_met(records) if count(decisions.approver_keys(records)) >= approvals.count

denials contains msg if some msg in decisions.denials

denials contains msg if some msg in decisions.scope_denials(decisions.action_scopes)

denials contains "the creator of a decision may not approve it" if {
	input.action == "approve"
	decisions.is_creator
}

denials contains "this key has already approved the decision" if {
	input.action == "approve"
	decisions.already_approved_by_principal
}

denials contains msg if {
	input.action == "execute"
	not approvals_met(decisions.recorded_approvals)
	have := count(decisions.approver_keys(decisions.recorded_approvals))
	msg := sprintf("execution needs %d approval(s) from keys other than the creator, %d recorded", [approvals.count, have])
}

default allow := false

allow if {
	decisions.known(decisions.action_scopes)
	count(denials) == 0
}

reasons contains msg if some msg in denials

reasons contains msg if {
	some name in risky
	value := level(input.decision.contextValues[name])
	msg := sprintf("%s is %v, at or above the risk threshold %d: a human must approve", [name, value, risk_threshold])
}

# What the decision needs next once this request has been handled. A denied request changes
# nothing, so the answer then is what the decision needed before it.
resulting_approvals := decisions.approvals_after if allow

resulting_approvals := decisions.recorded_approvals if not allow

# Requests after which the decision has nothing left to do, or never came to exist.
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
