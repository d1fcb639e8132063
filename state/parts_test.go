package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// A provider that answers per recipient gives each its own record; those
// it did not act on are planned again, and a retry of them is one more
// attempt of the same batch.
func TestOutcomeParts(t *testing.T) { eachBackend(t, testOutcomeParts) }

func testOutcomeParts(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442", "+443", "+444", "+445")))
	bad := Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{"+441"}}, {Status: Failed, Phones: []string{"+449"}}}}
	if err := s.RecordOutcome(ctx, "b1", bad); err == nil {
		t.Fatal("parts naming someone outside the intent were recorded")
	}
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, RequestID: "r1", Parts: []Part{
		{Status: Sent, Phones: []string{"+441", "+442"}},
		{Status: Failed, Phones: []string{"+443"}, Reason: "REJECTED: blocked"},
		{Status: InDoubt, Phones: []string{"+444"}, Reason: "the provider reports it already has this message"},
		{Status: Unsent, Phones: []string{"+445"}, Reason: "THROTTLED"},
	}}))
	want := map[string]Status{"+441": Sent, "+442": Sent, "+443": Failed, "+444": InDoubt}
	if got := statuses(t, s); !mapsEqual(got, want) {
		t.Errorf("after the parts: %v, want %v", got, want)
	}
	if r := recipients(t, s)["+443"]; r.Reason != "REJECTED: blocked" || r.BatchID != "b1" {
		t.Errorf("failed part: %+v", r)
	}
	// The throttled one goes again, under the same batch; the others are refused.
	if err := s.RecordIntent(ctx, intent("b1", "+444")); !errors.Is(err, ErrAlreadySent) {
		t.Errorf("intent for an in-doubt part: %v", err)
	}
	must(t, s.RecordIntent(ctx, intent("b1", "+445", "+443")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent, HTTPStatus: 200}))
	want["+445"], want["+443"] = Sent, Sent
	if got := statuses(t, s); !mapsEqual(got, want) {
		t.Errorf("after the retry: %v, want %v", got, want)
	}
	// Resolving the batch's in-doubt recipients touches the in-doubt part only.
	n, err := s.Resolve(ctx, "b1", false)
	if err != nil || n.Moved != 1 {
		t.Errorf("Resolve = %+v, %v; want 1", n, err)
	}
	delete(want, "+444")
	must(t, s.Close())
	// What a reopened writer and a reader derive is the same.
	s = openTest(t, path)
	if got := statuses(t, s); !mapsEqual(got, want) {
		t.Errorf("reopened: %v, want %v", got, want)
	}
	must(t, s.RecordIntent(ctx, intent("b2", "+444")))
	if err := s.RecordIntent(ctx, intent("b3", "+441")); !errors.Is(err, ErrAlreadySent) {
		t.Errorf("reopened writer lets a sent part go again: %v", err)
	}
}

// A saved plan's runs: recorded with the serial they leave, and the state
// seen without the plan's attempts is the state it was made against.
func TestPlanRuns(t *testing.T) { eachBackend(t, testPlanRuns) }

func testPlanRuns(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("before", "+440")))
	must(t, s.RecordOutcome(ctx, "before", Outcome{Status: Sent}))
	base := s.Serial()
	if _, ok, err := s.PlanRun(ctx, "p1"); ok || err != nil {
		t.Fatalf("PlanRun before any run: %v %v", ok, err)
	}
	in := intent("b1", "+441", "+442")
	in.PlanID = "p1"
	must(t, s.RecordIntent(ctx, in))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{"+441"}}, {Status: Failed, Phones: []string{"+442"}}}}))
	must(t, s.RecordPlanRun(ctx, "p1", false))
	r, ok, err := s.PlanRun(ctx, "p1")
	if !ok || err != nil || r.Done || r.Serial != s.Serial() || s.Serial() != base+2 {
		t.Fatalf("PlanRun = %+v %v %v; serial %d (base %d)", r, ok, err, s.Serial(), base)
	}
	if applied, _ := s.PlanApplied(ctx, "p1"); applied {
		t.Error("a plan with batches left counts as applied")
	}
	v := s.WithoutPlan("p1")
	if got := statuses(t, v); !mapsEqual(got, map[string]Status{"+440": Sent}) {
		t.Errorf("without the plan: %v", got)
	}
	must(t, v.Close())
	must(t, s.MarkPlanApplied(ctx, "p1"))
	if err := s.MarkPlanApplied(ctx, "p1"); !errors.Is(err, ErrPlanApplied) {
		t.Errorf("second mark: %v", err)
	}
	// The view's Close left s working.
	if got := statuses(t, s); len(got) != 3 {
		t.Errorf("after the view closed: %v", got)
	}
}

