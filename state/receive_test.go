package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openShared opens campaign's record in the project's state at loc, by the
// clock now; its intents consult no ledger (package ledger tests that).
func openShared(t *testing.T, loc, campaign string, now func() time.Time) *State {
	t.Helper()
	s, err := Open(context.Background(), MustParseLocation(loc), Options{Campaign: campaign, Shared: true, Now: now})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// testClock is a clock that tells t0 until set to another time.
func testClock(t0 time.Time) (set func(time.Time), now func() time.Time) {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	return func(t time.Time) { clock.Store(t.UnixNano()) }, func() time.Time { return time.Unix(0, clock.Load()).UTC() }
}

// openReceiver opens a receiver on loc whose clock is now.
func openReceiver(t *testing.T, loc string, now time.Time) *Receiver {
	t.Helper()
	r, err := OpenReceiver(context.Background(), MustParseLocation(loc), ReceiverOptions{Now: func() time.Time { return now }})
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// sentWithIDs records a batch sent to phones whose messages the provider
// gave ids m-<phone>, and one in doubt (no answer: no ids).
func sentWithIDs(t *testing.T, s *State, batch string, phones ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := s.AdmitIntent(ctx, intent(batch, phones...))
	must(t, err)
	ids := make([]string, len(phones))
	for i, p := range phones {
		ids[i] = "m-" + p
	}
	must(t, s.RecordOutcome(ctx, batch, Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: phones, IDs: ids}}}))
}

// Reports are matched to their recipients by the message id, else by the
// number when exactly one message went there; each report is recorded
// once however often it comes; a delivered or undelivered report resolves
// a recipient in doubt (a pending one does not); a report for a recipient
// recorded failed is an anomaly; and a campaign's deliveries are the
// latest report of each recipient.
func TestReceiverReports(t *testing.T) { eachBackend(t, testReceiverReports) }

