package ledger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/state"
)

// A STOP reply (any case, the spaces and punctuation around it set aside)
// opts the number out of every campaign of the state (source reply), START opts it back in, another reply is counted against the
// campaign that messaged it last and its text is not kept; each reply is
// recorded once.
func TestReceiverReplies(t *testing.T) { eachBackend(t, testReceiverReplies) }

func testReceiverReplies(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	s := openShared(t, loc, "spring", nil, now)
	_, err := s.AdmitIntent(ctx, intent("b1", "+441", "+442"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b1", state.Outcome{Status: state.Sent}))
	r, err := state.OpenReceiver(ctx, state.MustParseLocation(loc), state.ReceiverOptions{Now: func() time.Time { return t0 }, OptOuts: ReplyOptOuts()})
	must(t, err)
	defer r.Close()
	at := t0.Add(time.Minute)
	got, err := r.Record(ctx, nil, []state.Reply{{Phone: "+441", Text: " stop ", At: at}, {Phone: "+442", Text: "Thanks, see you there", At: at},
		{Phone: "+443", Text: "Unsubscribe!", At: at}})
	must(t, err)
	if k := got.Replies; k[0].Kind != "stop" || k[0].Campaign != "spring" || k[1].Kind != "other" || k[1].Campaign != "spring" || k[2].Kind != "stop" || k[2].Campaign != "" {
		t.Errorf("replies %+v", k)
	}
	var out []string
	_, err = OptOuts(ctx, state.MustParseLocation(loc), func(o OptOut) error { out = append(out, o.Phone+"/"+o.Reason); return nil })
	must(t, err)
	if strings.Join(out, " ") != "+441/replied STOP +443/replied UNSUBSCRIBE" {
		t.Errorf("opted out: %v", out)
	}
	// A running apply honours it from its next intent.
	adm, err := s.AdmitIntent(ctx, intent("b2", "+443", "+444"))
	must(t, err)
	if len(adm.Suppressed) != 1 || adm.Suppressed[0] != "+443" {
		t.Errorf("admission after the STOP: %+v", adm)
	}
	again, err := r.Record(ctx, nil, []state.Reply{{Phone: "+441", Text: " stop ", At: at}, {Phone: "+441", Text: "start", At: at.Add(5 * time.Minute)}})
	must(t, err)
	if !again.Replies[0].Duplicate || again.Replies[1].Kind != "start" || again.Replies[1].Duplicate {
		t.Errorf("again: %+v", again.Replies)
	}
	out = nil
	_, err = OptOuts(ctx, state.MustParseLocation(loc), func(o OptOut) error { out = append(out, o.Phone); return nil })
	must(t, err)
	if strings.Join(out, " ") != "+443" {
		t.Errorf("opted out after START: %v", out)
	}
	v, err := Open(ctx, state.MustParseLocation(loc))
	must(t, err)
	defer v.Close()
	var kept int
	must(t, v.db.QueryRowContext(ctx, `SELECT count(*) FROM replies WHERE word = '' AND kind = 'other'`).Scan(&kept))
	if kept != 1 {
		t.Errorf("%d other replies without their text, want 1", kept)
	}
}

// Replies change the opt-outs in the order they were sent, not received: a
// START older than the STOP it follows in the post changes nothing, nor a
// STOP older than a START reply; at the same second a STOP wins, and
// nothing else outranks a STOP. A START never lifts an opt-out a person
// recorded (optout add): only optout remove does, with its reason. Each
// reply is recorded all the same.
func TestRepliesInTheirOrder(t *testing.T) { eachBackend(t, testRepliesInTheirOrder) }

func testRepliesInTheirOrder(t *testing.T, b backend) {
	ctx := context.Background()
	loc := state.MustParseLocation(b.loc(t))
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := replyReceiver(t, loc, func() time.Time { return t0.Add(time.Hour) })
	optedOut := func() string {
		t.Helper()
		var out []string
		_, err := OptOuts(ctx, loc, func(o OptOut) error { out = append(out, o.Phone); return nil })
		must(t, err)
		return strings.Join(out, " ")
	}
	reply := func(phone, text string, at time.Time) {
		t.Helper()
		got, err := r.Record(ctx, nil, []state.Reply{{Phone: phone, Text: text, At: at}})
		must(t, err)
		if got.Replies[0].Duplicate || got.Replies[0].Kind == "other" {
			t.Fatalf("%s at %s: %+v, want a new stop or start", text, at, got.Replies[0])
		}
	}

	reply("+441", "STOP", t0)
	reply("+441", "START", t0.Add(-time.Hour)) // sent before the STOP
	reply("+441", "START", t0)                 // the same second: the STOP wins
	if got := optedOut(); got != "+441" {
		t.Fatalf("after a STOP and older STARTs: opted out %q, want +441", got)
	}
	reply("+441", "START", t0.Add(time.Minute))
	reply("+441", "STOP", t0.Add(-time.Minute)) // older than the START
	if got := optedOut(); got != "" {
		t.Fatalf("after a newer START and an older STOP: opted out %q, want nobody", got)
	}
	reply("+441", "STOP", t0.Add(2*time.Minute+200*time.Millisecond))
	reply("+441", "START", t0.Add(2*time.Minute+500*time.Millisecond)) // the same second
	if got := optedOut(); got != "+441" {
		t.Fatalf("a STOP and a START in the same second: opted out %q, want +441", got)
	}

	// A person's opt-out stays until a person lifts it.
	_, err := ChangeOptOuts(ctx, loc, []OptOutChange{{Phone: "+442", At: t0, By: "alice", Reason: "asked by email"}})
	must(t, err)
	reply("+442", "START", t0.Add(time.Hour))
	if got := optedOut(); got != "+441 +442" {
		t.Fatalf("a START after a person's opt-out: opted out %q, want +441 +442", got)
	}
	// A person's re-consent (stamped by our clock) never drops a STOP,
	// even one the provider dates before it.
	_, err = ChangeOptOuts(ctx, loc, []OptOutChange{{Phone: "+442", Remove: true, At: t0.Add(2 * time.Hour), By: "alice", Reason: "opted in on the web form"}})
	must(t, err)
	reply("+442", "STOP", t0.Add(time.Hour))
	if got := optedOut(); got != "+441 +442" {
		t.Fatalf("a STOP dated before a person's re-consent: opted out %q, want +441 +442", got)
	}

	// A STOP reply, then the same number opted out by a person (as optout
	// add records it): the opt-out is the person's, and a START keeps it.
	reply("+444", "STOP", t0)
	_, err = ChangeOptOuts(ctx, loc, []OptOutChange{{Phone: "+444", At: t0.Add(time.Minute), By: "alice", Reason: "complained by phone"}})
	must(t, err)
	reply("+444", "START", t0.Add(5*time.Minute))
	if got := optedOut(); got != "+441 +442 +444" {
		t.Fatalf("a START after a STOP a person confirmed: opted out %q, want +441 +442 +444", got)
	}

	// A reply dated more than ten minutes ahead counts as received now:
	// a START of a hundred years ahead keeps no later STOP from counting.
	reply("+443", "STOP", t0)
	reply("+443", "START", t0.AddDate(100, 0, 0))
	reply("+443", "STOP", t0.Add(time.Hour+5*time.Minute))
	if got := optedOut(); got != "+441 +442 +443 +444" {
		t.Fatalf("a STOP after a START dated years ahead: opted out %q, want all four", got)
	}
}

// replyReceiver is a receiver of the state at loc that opts numbers out
// and in by their replies, on the clock now, closed when the test ends.
func replyReceiver(t *testing.T, loc state.Location, now func() time.Time) *state.Receiver {
	t.Helper()
	r, err := state.OpenReceiver(context.Background(), loc, state.ReceiverOptions{Now: now, OptOuts: ReplyOptOuts()})
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// Replies without a time (Twilio's inbound webhook gives none): a second
// STOP of the same words, after a START or after a person's re-consent,
// opts the number out again, where it was once taken for the first posted
// again and the person messaged on. A START of that kind is known by its
// words (a second one is not counted: the safe side), unless the mapping
// reads the provider's id of each reply, by which a retry is told from a
// new reply of the same words.
func TestRepliesWithoutTime(t *testing.T) { eachBackend(t, testRepliesWithoutTime) }

func testRepliesWithoutTime(t *testing.T, b backend) {
	ctx := context.Background()
	loc := state.MustParseLocation(b.loc(t))
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	set, now := testClock(t0)
	r := replyReceiver(t, loc, now)
	step := 0
	reply := func(rp state.Reply, wantDup bool, wantOut string) {
		t.Helper()
		step++
		set(t0.Add(time.Duration(step) * time.Minute))
		got, err := r.Record(ctx, nil, []state.Reply{rp})
		must(t, err)
		if got.Replies[0].Duplicate != wantDup {
			t.Errorf("step %d, %q from %s: duplicate %v, want %v", step, rp.Text, rp.Phone, got.Replies[0].Duplicate, wantDup)
		}
		var out []string
		_, err = OptOuts(ctx, loc, func(o OptOut) error { out = append(out, o.Phone); return nil })
		must(t, err)
		if got := strings.Join(out, " "); got != wantOut {
			t.Fatalf("step %d, %q from %s: opted out %q, want %q", step, rp.Text, rp.Phone, got, wantOut)
		}
	}
	reply(state.Reply{Phone: "+441", Text: "STOP"}, false, "+441")
	reply(state.Reply{Phone: "+441", Text: "START"}, false, "")
	reply(state.Reply{Phone: "+441", Text: "STOP"}, false, "+441")
	reply(state.Reply{Phone: "+441", Text: "STOP"}, false, "+441") // a retry: recorded again, harmless
	reply(state.Reply{Phone: "+441", Text: "START"}, true, "+441") // known by its words: not counted

	// After a person's re-consent, a STOP without a time opts out again.
	set(t0.Add(time.Hour))
	_, err := ChangeOptOuts(ctx, loc, []OptOutChange{{Phone: "+441", Remove: true, At: t0.Add(time.Hour), By: "alice", Reason: "opted in on the web form"}})
	must(t, err)
	step = 60
	reply(state.Reply{Phone: "+441", Text: "STOP"}, false, "+441")

	// With the provider's ids: each reply is its own, a retry one.
	reply(state.Reply{ProviderID: "SM1", Phone: "+442", Text: "STOP"}, false, "+441 +442")
	reply(state.Reply{ProviderID: "SM2", Phone: "+442", Text: "START"}, false, "+441")
	reply(state.Reply{ProviderID: "SM3", Phone: "+442", Text: "STOP"}, false, "+441 +442")
	reply(state.Reply{ProviderID: "SM4", Phone: "+442", Text: "START"}, false, "+441")
	reply(state.Reply{ProviderID: "SM4", Phone: "+442", Text: "START"}, true, "+441")
	reply(state.Reply{ProviderID: "SM3", Phone: "+442", Text: "STOP"}, true, "+441")
	// An id that is not one per reply (a conversation's) does not make a
	// STOP a duplicate of the START before it.
	reply(state.Reply{ProviderID: "CONV1", Phone: "+443", Text: "START"}, false, "+441")
	reply(state.Reply{ProviderID: "CONV1", Phone: "+443", Text: "STOP"}, false, "+441 +443")
}

// Stop words are read loosely, start words as written: "Opt-Out", a STOP
// said twice or with an invisible character inside, a STOP above a phone's
// signature, a stop word first or last ("pls stop", "Unsubscribe me") opt
// the number out (the safe side); "s t a r t" lifts nothing.
func TestLooseStopWords(t *testing.T) { eachBackend(t, testLooseStopWords) }

func testLooseStopWords(t *testing.T, b backend) {
	ctx := context.Background()
	loc := state.MustParseLocation(b.loc(t))
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := replyReceiver(t, loc, func() time.Time { return t0.Add(time.Hour) })
	got, err := r.Record(ctx, nil, []state.Reply{{Phone: "+441", Text: "Opt-Out", At: t0}, {Phone: "+442", Text: "STOP STOP", At: t0},
		{Phone: "+443", Text: "S\u200bTOP", At: t0}, {Phone: "+444", Text: "s t o p", At: t0},
		{Phone: "+445", Text: "STOP\nSent from my iPhone", At: t0}, {Phone: "+446", Text: "pls stop", At: t0}, {Phone: "+447", Text: "Unsubscribe me", At: t0}})
	must(t, err)
	for i, rp := range got.Replies {
		if rp.Kind != "stop" {
			t.Errorf("reply %d: %+v, want a stop", i, rp)
		}
	}
	got, err = r.Record(ctx, nil, []state.Reply{{Phone: "+441", Text: "s t a r t", At: t0.Add(time.Minute)}, {Phone: "+442", Text: "START-START", At: t0.Add(time.Minute)},
		{Phone: "+445", Text: "START\nSent from my iPhone", At: t0.Add(time.Minute)}})
	must(t, err)
	if got.Replies[0].Kind != "other" || got.Replies[1].Kind != "other" || got.Replies[2].Kind != "other" {
		t.Errorf("loose starts: %+v, want others", got.Replies)
	}
	var out []string
	_, err = OptOuts(ctx, loc, func(o OptOut) error { out = append(out, o.Phone+"/"+o.Reason); return nil })
	must(t, err)
	if want := "+441/replied OPT OUT +442/replied STOP +443/replied STOP +444/replied STOP +445/replied STOP +446/replied STOP +447/replied UNSUBSCRIBE"; strings.Join(out, " ") != want {
		t.Errorf("opted out: %q, want %q", strings.Join(out, " "), want)
	}
}
