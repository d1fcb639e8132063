package state

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// testdata/v1.smsstate was written by the version 1 code (commit 5f9adc3)
// with a record of every kind: sent, failed, failed then sent again,
// failed then forgotten on retry, resolved as sent, resolved as unsent, in
// doubt, an intent without outcome, a number that is not E.164, a saved
// plan applied. testdata/v1.recipients.json is what that code read back.

// v1Copy copies the version 1 fixture into a temporary folder.
func v1Copy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v1.smsstate"))
	must(t, err)
	path := filepath.Join(t.TempDir(), "spring.smsstate")
	must(t, os.WriteFile(path, b, 0o600))
	return path
}

func v1Recipients(t *testing.T) []Recipient {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v1.recipients.json"))
	must(t, err)
	var want []Recipient
	must(t, json.Unmarshal(b, &want))
	return want
}

func allRecipients(t *testing.T, s *State) []Recipient {
	t.Helper()
	var rs []Recipient
	must(t, s.Recipients(context.Background(), func(r Recipient) error { rs = append(rs, r); return nil }))
	return rs
}

// sameRecipients compares ignoring the order and the At's location.
func sameRecipients(t *testing.T, what string, got, want []Recipient) {
	t.Helper()
	norm := func(rs []Recipient) []Recipient {
		rs = slices.Clone(rs)
		for i := range rs {
			rs[i].At = rs[i].At.UTC()
			// A version 1 state kept no word of the provider's: the
			// request id that later versions show is not compared.
			rs[i].ProviderBatchID = ""
		}
		slices.SortFunc(rs, func(a, b Recipient) int { return cmp.Compare(a.Phone, b.Phone) })
		return rs
	}
	g, w := norm(got), norm(want)
	if !slices.Equal(g, w) {
		t.Errorf("%s:\ngot  %+v\nwant %+v", what, g, w)
	}
}

func TestReadOnlyReadsV1(t *testing.T) {
	ctx := context.Background()
	path := v1Copy(t)
	before, _ := os.ReadFile(path)
	want := v1Recipients(t)
	r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(t, err)
	if r.Campaign() != "spring" || r.Serial() == 0 || len(r.Lineage()) != 32 {
		t.Errorf("meta: %q %d %q", r.Campaign(), r.Serial(), r.Lineage())
	}
	got := recipients(t, r) // checks the order
	sameRecipients(t, "Recipients", allRecipients(t, r), want)
	if len(got) != len(want) {
		t.Errorf("%d recipients, want %d", len(got), len(want))
	}
	var each []Recipient
	must(t, r.EachRecipient(ctx, func(rc Recipient) error { each = append(each, rc); return nil }))
	sameRecipients(t, "EachRecipient", each, want)
	c, err := r.Counts(ctx)
	must(t, err)
	if !mapsEqual(c, countOf(want)) {
		t.Errorf("counts %v, want %v", c, countOf(want))
	}
	must(t, r.Close())
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("a read-only open changed the version 1 file")
	}
}