func testReceiverReports(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	sentWithIDs(t, s, "b1", "+441", "+442")
	_, err := s.AdmitIntent(ctx, intent("b2", "+443", "+444"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: InDoubt, Reason: "timeout"}))
	_, err = s.AdmitIntent(ctx, intent("b3", "+445"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b3", Outcome{Status: Failed, Reason: "refused"}))

	r := openReceiver(t, loc, t0.Add(time.Hour))
	at := t0.Add(time.Minute)
	reports := []Report{
		{ProviderID: "m-+441", Phone: "+441", Delivery: Delivered, ProviderStatus: "DELIVERED", At: at},
		{ProviderID: "m-+442", Delivery: Undelivered, ProviderStatus: "UNDELIVERED", Reason: "absent subscriber", At: at},
		{Phone: "+443", Delivery: Delivered, ProviderStatus: "DELIVERED", At: at}, // in doubt: no id known, matched by number
		{Phone: "+444", Delivery: Pending, ProviderStatus: "ENROUTE", At: at},     // pending proves nothing
		{Phone: "+445", Delivery: Delivered, At: at},                              // recorded failed: an anomaly
		{ProviderID: "m-unknown", Delivery: Delivered, At: at},                    // nobody
		{Phone: "+449", Delivery: Delivered, At: at},                              // no message to that number
	}
	got, err := r.Record(ctx, append(reports, reports[0]), nil) // the first twice in one call
	must(t, err)
	res := got.Reports
	check := func(i int, want string) {
		t.Helper()
		g := res[i]
		s := fmt.Sprintf("%s/%s/%s dup=%v resolved=%v", g.Campaign, g.Phone, g.MatchedBy, g.Duplicate, g.Resolved)
		if !strings.HasPrefix(s, want) {
			t.Errorf("report %d: %s (unmatched %q, anomaly %q), want %s", i, s, g.Unmatched, g.Anomaly, want)
		}
	}
	check(0, "spring/+441/id dup=false resolved=false")
	check(1, "spring/+442/id dup=false")
	check(2, "spring/+443/number dup=false resolved=true")
	check(3, "spring/+444/number dup=false resolved=false")
	check(4, "spring/+445/number dup=false resolved=false")
	check(5, "// dup=false")
	check(6, "// dup=false")
	check(7, "spring/+441/id dup=true")
	if !strings.Contains(res[4].Anomaly, "recorded failed") || res[5].Unmatched == "" || !strings.Contains(res[6].Unmatched, "no message went to that number") {
		t.Errorf("anomaly %q, unmatched %q and %q", res[4].Anomaly, res[5].Unmatched, res[6].Unmatched)
	}
	// Again later: every one a duplicate, nothing changes.
	again, err := r.Record(ctx, reports, nil)
	must(t, err)
	for i, g := range again.Reports {
		if !g.Duplicate || g.Resolved {
			t.Errorf("report %d again: %+v", i, g)
		}
	}
	s.Close()
	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer ro.Close()
	recs := recipients(t, ro)
	if r := recs["+443"]; r.Status != Sent || !strings.Contains(r.Reason, "resolved as sent by a delivery report: delivered") {
		t.Errorf("+443 after its report: %+v", r)
	}
	if recs["+444"].Status != InDoubt || recs["+445"].Status != Failed {
		t.Errorf("+444 %s, +445 %s: want in doubt and failed as they were", recs["+444"].Status, recs["+445"].Status)
	}
	ds, err := ro.Deliveries(ctx)
	must(t, err)
	if ds["+441"].Delivery != Delivered || ds["+442"].Delivery != Undelivered || ds["+442"].Reason != "absent subscriber" ||
		ds["+444"].Delivery != Pending || ds["+445"].Anomaly == "" || len(ds) != 5 {
		t.Errorf("deliveries %+v", ds)
	}
	if n, err := ro.UnmatchedReports(ctx); err != nil || n != 2 {
		t.Errorf("unmatched reports: %d, %v; want 2", n, err)
	}
}

// Two messages to one number in the window: a report without a matching
// id names neither, never guessed.
func TestReceiverAmbiguousNumber(t *testing.T) { eachBackend(t, testReceiverAmbiguousNumber) }

func testReceiverAmbiguousNumber(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	a := openShared(t, loc, "spring", now)
	sentWithIDs(t, a, "b1", "+441")
	a.Close()
	c := openShared(t, loc, "autumn", now)
	sentWithIDs(t, c, "b1", "+441")
	c.Close()
	r := openReceiver(t, loc, t0)
	got, err := r.Record(ctx, []Report{{Phone: "+441", Delivery: Delivered, At: t0.Add(time.Minute)}}, nil)
	must(t, err)
	if g := got.Reports[0]; g.Campaign != "" || !strings.Contains(g.Unmatched, "2 messages went to that number") {
		t.Errorf("%+v", g)
	}
}

// Many calls at once: each returns once its reports are durable, grouped
// into fewer transactions, none lost, none twice.
func TestReceiverConcurrent(t *testing.T) { eachBackend(t, testReceiverConcurrent) }

func testReceiverConcurrent(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	phones := make([]string, 200)
	for i := range phones {
		phones[i] = fmt.Sprintf("+44%04d", i)
	}
	sentWithIDs(t, s, "b1", phones...)
	r := openReceiver(t, loc, t0)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(phones))
	for _, p := range append(phones, phones...) { // every report twice
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Record(ctx, []Report{{ProviderID: "m-" + p, Delivery: Delivered, At: t0}}, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	var n int
	must(t, r.db.QueryRowContext(ctx, `SELECT count(*) FROM reports WHERE delivery = 'delivered' AND campaign_id <> 0`).Scan(&n))
	if n != len(phones) {
		t.Errorf("%d reports recorded, want %d", n, len(phones))
	}
}

// An attempt that commits after one with a higher id (PostgreSQL hands out
// ids at insert) is still found by number: the id skipped over is a hole,
// read again until it appears. Made here in a file by writing the rows
// with their ids, in the order two transactions would commit them.
func TestReceiverNumberIndexHoles(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "p.smsstate")
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	sentWithIDs(t, s, "b1", "+441")
	s.Close()
	// The first read of the table too: ids 1 to 100 could be in flight.
	sqliteFile(t, loc, `UPDATE attempts SET id = id + 100`)
	put := func(id int, phone string) {
		sqliteFile(t, loc, fmt.Sprintf(`INSERT INTO attempts (id, campaign_id, batch_id, state, body_hash, recipients, started_at, finished_at, phones)
			VALUES (%d, (SELECT id FROM campaigns WHERE name = 'spring'), 'b%d', 'sent', 'h', 1, '%s', '%s', '["%s"]')`,
			id, id, t0.Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano), phone))
	}
	put(105, "+445") // committed first, with ids 103 and 104 still in flight
	r := openReceiver(t, loc, t0.Add(time.Minute))
	got, err := r.Record(ctx, []Report{{Phone: "+445", Delivery: Delivered, At: t0.Add(time.Minute)}}, nil)
	must(t, err)
	if got.Reports[0].Campaign != "spring" {
		t.Fatalf("the later id: %+v", got.Reports[0])
	}
	put(103, "+443") // commits after 105
	got, err = r.Record(ctx, []Report{{Phone: "+443", Delivery: Delivered, At: t0.Add(time.Minute)}}, nil)
	must(t, err)
	if got.Reports[0].Campaign != "spring" || got.Reports[0].MatchedBy != "number" {
		t.Errorf("an id that committed late: %+v", got.Reports[0])
	}
	// b1 is attempt 101 (its answer named every recipient: one attempt).
	_, waits := r.numbers.holes[104]
	_, waits102 := r.numbers.holes[102]
	_, filled := r.numbers.holes[103]
	if !waits || !waits102 || filled || len(r.numbers.holes) != 102 {
		t.Errorf("%d holes, want 1 to 100, 102 and 104 still looked for", len(r.numbers.holes))
	}
}

// A report that came while its send was still in flight waits in the
// state, not in the receiver: one killed before apply recorded the send in
// doubt leaves it to the next receiver, which resolves the recipient as it
// opens, once however often receivers open again.
func TestReceiverReclaim(t *testing.T) { eachBackend(t, testReceiverReclaim) }

func testReceiverReclaim(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	_, err := s.AdmitIntent(ctx, intent("b1", "+441", "+442"))
	must(t, err)
	first, err := OpenReceiver(ctx, MustParseLocation(loc), ReceiverOptions{Now: func() time.Time { return t0 }})
	must(t, err)
	got, err := first.Record(ctx, []Report{{Phone: "+441", Delivery: Delivered, ProviderStatus: "DELIVERED", At: t0}}, nil)
	must(t, err)
	if g := got.Reports[0]; g.Campaign != "spring" || g.Resolved {
		t.Fatalf("a report while the send is in flight: %+v", g)
	}
	must(t, first.Close()) // what a kill loses: the receiver's memory
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: InDoubt, Reason: "timeout"}))
	s.Close()
	for range 2 {
		r, err := OpenReceiver(ctx, MustParseLocation(loc), ReceiverOptions{Now: func() time.Time { return t0 }})
		must(t, err)
		must(t, r.Close())
	}
	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer ro.Close()
	recs := recipients(t, ro)
	if r := recs["+441"]; r.Status != Sent || !strings.Contains(r.Reason, "resolved as sent by a delivery report") {
		t.Errorf("+441, whose report waited: %+v", r)
	}
	if recs["+442"].Status != InDoubt {
		t.Errorf("+442, with no report: %s, want in doubt", recs["+442"].Status)
	}
	var as []Attempt
	must(t, ro.Attempts(ctx, func(a Attempt) error { as = append(as, a); return nil }))
	if len(as) != 2 {
		t.Errorf("%d attempts, want the send and one resolution: %+v", len(as), as)
	}
}

