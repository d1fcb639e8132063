# An example policy over `smsform plan --json`, for conftest or OPA: a team's
# own rules on top of smsform's rule sets. Run it with
#
#   smsform plan campaign.yaml --json > plan.json   # exits 1 when a rule fails: the JSON is written all the same
#   conftest test --policy examples/policy plan.json
#
# or, without conftest:
#
#   opa eval --fail-defined -d examples/policy/smsform.rego -i plan.json 'data.main.deny[msg]'
package main

import rego.v1

# Every marketing campaign of this team is held to the US rule set.
deny contains msg if {
	not held_to("us")
	not transactional
	msg := sprintf("campaign %s is not held to the us rule set: add compliance: [us]", [input.campaign])
}

# No rule of any rule set may fail.
deny contains msg if {
	some rule in input.compliance
	rule.verdict == "fail"
	msg := sprintf("campaign %s breaks %s (%s, in effect since %s): %d of %d messages", [
		input.campaign, rule.id, rule.source, rule.date, rule.failed, rule.recipients,
	])
}

# Tell the reviewer when the law's hours narrow the window of many
# recipients: they go later than the campaign's own window says.
warn contains msg if {
	input.summary.to_send > 0
	some rule in input.compliance
	rule.verdict == "narrowed"
	rule.narrowed * 4 > input.summary.to_send
	msg := sprintf("%s holds %d of %d recipients to %s", [rule.id, rule.narrowed, input.summary.to_send, hours_left(rule)])
}

# What the rule leaves of the campaign's window (narrowed_to), else the
# rule's own hours (a campaign without a window of its own).
hours_left(rule) := rule.narrowed_to if rule.narrowed_to
else := rule.hours

transactional if input.kind == "transactional"

held_to(set) if {
	some rule in input.compliance
	rule.set == set
}