func countOf(rs []Recipient) map[Status]int {
	m := map[Status]int{Sent: 0, Failed: 0, InDoubt: 0}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

func TestOpenMigratesV1(t *testing.T) {
	ctx := context.Background()
	path := v1Copy(t)
	want := v1Recipients(t)
	r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(t, err)
	lineage, serial := r.Lineage(), r.Serial()
	var attemptsBefore []Attempt
	must(t, r.Attempts(ctx, func(a Attempt) error { attemptsBefore = append(attemptsBefore, a); return nil }))
	must(t, r.Close())

	s := openTest(t, path)
	if s.Lineage() != lineage || s.Serial() != serial {
		t.Errorf("migrated: lineage %q serial %d, want %q %d", s.Lineage(), s.Serial(), lineage, serial)
	}
	var versions []int
	rows, err := s.db.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	must(t, err)
	for rows.Next() {
		var v int
		must(t, rows.Scan(&v))
		versions = append(versions, v)
	}
	must(t, rows.Err())
	rows.Close()
	if len(versions) != SchemaVersion || versions[0] != 1 || versions[len(versions)-1] != SchemaVersion {
		t.Errorf("schema_migrations %v, want 1 to %d", versions, SchemaVersion)
	}
	sameRecipients(t, "Recipients after migration", allRecipients(t, s), want)
	sameRecipients(t, "the recipients view after migration", viewRecipients(t, s), want)
	var attemptsAfter []Attempt
	must(t, s.Attempts(ctx, func(a Attempt) error { attemptsAfter = append(attemptsAfter, a); return nil }))
	if !slices.Equal(attemptsBefore, attemptsAfter) {
		t.Errorf("attempts changed:\n%+v\n%+v", attemptsBefore, attemptsAfter)
	}
	if ok, err := s.PlanApplied(ctx, "plan-1"); !ok || err != nil {
		t.Errorf("PlanApplied(plan-1) = %v, %v", ok, err)
	}

	// The migrated state refuses and allows as the version 1 one did.
	for _, tc := range []struct {
		phone string
		ok    bool
	}{
		{"+447700900001", false}, // sent
		{"+447700900004", false}, // failed, then sent again
		{"+447700900008", false}, // resolved as sent
		{"+447700900010", false}, // in doubt
		{"+447700900011", false}, // intent without outcome
		{`not a number "quoted"`, false},
		{"+447700900003", true}, // failed
		{"+447700900005", true}, // forgotten
		{"+447700900009", true}, // resolved as unsent
	} {
		err := s.RecordIntent(ctx, intent("again-"+tc.phone, tc.phone))
		if tc.ok != (err == nil) {
			t.Errorf("intent for %s: %v, want ok=%v", tc.phone, err, tc.ok)
		}
	}
	// The crashed batch can still be given its outcome.
	must(t, s.RecordOutcome(ctx, "b-crash", Outcome{Status: Sent}))
	must(t, s.Close())

	// Reopening finds version 2 and leaves it be.
	s = openTest(t, path)
	c, err := s.Counts(ctx)
	must(t, err)
	if c[InDoubt] != 5 { // +33…, +…10, and the three new intents
		t.Errorf("counts after reopening %v", c)
	}
}

// viewRecipients reads the recipients view, as someone with the sqlite3
// shell would.
func viewRecipients(t *testing.T, s *State) []Recipient {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `SELECT phone, status, batch_id, body_hash, at, reason FROM recipients ORDER BY phone`)
	must(t, err)
	defer rows.Close()
	var rs []Recipient
	for rows.Next() {
		var r Recipient
		var st, at string
		must(t, rows.Scan(&r.Phone, &st, &r.BatchID, &r.BodyHash, &at, &r.Reason))
		r.Status, r.At = parseStatus(st), parseTime(at)
		rs = append(rs, r)
	}
	must(t, rows.Err())
	return rs
}

// TestSameAsV1 replays the history of the version 1 fixture on a new state
// and expects the records version 1 kept, times aside: from Recipients,
// EachRecipient, Counts, and the recipients view.
func TestSameAsV1(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "s"))
	h, h2 := hash, "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
	in := func(b, hash string, ps ...string) Intent { return Intent{BatchID: b, Phones: ps, BodyHash: hash} }
	must(t, s.RecordIntent(ctx, in("b-sent", h, "+447700900001", "+447700900002")))
	must(t, s.RecordOutcome(ctx, "b-sent", Outcome{Status: Sent, HTTPStatus: 200, RequestID: "req-1"}))
	must(t, s.RecordIntent(ctx, in("b-failed", h, "+447700900003", "+447700900004")))
	must(t, s.RecordOutcome(ctx, "b-failed", Outcome{Status: Failed, HTTPStatus: 400, Reason: "invalid sender"}))
	must(t, s.RecordIntent(ctx, in("b-resend", h2, "+447700900004", "+14155550100")))
	must(t, s.RecordOutcome(ctx, "b-resend", Outcome{Status: Sent, HTTPStatus: 200, RequestID: "req-2"}))
	must(t, s.RecordIntent(ctx, in("b-f2", h, "+447700900005", "+447700900006")))
	must(t, s.RecordOutcome(ctx, "b-f2", Outcome{Status: Failed, HTTPStatus: 400, Reason: "x"}))
	must(t, s.RecordIntent(ctx, in("b-forget", h, "+447700900005", "+447700900007")))
	must(t, s.ForgetIntent(ctx, "b-forget"))
	must(t, s.RecordIntent(ctx, in("b-resolved", h, "+447700900008")))
	must(t, s.RecordOutcome(ctx, "b-resolved", Outcome{Status: InDoubt, HTTPStatus: 502, Reason: "bad gateway"}))
	_, err := s.Resolve(ctx, "b-resolved", true)
	must(t, err)
	must(t, s.RecordIntent(ctx, in("b-unsent", h, "+447700900009")))
	must(t, s.RecordOutcome(ctx, "b-unsent", Outcome{Status: InDoubt, Reason: "timeout"}))
	_, err = s.Resolve(ctx, "b-unsent", false)
	must(t, err)
	must(t, s.RecordIntent(ctx, in("b-doubt", h, "+447700900010", "+33612345678")))
	must(t, s.RecordOutcome(ctx, "b-doubt", Outcome{Status: InDoubt, HTTPStatus: 504, Reason: "gateway timeout"}))
	must(t, s.RecordIntent(ctx, in("b-crash", h, "+447700900011", `not a number "quoted"`)))

	want := v1Recipients(t)
	noTimes := func(rs []Recipient) []Recipient {
		rs = slices.Clone(rs)
		for i := range rs {
			if rs[i].At.IsZero() {
				t.Errorf("%s has no time", rs[i].Phone)
			}
			rs[i].At = time.Time{}
		}
		return rs
	}
	ordered := recipients(t, s) // checks the order
	sameRecipients(t, "Recipients", noTimes(allRecipients(t, s)), noTimes(want))
	var each []Recipient
	must(t, s.EachRecipient(ctx, func(r Recipient) error { each = append(each, r); return nil }))
	sameRecipients(t, "EachRecipient", noTimes(each), noTimes(want))
	sameRecipients(t, "the recipients view", noTimes(viewRecipients(t, s)), noTimes(want))
	for _, r := range viewRecipients(t, s) {
		if got := ordered[r.Phone]; !got.At.Equal(r.At) {
			t.Errorf("%s: the view says %v, Recipients %v", r.Phone, r.At, got.At)
		}
	}
	c, err := s.Counts(ctx)
	must(t, err)
	if !mapsEqual(c, countOf(want)) {
		t.Errorf("counts %v, want %v", c, countOf(want))
	}
}