// A report that waited names its message by id, and the answer that gave
// the id came after it: the next receiver indexes that answer before it
// matches what waited. By number alone it could not be matched, another
// campaign having messaged the same number since.
func TestReceiverReclaimByID(t *testing.T) { eachBackend(t, testReceiverReclaimByID) }

func testReceiverReclaimByID(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	_, err := s.AdmitIntent(ctx, intent("b1", "+441"))
	must(t, err)
	first, err := OpenReceiver(ctx, MustParseLocation(loc), ReceiverOptions{Now: func() time.Time { return t0 }})
	must(t, err)
	_, err = first.Record(ctx, []Report{{Phone: "+441", ProviderID: "m1", Delivery: Delivered, At: t0}}, nil)
	must(t, err)
	must(t, first.Close())
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: InDoubt, Phones: []string{"+441"}, IDs: []string{"m1"}, Reason: "not named"}}}))
	s.Close()
	other := openShared(t, loc, "autumn", now)
	_, err = other.AdmitIntent(ctx, intent("b9", "+441"))
	must(t, err)
	must(t, other.RecordOutcome(ctx, "b9", Outcome{Status: Sent}))
	other.Close()
	r, err := OpenReceiver(ctx, MustParseLocation(loc), ReceiverOptions{Now: func() time.Time { return t0 }})
	must(t, err)
	must(t, r.Close())
	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer ro.Close()
	if rec := recipients(t, ro)["+441"]; rec.Status != Sent {
		t.Errorf("+441, whose report waited with its message's id: %s, want sent", rec.Status)
	}
	// The resolution names the part's id: the index keeps one message for
	// it, and nothing is left to index.
	var rows, marked int
	must(t, ro.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE provider_id = 'm1'`).Scan(&rows))
	must(t, ro.db.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE ids_pending = 1`).Scan(&marked))
	if rows != 1 || marked != 0 {
		t.Errorf("m1 in %d rows of the index, %d attempts marked; want 1 and 0", rows, marked)
	}
}

// A report that waits in a running receiver for a batch whose answer then
// leaves its recipient in doubt (the answer named it with a status the
// mapping does not know), the whole batch in one outcome or split in
// parts: the next group the receiver writes resolves the recipient it
// proves sent, with no restart.
func TestReceiverLandedWholeInDoubt(t *testing.T) { eachBackend(t, testReceiverLandedWholeInDoubt) }

func testReceiverLandedWholeInDoubt(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	_, err := s.AdmitIntent(ctx, intent("b1", "+441", "+442"))
	must(t, err)
	_, err = s.AdmitIntent(ctx, intent("b2", "+443", "+444"))
	must(t, err)
	r := openReceiver(t, loc, t0)
	got, err := r.Record(ctx, []Report{{Phone: "+441", ProviderID: "m1", Delivery: Delivered, At: t0}, {Phone: "+444", Delivery: Delivered, At: t0}}, nil)
	must(t, err)
	for _, g := range got.Reports {
		if g.Campaign != "spring" || g.Resolved {
			t.Fatalf("a report while the send is in flight: %+v", g)
		}
	}
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{
		{Status: InDoubt, Phones: []string{"+441", "+442"}, IDs: []string{"m1", "m2"}, ProviderStatus: "QUEUED", Reason: "not named"}}}))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{HTTPStatus: 200, Parts: []Part{
		{Status: Sent, Phones: []string{"+443"}},
		{Status: InDoubt, Phones: []string{"+444"}, ProviderStatus: "QUEUED", Reason: "not named"}}}))
	s.Close()
	_, err = r.Record(ctx, []Report{{Phone: "+449", Delivery: Pending, At: t0}}, nil)
	must(t, err)
	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer ro.Close()
	recs := recipients(t, ro)
	for _, p := range []string{"+441", "+444"} {
		if rec := recs[p]; rec.Status != Sent || !strings.Contains(rec.Reason, "resolved as sent by a delivery report") {
			t.Errorf("%s, whose report waited: %+v, want resolved as sent", p, rec)
		}
	}
	if rec := recs["+442"]; rec.Status != InDoubt {
		t.Errorf("+442, with no report: %s, want in doubt", rec.Status)
	}
}

// What a provider writes in a report is kept as it wrote it, whatever
// JSON must escape to carry it into the state (quotes, backslashes,
// control characters, HTML's characters, accents), in a group of reports
// written together; a byte that is not UTF-8 becomes U+FFFD.
func TestReportTextKept(t *testing.T) { eachBackend(t, testReportTextKept) }