// What the provider said of each recipient is kept with its part: the id
// of its message (in the order of the part's phones), the status it gave
// when not plainly sent, and the request's id; the sqlite3 shell's and
// psql's recipients view shows them too. A part whose ids do not match its
// phones is refused.
func TestProviderIDs(t *testing.T) { eachBackend(t, testProviderIDs) }

func testProviderIDs(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442", "+443")))
	bad := Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{"+441", "+442", "+443"}, IDs: []string{"m1"}}}}
	if err := s.RecordOutcome(ctx, "b1", bad); err == nil {
		t.Fatal("a part with fewer ids than phones was recorded")
	}
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, RequestID: "bulk-9", Parts: []Part{
		{Status: Sent, Phones: []string{"+443", "+441"}, IDs: []string{"m3", "m1"}},
		{Status: InDoubt, Phones: []string{"+442"}, IDs: []string{`id "2"`}, ProviderStatus: "Accepted", Reason: "not named"},
	}}))
	want := map[string]string{"+441": "m1/bulk-9/", "+442": `id "2"/bulk-9/Accepted`, "+443": "m3/bulk-9/"}
	for p, r := range recipients(t, s) {
		if got := r.ProviderID + "/" + r.ProviderBatchID + "/" + r.ProviderStatus; got != want[p] {
			t.Errorf("%s: %s, want %s", p, got, want[p])
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT phone, provider_id, provider_batch_id, provider_status FROM recipients`)
	must(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var p, id, batch, status string
		must(t, rows.Scan(&p, &id, &batch, &status))
		if got := id + "/" + batch + "/" + status; got != want[p] {
			t.Errorf("view: %s: %s, want %s", p, got, want[p])
		}
		n++
	}
	if n != 3 {
		t.Errorf("the view shows %d recipients, want 3", n)
	}
	// The index a delivery report is matched through is left to its
	// readers: the parts with ids are marked, and nothing is in it yet.
	var marked, indexed int
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE ids_pending = 1`).Scan(&marked))
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&indexed))
	if marked != 2 || indexed != 0 {
		t.Errorf("after the outcome: %d attempts marked, %d ids in the index; want 2 and 0", marked, indexed)
	}
	// Filled, each id goes to its own recipient, including an id that
	// JSON has to escape (`id "2"`), and nothing stays marked.
	if got, want := messageIndex(t, s), map[string]string{"m1": "+441", "m3": "+443", `id "2"`: "+442"}; !maps.Equal(got, want) {
		t.Errorf("messages: %v, want %v", got, want)
	}
	// A part five times the largest batch, some recipients without an id:
	// each id once, to its own recipient.
	var phones, ids []string
	withID := 3 // the part above's
	for i := range 5000 {
		phones = append(phones, fmt.Sprintf("+4477009%05d", i))
		id := ""
		if i%7 != 0 {
			id = fmt.Sprintf("big-%d", i)
			withID++
		}
		ids = append(ids, id)
	}
	must(t, s.RecordIntent(ctx, Intent{BatchID: "b2", BodyHash: hash, Phones: phones}))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: phones, IDs: ids}}}))
	got := messageIndex(t, s)
	for i, id := range ids {
		if p, ok := got[id]; id != "" && (!ok || p != phones[i]) {
			t.Fatalf("messages: %s is %q, want %s", id, p, phones[i])
		}
	}
	var stored int
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&stored))
	if len(got) != withID || stored != withID {
		t.Errorf("messages: %d ids in %d rows, want %d", len(got), stored, withID)
	}
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE ids_pending = 1`).Scan(&marked))
	if marked != 0 {
		t.Errorf("%d attempts still marked once the index was filled", marked)
	}
}

// Receivers fill the index at once (a receive and a reports import, or two
// receivers behind a load balancer): each id goes in once.
func TestIndexMessagesAtOnce(t *testing.T) { eachBackend(t, testIndexMessagesAtOnce) }

func testIndexMessagesAtOnce(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	want := 0
	for i := range 300 {
		batch := fmt.Sprintf("b%d", i)
		phones := []string{fmt.Sprintf("+4477001%05d", 2*i), fmt.Sprintf("+4477001%05d", 2*i+1)}
		must(t, s.RecordIntent(ctx, Intent{BatchID: batch, BodyHash: hash, Phones: phones}))
		must(t, s.RecordOutcome(ctx, batch, Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: phones, IDs: []string{batch + "-a", batch + "-b"}}}}))
		want += 2
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- indexMessages(ctx, s.db, s.q, s.q == postgresDialect) }()
	}
	for range 4 {
		must(t, <-errs)
	}
	var rows, distinct, marked int
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT provider_id) FROM messages`).Scan(&rows, &distinct))
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE ids_pending = 1`).Scan(&marked))
	if rows != want || distinct != want || marked != 0 {
		t.Errorf("four at once: %d rows of %d ids in the index, %d attempts marked; want %d, %d, 0", rows, distinct, marked, want, want)
	}
}

// messageIndex fills the state's index of message ids, as a receiver does
// before it matches, and returns it: provider id to phone.
func messageIndex(t *testing.T, s *State) map[string]string {
	t.Helper()
	must(t, indexMessages(context.Background(), s.db, s.q, s.q == postgresDialect))
	rows, err := s.db.QueryContext(context.Background(), `SELECT provider_id, phone FROM messages`)
	must(t, err)
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var id, p string
		must(t, rows.Scan(&id, &p))
		m[id] = p
	}
	must(t, rows.Err())
	return m
}

// Version 8 marks what the index misses: an attempt copied from another
// state before it was never indexed, one recorded by apply was. Migrated,
// the first is marked and the second not, and filling the index completes
// it.
func TestIdsPendingMigration(t *testing.T) { eachBackend(t, testIdsPendingMigration) }

func testIdsPendingMigration(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	s := openTest(t, loc)
	for _, batch := range []string{"copied", "applied"} {
		phones := []string{"+4477001" + map[string]string{"copied": "00001", "applied": "00002"}[batch]}
		must(t, s.RecordIntent(ctx, Intent{BatchID: batch, BodyHash: hash, Phones: phones}))
		must(t, s.RecordOutcome(ctx, batch, Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: phones, IDs: []string{"id-" + batch}}}}))
	}
	messageIndex(t, s)
	// Back to version 7, the copied attempt without its ids in the index.
	version := SchemaVersion
	if s.q == postgresDialect {
		version = PostgresSchemaVersion
	}
	for _, q := range []string{
		`DELETE FROM messages WHERE provider_id = 'id-copied'`,
		`DROP INDEX attempts_ids_pending`,
		`ALTER TABLE attempts DROP COLUMN ids_pending`,
		fmt.Sprintf(`DELETE FROM schema_migrations WHERE version = %d`, version),
	} {
		_, err := s.db.ExecContext(ctx, q)
		must(t, err)
	}
	must(t, s.Close())

	s = openTest(t, loc)
	var marked []string
	rows, err := s.db.QueryContext(ctx, `SELECT batch_id FROM attempts WHERE ids_pending = 1 ORDER BY id`)
	must(t, err)
	for rows.Next() {
		var batch string
		must(t, rows.Scan(&batch))
		marked = append(marked, batch)
	}
	must(t, rows.Err())
	rows.Close()
	if !slices.Equal(marked, []string{"copied"}) {
		t.Errorf("migrated: marked %v, want [copied]", marked)
	}
	if got, want := messageIndex(t, s), map[string]string{"id-copied": "+447700100001", "id-applied": "+447700100002"}; !maps.Equal(got, want) {
		t.Errorf("index after the migration: %v, want %v", got, want)
	}
}

// An attempt edited by hand into something that is not two arrays of
// strings names nobody in the index, and does not stop the others' ids.
func TestIndexMessagesHandEdited(t *testing.T) { eachBackend(t, testIndexMessagesHandEdited) }

func testIndexMessagesHandEdited(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	for _, batch := range []string{"edited", "fine"} {
		phones := []string{"+4477001" + map[string]string{"edited": "00001", "fine": "00002"}[batch]}
		must(t, s.RecordIntent(ctx, Intent{BatchID: batch, BodyHash: hash, Phones: phones}))
		must(t, s.RecordOutcome(ctx, batch, Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: phones, IDs: []string{"id-" + batch}}}}))
	}
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET provider_ids = '{"not": "a list"}' WHERE batch_id = 'edited' AND provider_ids <> ''`)
	must(t, err)
	if got, want := messageIndex(t, s), map[string]string{"id-fine": "+447700100002"}; !maps.Equal(got, want) {
		t.Errorf("index: %v, want %v", got, want)
	}
	var marked int
	must(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE ids_pending = 1`).Scan(&marked))
	if marked != 0 {
		t.Errorf("%d attempts still marked", marked)
	}
}

// An answer whose one part holds the intent's recipients in its order
// (every recipient sent, each with its message id: the common case) is
// recorded on the intent's own attempt, not split: the phones are not
// written again, and what the state says of each recipient is what a
// part would have said. A part in another order, or of some recipients,
// is split as before.
func TestWholeAnswer(t *testing.T) { eachBackend(t, testWholeAnswer) }

func testWholeAnswer(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442", "+443")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 201, RequestID: "bulk-1", Parts: []Part{
		{Status: Sent, Phones: []string{"+441", "+442", "+443"}, IDs: []string{"m1", "", `id "3"`}}}}))
	must(t, s.RecordIntent(ctx, intent("b2", "+444", "+445")))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{HTTPStatus: 200, Reason: "the request's", Parts: []Part{
		{Status: Failed, Phones: []string{"+444", "+445"}, ProviderStatus: "REJECTED", Reason: "no route"}}}))
	must(t, s.RecordIntent(ctx, intent("b3", "+446", "+447")))
	must(t, s.RecordOutcome(ctx, "b3", Outcome{HTTPStatus: 200, Parts: []Part{
		{Status: Sent, Phones: []string{"+447", "+446"}, IDs: []string{"m7", "m6"}}}}))
	attempts := func(batch string) []string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, `SELECT state FROM attempts WHERE batch_id = '`+batch+`' ORDER BY id`)
		must(t, err)
		defer rows.Close()
		var states []string
		for rows.Next() {
			var st string
			must(t, rows.Scan(&st))
			states = append(states, st)
		}
		must(t, rows.Err())
		return states
	}
	for batch, want := range map[string][]string{"b1": {"sent"}, "b2": {"failed"}, "b3": {"split", "sent"}} {
		if got := attempts(batch); !slices.Equal(got, want) {
			t.Errorf("%s: attempts %v, want %v", batch, got, want)
		}
	}
	want := map[string]string{
		"+441": "sent/m1/bulk-1//", "+442": "sent//bulk-1//", "+443": `sent/id "3"/bulk-1//`,
		"+444": "failed///REJECTED/no route", "+445": "failed///REJECTED/no route",
		"+446": "sent/m6///", "+447": "sent/m7///",
	}
	check := func(s *State) {
		t.Helper()
		got := recipients(t, s)
		for p, w := range want {
			r := got[p]
			if g := fmt.Sprintf("%s/%s/%s/%s/%s", r.Status, r.ProviderID, r.ProviderBatchID, r.ProviderStatus, r.Reason); g != w {
				t.Errorf("%s: %s, want %s", p, g, w)
			}
		}
	}
	check(s)
	if got, want := messageIndex(t, s), map[string]string{"m1": "+441", `id "3"`: "+443", "m6": "+446", "m7": "+447"}; !maps.Equal(got, want) {
		t.Errorf("messages: %v, want %v", got, want)
	}
	// What a later run knows of each recipient comes from the same rows.
	must(t, s.Close())
	s = openTest(t, path)
	check(s)
	if err := s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{"+441", "+442", "+443"}}}}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("a second outcome of b1: %v, want ErrNoIntent", err)
	}
}