func TestEachRecipientStops(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "s"))
	must(t, s.RecordIntent(ctx, intent("b1", phones("1", 10)...)))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Failed}))
	must(t, s.RecordIntent(ctx, intent("b2", phones("2", 10)...)))
	stop := errors.New("stop")
	for name, walk := range map[string]func(context.Context, func(Recipient) error) error{
		"Recipients": s.Recipients, "EachRecipient": s.EachRecipient,
	} {
		n := 0
		if err := walk(ctx, func(Recipient) error { n++; return stop }); err != stop || n != 1 {
			t.Errorf("%s: %v after %d calls, want the callback's error after 1", name, err, n)
		}
	}
}

// A file of version 2 (one campaign, table meta: every file of the
// release before projects) is read as it is by read-only views, and
// migrated to version 3 by the first command that writes, records intact.
func TestReadAndMigrateV2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "spring.smsstate")
	db, err := sql.Open("sqlite", "file:"+path)
	must(t, err)
	_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)
	must(t, err)
	for v, m := range migrations[:2] {
		_, err := db.Exec(m)
		must(t, err)
		_, err = db.Exec(`INSERT INTO schema_migrations VALUES (?, 'x')`, v+1)
		must(t, err)
	}
	_, err = db.Exec(`INSERT INTO meta VALUES (1, '0123456789abcdef0123456789abcdef', 'spring', 3, '2026-11-01T00:00:00Z')`)
	must(t, err)
	_, err = db.Exec(`INSERT INTO attempts (batch_id, state, body_hash, recipients, started_at, finished_at, phones)
		VALUES ('b1', 'sent', 'h', 2, '2026-11-01T00:00:00Z', '2026-11-01T00:00:01Z', '["+441","+442"]'),
		       ('b2', 'intent', 'h', 1, '2026-11-01T00:00:02Z', '', '["+443"]')`)
	must(t, err)
	_, err = db.Exec(`INSERT INTO plans_applied VALUES ('plan-1', '2026-11-01T00:00:03Z')`)
	must(t, err)
	must(t, db.Close())
	want := map[string]Status{"+441": Sent, "+442": Sent, "+443": InDoubt}

	r, err := OpenReadOnly(ctx, MustParseLocation(path), "spring")
	must(t, err)
	if r.Lineage() != "0123456789abcdef0123456789abcdef" || r.Serial() != 3 || !mapsEqual(statuses(t, r), want) {
		t.Errorf("read-only view of version 2: lineage %s serial %d %v", r.Lineage(), r.Serial(), statuses(t, r))
	}
	if ok, err := r.PlanApplied(ctx, "plan-1"); !ok || err != nil {
		t.Errorf("plan-1 applied: %v %v", ok, err)
	}
	if _, err := OpenReadOnly(ctx, MustParseLocation(path), "autumn"); !errors.Is(err, ErrLineage) {
		t.Errorf("another campaign's view of a version 2 file: %v", err)
	}
	must(t, r.Close())

	s := openTest(t, path)
	if s.Lineage() != "0123456789abcdef0123456789abcdef" || s.Serial() != 3 || !mapsEqual(statuses(t, s), want) {
		t.Errorf("migrated: lineage %s serial %d %v", s.Lineage(), s.Serial(), statuses(t, s))
	}
	if err := s.RecordIntent(ctx, intent("b3", "+443")); !errors.Is(err, ErrAlreadySent) {
		t.Errorf("in doubt after the migration: %v", err)
	}
	must(t, s.RecordIntent(ctx, intent("b3", "+444")))
	must(t, s.Close())
}