func testReportTextKept(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", now)
	texts := map[string]string{
		"+441": `said "no" \ twice`,
		"+442": "tab\there, line\nbreak",
		"+443": "<b>R&D</b>",
		"+444": "réseau indisponible — 网络",
		"+445": "plain",
	}
	var phones []string
	for p := range texts {
		phones = append(phones, p)
	}
	slices.Sort(phones)
	phones = append(phones, "+446")
	_, err := s.AdmitIntent(ctx, intent("b1", phones...))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	var reports []Report
	for _, p := range phones[:5] {
		reports = append(reports, Report{Phone: p, Delivery: Undelivered, ProviderStatus: texts[p], Reason: texts[p], At: t0})
	}
	reports = append(reports, Report{Phone: "+446", Delivery: Undelivered, Reason: "bad \xff byte", At: t0})
	r := openReceiver(t, loc, t0)
	_, err = r.Record(ctx, reports, nil)
	must(t, err)
	got, err := s.Deliveries(ctx)
	must(t, err)
	texts["+446"] = "bad \uFFFD byte"
	for p, want := range texts {
		if d := got[p]; d.Reason != want || (p != "+446" && d.ProviderStatus != want) {
			t.Errorf("%s: reason %q, status %q, want %q", p, d.Reason, d.ProviderStatus, want)
		}
	}
}

// A provider that reuses a message id: the report's number tells which
// message it is about, and without one that does, the report is
// unmatched, with why, rather than settling whichever came first.
func TestReportIDOfSeveralMessages(t *testing.T) { eachBackend(t, testReportIDOfSeveralMessages) }

func testReportIDOfSeveralMessages(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	const gb1, gb2 = "+447400123401", "+447400123402"
	s := openShared(t, loc, "spring", now)
	for i, p := range []string{gb1, gb2} {
		batch := fmt.Sprintf("b%d", i+1)
		_, err := s.AdmitIntent(ctx, intent(batch, p))
		must(t, err)
		must(t, s.RecordOutcome(ctx, batch, Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{p}, IDs: []string{"dup"}}}}))
	}
	r := openReceiver(t, loc, t0.Add(time.Hour))
	at := t0.Add(time.Minute)
	got, err := r.Record(ctx, []Report{
		{ProviderID: "dup", Delivery: Delivered, At: at},
		{ProviderID: "dup", Phone: gb2, Delivery: Delivered, At: at},
		{ProviderID: "dup", Phone: "+447400123499", Delivery: Undelivered, At: at},
	}, nil)
	must(t, err)
	rs := got.Reports
	if rs[0].Phone != "" || !strings.Contains(rs[0].Unmatched, "names 2 messages") {
		t.Errorf("an id of two messages, no number: %+v", rs[0])
	}
	if rs[1].Phone != gb2 || rs[1].MatchedBy != "id" || rs[1].Unmatched != "" {
		t.Errorf("an id of two messages and the number of one: %+v", rs[1])
	}
	if rs[2].Phone != "" || rs[2].Unmatched == "" {
		t.Errorf("an id of two messages and the number of neither: %+v", rs[2])
	}
}

// A report settles only the message it is about. One whose id the state
// does not know, for a number whose one message has another id, is about
// a message smsform did not send (another tool's, on the same account);
// one whose id names a message to another number contradicts itself. Both
// are unmatched, with why, and the recipient stays in doubt. Matched by
// number stays where the message has no id to compare (a batch that got
// no answer), and by id where the numbers agree.
func TestReportAboutAnotherMessage(t *testing.T) { eachBackend(t, testReportAboutAnotherMessage) }

func testReportAboutAnotherMessage(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	const withID, noID, sent = "+447400123401", "+447400123402", "+447400123403"
	s := openShared(t, loc, "spring", now)
	_, err := s.AdmitIntent(ctx, intent("b1", withID))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: InDoubt, Phones: []string{withID}, IDs: []string{"m-1"}}}}))
	_, err = s.AdmitIntent(ctx, intent("b2", noID))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: InDoubt, HTTPStatus: 502}))
	_, err = s.AdmitIntent(ctx, intent("b3", sent))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b3", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{sent}, IDs: []string{"m-3"}}}}))

	r := openReceiver(t, loc, t0.Add(time.Hour))
	at := t0.Add(time.Minute)
	got, err := r.Record(ctx, []Report{
		{ProviderID: "otp-1", Phone: withID, Delivery: Delivered, At: at},
		{ProviderID: "m-3", Phone: "+447400123499", Delivery: Delivered, At: at},
	}, nil)
	must(t, err)
	rs := got.Reports
	if rs[0].Phone != "" || !strings.Contains(rs[0].Unmatched, "has another id") {
		t.Errorf("an unknown id, the number of a message with another id: %+v", rs[0])
	}
	if rs[1].Phone != "" || !strings.Contains(rs[1].Unmatched, "another number") {
		t.Errorf("a known id, another number: %+v", rs[1])
	}
	counts, err := s.Counts(ctx)
	must(t, err)
	if counts[InDoubt] != 2 || counts[Sent] != 1 {
		t.Fatalf("after reports about other messages: %v, want 2 in doubt and 1 sent", counts)
	}

	got, err = r.Record(ctx, []Report{
		{ProviderID: "x-2", Phone: noID, Delivery: Delivered, At: at},
		{ProviderID: "m-1", Phone: withID, Delivery: Delivered, At: at},
	}, nil)
	must(t, err)
	rs = got.Reports
	if rs[0].Phone != noID || rs[0].MatchedBy != "number" || rs[1].Phone != withID || rs[1].MatchedBy != "id" {
		t.Errorf("by number where the message has no id, by id where the numbers agree: %+v", rs)
	}
	counts, err = s.Counts(ctx)
	must(t, err)
	if counts[InDoubt] != 0 || counts[Sent] != 3 {
		t.Errorf("after their own reports: %v, want 3 sent", counts)
	}
}

