// Package mapping reads what a provider writes about recipients — the
// answer to a send, and (see docs/reports.md) its delivery reports and the
// replies it forwards — through the JSON pointers a project declares in
// its provider: block, and says what each element means in smsform's
// closed set of outcomes.
//
// The rule it keeps: only what the configuration names has a meaning.
// A status that no list names is [Unrecognised] — in doubt for the send
// loop, with the status kept so that a person can name it next time —
// never sent and never failed (RFC 9110 §15 has a client treat an
// unknown status code as undecided in the same way). Statuses compare by
// value ([Value]).
//
// It knows nothing of HTTP, campaigns or the state: api reads an answer
// with it and apply decides what each outcome means for a recipient.
package mapping
