// Package ledger keeps what a project's state holds of people rather than
// of campaigns: opt-outs (a numbered log of additions and removals, and the
// numbers opted out now), replies (a STOP opts out of every campaign), and
// the frequency cap's index (each number's recent sends, one row a send).
//
// It is built on the record (package state): the state owns the database,
// its schema and the campaigns' records; the ledger owns the statements
// over its own tables. Apply consults it where an intent is recorded,
// through the [Gate] it gives the state (state.Options.Gate), in the
// intent's transaction: two applies of different campaigns, on two
// machines, can never together send to someone opted out or past a cap. A
// plan reads it through a [View] (opt-outs as of a log number, the numbers
// the caps hold back now), and the commands that change it (optout,
// receive, state prune, state migrate) call the functions here.
//
// Every function works on both engines; the statements that differ are in
// one table (statements.go) that a test prepares against each.
package ledger