// An operator's resolve --as unsent never sends again to a recipient a
// report in the state proves was messaged: a failed one delivered after
// all (the provider's answer was wrong), one in doubt that a report
// reached before apply's answer did (undelivered: the provider acted), one
// in doubt whose number's report matched no campaign (another messaged it
// too: it may be about this one).
// Each is recorded sent, resolved by its report; the others are unsent.
func TestResolveUnsentHeedsReports(t *testing.T) { eachBackend(t, testResolveUnsentHeedsReports) }

func testResolveUnsentHeedsReports(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	set, now := testClock(t0.Add(-2 * time.Hour))
	const delivered, refused, reached, unknown, before, shared = "+447400123401", "+447400123402", "+447400123403", "+447400123404", "+447400123405", "+447400123406"
	s := openShared(t, loc, "spring", now)
	// An earlier message to before, in doubt, resolved unsent; its report
	// (undelivered) comes after, about that message.
	_, err := s.AdmitIntent(ctx, intent("b0", before))
	must(t, err)
	res, err := s.Resolve(ctx, "b0", false)
	must(t, err)
	if res.Moved != 1 {
		t.Fatalf("resolve b0: %+v", res)
	}
	early := openReceiver(t, loc, t0.Add(-time.Hour))
	old, err := early.Record(ctx, []Report{{Phone: before, Delivery: Undelivered, At: t0.Add(-110 * time.Minute)}}, nil)
	must(t, err)
	if old.Reports[0].Phone != before {
		t.Fatalf("the earlier message's report: %+v", old.Reports[0])
	}
	set(t0)
	_, err = s.AdmitIntent(ctx, intent("b1", delivered, refused))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Failed, HTTPStatus: 400}))
	_, err = s.AdmitIntent(ctx, intent("b2", reached, unknown, before, shared)) // no answer yet: in doubt
	must(t, err)
	// Another campaign messaged shared too: its report by number matches
	// neither message, and may be about this one.
	autumn := openShared(t, loc, "autumn", now)
	sentWithIDs(t, autumn, "a1", shared)
	r := openReceiver(t, loc, t0.Add(time.Hour))
	at := t0.Add(time.Minute)
	_, err = r.Record(ctx, []Report{
		{Phone: delivered, Delivery: Delivered, At: at},
		{Phone: refused, Delivery: Undelivered, At: at}, // failed, and not delivered: may go again
		{Phone: reached, Delivery: Undelivered, At: at},
		{Phone: shared, Delivery: Pending, ProviderStatus: "ENROUTE", At: at},
	}, nil)
	must(t, err)

	got, err := s.ResolveFailed(ctx, "b1")
	must(t, err)
	if got != (Resolved{Moved: 1, ByReport: 1}) {
		t.Errorf("resolve failed as unsent: %+v, want 1 moved and 1 by its report", got)
	}
	got, err = s.Resolve(ctx, "b2", false)
	must(t, err)
	if got != (Resolved{Moved: 2, ByReport: 2}) {
		t.Errorf("resolve in doubt as unsent: %+v, want 2 moved and 2 by their reports", got)
	}
	want := map[string]Status{delivered: Sent, reached: Sent, shared: Sent}
	if st := statuses(t, s); !mapsEqual(st, want) {
		t.Errorf("statuses %v, want %v (the others unsent)", st, want)
	}
	// The next apply may message only those without proof.
	adm, err := s.AdmitIntent(ctx, intent("b3", refused, unknown))
	must(t, err)
	if len(adm.Suppressed) != 0 {
		t.Errorf("admission of the unsent: %+v", adm)
	}
	if err := s.RecordIntent(ctx, intent("b4", delivered)); err == nil {
		t.Error("a recipient resolved sent by its report was given a new intent")
	}
}

// A receiver records nothing that a migration left behind. Once campaign a
// moved, a report of a is refused (ErrMoved, naming a) while a report of b
// in the same group is recorded; once b moved too (the whole state), a
// STOP is refused by the receiver opened before, and no receiver opens.
// Nothing refused is in the state.
func TestReceiverRefusesMoved(t *testing.T) { eachBackend(t, testReceiverRefusesMoved) }

func testReceiverRefusesMoved(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	for c, phone := range map[string]string{"a": "+441", "b": "+442"} {
		s := openShared(t, loc, c, now)
		sentWithIDs(t, s, "b1", phone)
		must(t, s.Close())
	}
	r := openReceiver(t, loc, t0.Add(time.Hour))
	move := func(c string) {
		t.Helper()
		_, err := Copy(ctx, MustParseLocation(loc), MustParseLocation(b.loc(t)), CopyOptions{Campaign: c, Shared: true})
		must(t, err)
	}
	move("a")

	// Both reports in one group: queued together before the receiver's
	// loop is woken.
	at := t0.Add(time.Minute)
	ofA := &recording{reports: []Report{{ProviderID: "m-+441", Phone: "+441", Delivery: Delivered, At: at}}, done: make(chan struct{})}
	ofB := &recording{reports: []Report{{ProviderID: "m-+442", Phone: "+442", Delivery: Delivered, At: at}}, done: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, ofA, ofB)
	r.mu.Unlock()
	r.work <- struct{}{}
	<-ofA.done
	<-ofB.done
	var moved *MovedAwayError
	if !errors.As(ofA.err, &moved) || moved.Campaign != "a" || !errors.Is(ofA.err, ErrMoved) {
		t.Errorf("a report of the moved campaign: %v", ofA.err)
	}
	if ofB.err != nil || ofB.out.Reports[0].Campaign != "b" || ofB.out.Reports[0].Duplicate {
		t.Errorf("a report of the campaign still here: %+v, %v", ofB.out, ofB.err)
	}

	move("b")
	_, err := r.Record(ctx, nil, []Reply{{Phone: "+442", Text: "STOP", At: at}})
	if !errors.As(err, &moved) || moved.Campaign != "" || len(moved.To) != 2 {
		t.Errorf("a STOP to a state whose campaigns all moved: %v", err)
	}
	if _, err := OpenReceiver(ctx, MustParseLocation(loc), ReceiverOptions{}); !errors.Is(err, ErrMoved) {
		t.Errorf("a receiver opened on a state whose campaigns all moved: %v", err)
	}
	must(t, r.Close())

	v, err := ViewStore(ctx, MustParseLocation(loc))
	must(t, err)
	defer v.Close()
	var reports, ofMoved, replies int
	must(t, v.DB.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM reports), (SELECT count(*) FROM reports WHERE phone = '+441'), (SELECT count(*) FROM replies)`).
		Scan(&reports, &ofMoved, &replies))
	if reports != 1 || ofMoved != 0 || replies != 0 {
		t.Errorf("the state holds %d reports (%d of the moved campaign) and %d replies, want 1, 0, 0", reports, ofMoved, replies)
	}
}

// A migration of a campaign while a receiver keeps recording its reports
// (some settling recipients in doubt) leaves nothing behind: every report
// the receiver said was recorded is in the target, the target's record is
// the source's as it was marked (serial, attempts), and once marked the
// receiver refuses the campaign. A report that landed between the copy's
// read and the mark used to stay in the old state alone.
func TestMigrateWhileReceiving(t *testing.T) { eachBackend(t, testMigrateWhileReceiving) }

func testMigrateWhileReceiving(t *testing.T, b backend) {
	ctx := context.Background()
	loc, target := b.loc(t), b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "a", now)
	var sent, doubt []string
	for i := range 200 {
		sent = append(sent, fmt.Sprintf("+4477009%05d", i))
	}
	for i := range 50 {
		doubt = append(doubt, fmt.Sprintf("+4477008%05d", i))
	}
	sentWithIDs(t, s, "b1", sent...)
	_, err := s.AdmitIntent(ctx, intent("b2", doubt...))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: InDoubt, Reason: "timeout"}))
	must(t, s.Close())

	// One report a call, each of its own key: the numbers in doubt first
	// (a delivered report settles each, a write to the campaign's record),
	// then a pending report of each sent message, over and over: more
	// than the receiver records before the migration lands, even on a
	// machine loaded by other tests (5 rounds were once all recorded).
	var reports []Report
	for i, p := range doubt {
		reports = append(reports, Report{Phone: p, Delivery: Delivered, At: t0.Add(time.Duration(i) * time.Second)})
	}
	for round := range 40 {
		for i, p := range sent {
			reports = append(reports, Report{ProviderID: "m-" + p, Phone: p, Delivery: Pending, ProviderStatus: "ENROUTE",
				At: t0.Add(time.Duration(round*1000+i) * time.Millisecond)})
		}
	}
	r := openReceiver(t, loc, t0.Add(time.Hour))
	var recorded atomic.Int64
	refusedAt := -1
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, rp := range reports {
			_, err := r.Record(ctx, []Report{rp}, nil)
			if errors.Is(err, ErrMoved) {
				refusedAt = i
				return
			}
			if err != nil {
				t.Errorf("report %d: %v", i, err)
				return
			}
			recorded.Add(1)
		}
	}()
	for recorded.Load() < 20 {
		select {
		case <-done:
			t.Fatalf("the receiver stopped after %d reports, before the migration", recorded.Load())
		case <-time.After(time.Millisecond):
		}
	}
	_, err = Copy(ctx, MustParseLocation(loc), MustParseLocation(target), CopyOptions{Campaign: "a", Shared: true})
	must(t, err)
	<-done
	if refusedAt < 0 {
		t.Fatalf("the receiver recorded all %d reports, the last after the migration", len(reports))
	}
	n := int(recorded.Load())
	if n != refusedAt {
		t.Fatalf("recorded %d of the first %d reports", n, refusedAt)
	}

	count := func(at string) (reports, attempts int, serial int64) {
		t.Helper()
		v, err := OpenReadOnly(ctx, MustParseLocation(at), "a")
		must(t, err)
		defer v.Close()
		c, err := v.summary(ctx)
		must(t, err)
		return c.Reports, c.Attempts, c.Serial
	}
	srcReports, srcAttempts, srcSerial := count(loc)
	dstReports, dstAttempts, dstSerial := count(target)
	if srcReports != n || dstReports != n {
		t.Errorf("the receiver recorded %d reports; the source holds %d, the target %d", n, srcReports, dstReports)
	}
	if dstAttempts != srcAttempts || dstSerial != srcSerial {
		t.Errorf("the target has %d attempts at serial %d, the source %d at %d", dstAttempts, dstSerial, srcAttempts, srcSerial)
	}
	if want := 2 + min(n, len(doubt)); srcAttempts != want {
		t.Errorf("the source has %d attempts, want %d (a resolution of each number in doubt reported)", srcAttempts, want)
	}
	t.Logf("%d reports recorded before the mark, %d attempts", n, srcAttempts)
}

// A report that waited for its attempt (in flight when it came) is not
// settled in the state its campaign moved away from: the receiver there
// lets it go, and the receiver of the state it moved to settles it from
// the report the migration copied.
func TestReceiverLeavesMovedToTheirState(t *testing.T) {
	eachBackend(t, testReceiverLeavesMovedToTheirState)
}

func testReceiverLeavesMovedToTheirState(t *testing.T, b backend) {
	ctx := context.Background()
	loc, target := b.loc(t), b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	other := openShared(t, loc, "other", now) // so that the state is not vacated
	sentWithIDs(t, other, "b1", "+449")
	must(t, other.Close())
	s := openShared(t, loc, "spring", now)
	_, err := s.AdmitIntent(ctx, intent("b1", "+441"))
	must(t, err)
	first := openReceiver(t, loc, t0)
	got, err := first.Record(ctx, []Report{{Phone: "+441", Delivery: Delivered, At: t0}}, nil)
	must(t, err)
	if got.Reports[0].Resolved {
		t.Fatalf("a report while the send is in flight: %+v", got.Reports[0])
	}
	must(t, first.Close())
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: InDoubt, Reason: "timeout"}))
	must(t, s.Close())
	_, err = Copy(ctx, MustParseLocation(loc), MustParseLocation(target), CopyOptions{Campaign: "spring", Shared: true})
	must(t, err)

	// The old state's receiver finds the report again, and leaves it.
	r := openReceiver(t, loc, t0)
	must(t, r.Close())
	statusOf := func(at string) (Status, int) {
		t.Helper()
		ro, err := OpenSharedReadOnly(ctx, MustParseLocation(at), "spring")
		must(t, err)
		defer ro.Close()
		n := 0
		must(t, ro.Attempts(ctx, func(Attempt) error { n++; return nil }))
		return recipients(t, ro)["+441"].Status, n
	}
	if st, n := statusOf(loc); st != InDoubt || n != 1 {
		t.Errorf("in the state the campaign left, +441 is %s with %d attempts, want in doubt with 1 (as copied)", st, n)
	}
	r = openReceiver(t, target, t0)
	must(t, r.Close())
	if st, n := statusOf(target); st != Sent || n != 2 {
		t.Errorf("in the state the campaign moved to, +441 is %s with %d attempts, want sent with 2 (its resolution)", st, n)
	}
}

// A campaign never recorded is not recorded in a state whose every
// campaign moved (a project file still naming it): not when it is opened
// after the migration, nor when it was opened before and its first
// intent comes after (the project's ledger went with the last campaign).
func TestNoRecordInVacatedState(t *testing.T) { eachBackend(t, testNoRecordInVacatedState) }

func testNoRecordInVacatedState(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	_, now := testClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	for c, phone := range map[string]string{"a": "+441", "b": "+442"} {
		s := openShared(t, loc, c, now)
		sentWithIDs(t, s, "b1", phone)
		must(t, s.Close())
	}
	early := openShared(t, loc, "c", now)
	to := b.loc(t)
	for _, c := range []string{"a", "b"} {
		_, err := Copy(ctx, MustParseLocation(loc), MustParseLocation(to), CopyOptions{Campaign: c, Shared: true})
		must(t, err)
	}
	var moved *MovedAwayError
	if _, err := early.AdmitIntent(ctx, intent("c1", "+443")); !errors.As(err, &moved) || len(moved.To) != 1 || !errors.Is(err, ErrMoved) {
		t.Errorf("the first intent of a campaign opened before the state was vacated: %v", err)
	}
	must(t, early.Close())
	if _, err := Open(ctx, MustParseLocation(loc), Options{Campaign: "d", Shared: true, Now: now}); !errors.As(err, &moved) {
		t.Errorf("a campaign opened in a vacated state: %v", err)
	}
	if err := Vacated(ctx, MustParseLocation(loc)); !errors.As(err, &moved) || len(moved.To) != 1 || moved.To[0] != MustParseLocation(to).Unmasked() {
		t.Errorf("Vacated of the state every campaign left: %v", err)
	}
	if err := Vacated(ctx, MustParseLocation(to)); err != nil {
		t.Errorf("Vacated of the state they moved to: %v", err)
	}
	view, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "d")
	must(t, err)
	if err := view.Vacated(ctx); !errors.As(err, &moved) || len(moved.To) != 1 {
		t.Errorf("Vacated through a view of the state every campaign left: %v", err)
	}
	must(t, view.Close())
	// Nor does a pause make a record there: no apply would read it.
	if err := SetPause(ctx, MustParseLocation(loc), "e", true, &Pause{At: now(), By: "ann"}); !errors.As(err, &moved) {
		t.Errorf("a pause of a campaign in a vacated state: %v", err)
	}
	// Where the campaigns moved, the new one is recorded as usual.
	s := openShared(t, to, "c", now)
	sentWithIDs(t, s, "c1", "+443")
	must(t, s.Close())

	v, err := ViewStore(ctx, MustParseLocation(loc))
	must(t, err)
	defer v.Close()
	var campaigns, attempts int
	must(t, v.DB.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM campaigns), (SELECT count(*) FROM attempts)`).Scan(&campaigns, &attempts))
	if campaigns != 2 || attempts != 2 {
		t.Errorf("the vacated state holds %d campaigns and %d attempts, want 2 and 2", campaigns, attempts)
	}
}

// An unmatched report's reason tells a number that could not be read
// from no number at all.
func TestUnmatchedReasonOfUnreadableNumber(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "project.smsstate")
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	r := openReceiver(t, loc, t0)
	rec, err := r.Record(context.Background(), []Report{
		{ProviderID: "zz-1", Unreadable: true, Delivery: Delivered, At: t0},
		{ProviderID: "zz-2", Delivery: Delivered, At: t0},
		{Unreadable: true, Delivery: Delivered, At: t0},
	}, nil)
	must(t, err)
	for i, want := range []string{
		"no message has the provider's id, and the report's number is not one in international form",
		"no message has the provider's id, and the report names no number",
		"the report names no message id, and its number is not one in international form",
	} {
		if got := rec.Reports[i].Unmatched; got != want {
			t.Errorf("report %d unmatched: %q, want %q", i, got, want)
		}
	}
}

// An apply killed between a batch's intent and its answer leaves the
// intent open for good: no answer will ever be recorded for it. Once no
// apply holds the campaign's lock, a report proving the provider acted on
// such an intent resolves its recipient, as it resolves one of a batch
// whose answer left it in doubt: a report that comes after the kill at
// once, one that came while the apply ran (waiting for its answer) with
// the receiver's next group, or, the receiver killed too, when the next
// one starts. While an apply holds the lock, the report waits.
func TestOrphanIntentSettledByReport(t *testing.T) { eachBackend(t, testOrphanIntentSettledByReport) }

func testOrphanIntentSettledByReport(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	delivered := func(phone string) []Report {
		return []Report{{Phone: phone, Delivery: Delivered, ProviderStatus: "DELIVERED", At: t0}}
	}
	apply := openShared(t, loc, "spring", now)
	_, err := apply.AdmitIntent(ctx, intent("b1", "+441", "+442", "+443", "+444"))
	must(t, err)
	first, err := OpenReceiver(ctx, MustParseLocation(loc), ReceiverOptions{Now: func() time.Time { return t0 }})
	must(t, err)
	r := openReceiver(t, loc, t0)
	for _, rc := range []struct {
		rcv   *Receiver
		phone string
	}{{first, "+441"}, {r, "+442"}} {
		got, err := rc.rcv.Record(ctx, delivered(rc.phone), nil)
		must(t, err)
		if g := got.Reports[0]; g.Campaign != "spring" || g.Resolved {
			t.Fatalf("a report while the apply waits for the answer: %+v", g)
		}
	}
	must(t, first.Close()) // killed: +441's report waits in the state alone
	must(t, apply.Close()) // what a kill -9 leaves: the intent open, the lock free
	got, err := r.Record(ctx, delivered("+443"), nil)
	must(t, err)
	if g := got.Reports[0]; !g.Resolved {
		t.Errorf("a report of an intent no apply holds: %+v, want resolved", g)
	}
	again := openReceiver(t, loc, t0) // finds +441's report
	must(t, again.Close())
	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer ro.Close()
	recs := recipients(t, ro)
	for _, p := range []string{"+441", "+442", "+443"} {
		if rec := recs[p]; rec.Status != Sent || !strings.Contains(rec.Reason, "resolved as sent by a delivery report") {
			t.Errorf("%s, delivered by the killed apply's batch: %+v, want resolved as sent", p, rec)
		}
	}
	if rec := recs["+444"]; rec.Status != InDoubt {
		t.Errorf("+444, with no report: %s, want in doubt", rec.Status)
	}
	var as []Attempt
	must(t, ro.Attempts(ctx, func(a Attempt) error { as = append(as, a); return nil }))
	if len(as) != 4 {
		t.Errorf("%d attempts, want the intent and three resolutions: %+v", len(as), as)
	}
}

// A report matched to an intent while its apply ran, read again once the
// apply let its lock go: the answer recorded meanwhile is what counts. Only
// an intent still open then is in doubt; one the apply recorded sent is
// sent, and a report must not resolve it a second time.
func TestOrphanIntentReadAfterTheLock(t *testing.T) { eachBackend(t, testOrphanIntentReadAfterTheLock) }

func testOrphanIntentReadAfterTheLock(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	apply := openShared(t, loc, "spring", now)
	_, err := apply.AdmitIntent(ctx, intent("b1", "+441"))
	must(t, err)
	_, err = apply.AdmitIntent(ctx, intent("b2", "+442"))
	must(t, err)
	r := openReceiver(t, loc, t0)
	var ms []matched
	for _, batch := range []string{"b1", "b2"} {
		m := matched{state: AttemptIntent}
		must(t, r.db.QueryRowContext(ctx, `SELECT id, campaign_id FROM attempts WHERE batch_id = '`+batch+`'`).Scan(&m.attempt, &m.campaign))
		ms = append(ms, m)
	}
	if st, err := r.settled(ctx, ms[0]); err != nil || st != AttemptIntent {
		t.Fatalf("an intent while its apply runs: %s, %v; want intent", st, err)
	}
	// The answer lands, and the apply ends, after the report was matched.
	must(t, apply.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	must(t, apply.Close())
	r.running = nil
	if st, err := r.settled(ctx, ms[0]); err != nil || st != AttemptSent {
		t.Errorf("an intent answered sent before its apply ended: %s, %v; want sent", st, err)
	}
	if st, err := r.settled(ctx, ms[1]); err != nil || st != AttemptInDoubt {
		t.Errorf("an intent its ended apply left open: %s, %v; want in doubt", st, err)
	}
}
