package plan

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/state"
)

// TestComputeHeld checks how what the state records is subtracted: sent
// (same body, another body, a hash written in upper case), in doubt, failed,
// excluded, and recorded but no longer in the campaign.
func TestComputeHeld(t *testing.T) {
	list := "phone,name\n+447400123401,Ann\n+447400123402,Bob\n+447400123403,Cid\n+447400123404,Dee\n+447400123405,Eve\n+447400123406,Fay\n+447400123407,Gus\n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nexclude:\n  - numbers: [\"+447400123406\"]\nbody: \"Hi {{ .name }}\"\nbatch_size: 10\n",
		map[string]string{"l.csv": list})
	rec := testharness.Recorded{
		{Phone: "+447400123401", Status: state.Sent, BatchID: "b-1", BodyHash: state.BodyHash("Hi Ann")},
		{Phone: "+447400123402", Status: state.Sent, BatchID: "b-1", BodyHash: state.BodyHash("Hello Bob")},
		{Phone: "+447400123403", Status: state.Sent, BatchID: "b-1", BodyHash: strings.ToUpper(state.BodyHash("Hi Cid"))},
		{Phone: "+447400123404", Status: state.InDoubt, BatchID: "b-2"},
		{Phone: "+447400123405", Status: state.Failed, BatchID: "b-3", Reason: "HTTP 400"},
		{Phone: "+447400123406", Status: state.Sent, BatchID: "b-4", BodyHash: state.BodyHash("Hi Fay")},
		{Phone: "+447400123499", Status: state.Sent, BatchID: "b-5", BodyHash: state.BodyHash("Hi Zed")},
		{Phone: "not-e164", Status: state.Sent, BatchID: "b-6", BodyHash: "x"},
	}
	p, err := Compute(context.Background(), c, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Recipients: 7, ToSend: 1, AlreadySent: 3, InDoubt: 1, Failed: 1, Excluded: 1, Batches: 1, Segments: 1}
	if p.Summary != want {
		t.Errorf("summary = %+v, want %+v", p.Summary, want)
	}
	// Bob got another body; Cid's hash, in upper case, is compared as written.
	if p.BodyChanged != 2 {
		t.Errorf("body changed = %d, want 2", p.BodyChanged)
	}
	if len(p.InDoubt) != 1 || p.InDoubt[0] != (Held{Phone: "+447400123404", BatchID: "b-2"}) {
		t.Errorf("in doubt = %+v", p.InDoubt)
	}
	if len(p.Failed) != 1 || p.Failed[0] != (Held{Phone: "+447400123405", BatchID: "b-3", Reason: "HTTP 400"}) {
		t.Errorf("failed = %+v", p.Failed)
	}
	if !slices.Equal(p.Removed, []string{"+447400123499", "not-e164"}) {
		t.Errorf("removed = %q", p.Removed)
	}
	if len(p.AllBatches()) != 1 || !slices.Equal(p.AllBatches()[0].Recipients, []string{"+447400123407"}) || p.AllBatches()[0].Body != "Hi Gus" {
		t.Errorf("batches = %+v", p.AllBatches())
	}
}

// TestComputeGroupsBodies checks that recipients with the same rendered body
// share batches, in the order of each body's first recipient, whatever lies
// between them.
func TestComputeGroupsBodies(t *testing.T) {
	var list strings.Builder
	list.WriteString("phone,n\n")
	for i := range 50 {
		list.WriteString("+" + strconv.Itoa(447400123400+i) + "," + string(rune('a'+i%3)) + "\n")
	}
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"code {{ .n }}\"\nbatch_size: 7\n", map[string]string{"l.csv": list.String()})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	seen := map[string][]string{}
	for _, b := range p.AllBatches() {
		if len(bodies) == 0 || bodies[len(bodies)-1] != b.Body {
			bodies = append(bodies, b.Body)
		}
		if len(b.Recipients) > 7 {
			t.Errorf("batch of %d", len(b.Recipients))
		}
		seen[b.Body] = append(seen[b.Body], b.Recipients...)
	}
	if !slices.Equal(bodies, []string{"code a", "code b", "code c"}) {
		t.Errorf("bodies in order %q", bodies)
	}
	for i, body := range bodies {
		var want []string
		for j := i; j < 50; j += 3 {
			want = append(want, "+"+strconv.Itoa(447400123400+j))
		}
		if !slices.Equal(seen[body], want) {
			t.Errorf("%s: %q, want %q", body, seen[body], want)
		}
	}
}

// TestComputeHeldEdges pins what a state that is not quite what a real one
// gives yields: the same phone recorded twice (the later record wins, and
// the phone is listed once if removed), a recorded phone that is only in the
// exclusions (removed: the campaign does not send to it), and one the
// campaign lists twice.
func TestComputeHeldEdges(t *testing.T) {
	list := "phone\n+447400123401\n+447400123402\n+447400123402\n+447400123403\n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nexclude:\n  - numbers: [\"+447400123403\", \"+447400123409\"]\nbody: hi\nbatch_size: 10\n",
		map[string]string{"l.csv": list})
	rec := testharness.Recorded{
		{Phone: "+447400123401", Status: state.Failed, BatchID: "b-1", Reason: "HTTP 400"},
		{Phone: "+447400123409", Status: state.Sent, BatchID: "b-2", BodyHash: state.BodyHash("hi")},
		{Phone: "+447400123402", Status: state.InDoubt, BatchID: "b-3"},
		{Phone: "+447400123401", Status: state.Sent, BatchID: "b-4", BodyHash: state.BodyHash("hello")},
		{Phone: "+447400123499", Status: state.Sent, BatchID: "b-5", BodyHash: state.BodyHash("hi")},
		{Phone: "+447400123499", Status: state.Failed, BatchID: "b-6"},
		{Phone: "not-e164", Status: state.Sent, BatchID: "b-7", BodyHash: "x"},
		{Phone: "not-e164", Status: state.Sent, BatchID: "b-8", BodyHash: "x"},
	}
	p, err := Compute(context.Background(), c, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Recipients: 3, AlreadySent: 1, InDoubt: 1, Excluded: 1, Duplicates: 1}
	if p.Summary != want {
		t.Errorf("summary = %+v, want %+v", p.Summary, want)
	}
	if p.BodyChanged != 1 {
		t.Errorf("body changed = %d, want 1", p.BodyChanged)
	}
	if len(p.InDoubt) != 1 || p.InDoubt[0] != (Held{Phone: "+447400123402", BatchID: "b-3"}) || len(p.Failed) != 0 {
		t.Errorf("in doubt = %+v, failed = %+v", p.InDoubt, p.Failed)
	}
	if !slices.Equal(p.Removed, []string{"+447400123409", "+447400123499", "not-e164"}) {
		t.Errorf("removed = %q", p.Removed)
	}
}

// TestComputeHeldChunks resumes a campaign whose state records span several
// chunks of the read-ahead, the body hash runs crossing their bounds.
func TestComputeHeldChunks(t *testing.T) {
	var list strings.Builder
	list.WriteString("phone,name\n")
	var rec testharness.Recorded
	const n = 3*heldChunkLen + 100
	for i := range n {
		phone := fmt.Sprintf("+4474%08d", i)
		name := []string{"Ann", "Ben"}[i/1000%2] // runs of a thousand records share a body
		fmt.Fprintf(&list, "%s,%s\n", phone, name)
		rec = append(rec, state.Recipient{Phone: phone, Status: state.Sent, BatchID: "b", BodyHash: state.BodyHash("hi " + name)})
	}
	rec[n-1].BodyHash = state.BodyHash("an older body")
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: hi {{ .name }}\n", map[string]string{"l.csv": list.String()})
	p, err := Compute(context.Background(), c, rec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary.AlreadySent != n || p.Summary.ToSend != 0 || p.BodyChanged != 1 {
		t.Fatalf("already sent %d of %d, to send %d, body changed %d (want 1)", p.Summary.AlreadySent, n, p.Summary.ToSend, p.BodyChanged)
	}
}

// TestComputeStopsReadingState: a plan that fails while its lists are read
// stops the state's reader, which never outlives Compute.
func TestComputeStopsReadingState(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: hi {{ .name }}\n",
		map[string]string{"l.csv": "phone,name\n+447400123401,Ann\n+447400123402\n"})
	before := runtime.NumGoroutine()
	_, err := Compute(context.Background(), c, endlessState{})
	if err == nil || !strings.Contains(err.Error(), "l.csv:3") {
		t.Fatalf("err = %v, want the row without a name", err)
	}
	// Goroutines that have returned may take a moment to be gone; one
	// blocked for good never is.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before {
		t.Fatalf("%d goroutines after Compute, %d before", after, before)
	}
}

// endlessState is a state that records more than a plan ever reads: it
// stops only when its context ends.
type endlessState struct{ testharness.Recorded }

func (endlessState) EachRecipient(ctx context.Context, fn func(state.Recipient) error) error {
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(state.Recipient{Phone: fmt.Sprintf("+1201555%04d", i%10000), Status: state.Sent, BodyHash: "x"}); err != nil {
			return err
		}
	}
}

// TestComputeEmptyState: a state that records nothing yet (an apply failed
// before sending, after making it) is a first send to the reviewer, not a
// resume.
func TestComputeEmptyState(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - numbers: [\"+447400123401\"]\nbody: hi\n", nil)
	p, err := Compute(context.Background(), c, emptyState{})
	if err != nil {
		t.Fatal(err)
	}
	n := p.State.FirstSendNotice(p.Campaign)
	if !p.State.FirstSend || !strings.Contains(n, "the state at memory records nothing yet: this is the first send") {
		t.Fatalf("first send %v, notice %q", p.State.FirstSend, n)
	}
}

// emptyState is a state just made: a lineage, serial 0, no record.
type emptyState struct{ testharness.Recorded }

func (emptyState) Serial() int64 { return 0 }

// TestComputeWarnsOfEmptyList: a list of recipients that holds none (a CSV
// header row only, a text file of comments) is a warning that names it, not
// an error; a list with rows, invalid or duplicate ones too, is not empty.
func TestComputeWarnsOfEmptyList(t *testing.T) {
	files := map[string]string{
		"empty.csv": "phone,name\n",
		"blank.csv": "phone,name\n,\n",
		"notes.txt": "# nobody yet\n\n",
		"full.csv":  "phone,name\n+447400123401,Ann\n",
		"dups.csv":  "phone,name\n+447400123401,Ann\n",
		"bad.csv":   "phone,name\nnot a number,Bob\n",
	}
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: empty.csv\n  - file: full.csv\n  - file: blank.csv\n  - file: notes.txt\n  - file: dups.csv\n  - file: bad.csv\nbody: hi\n", files)
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var empty []string
	for _, w := range p.Warnings {
		if strings.Contains(w, "nobody in it gets a message") {
			empty = append(empty, w)
		}
	}
	want := []string{"empty.csv: the list has a header row and no rows", "blank.csv: the list has a header row and no rows", "notes.txt: the list holds no numbers"}
	if len(empty) != len(want) {
		t.Fatalf("warnings of empty lists %q, want %d", empty, len(want))
	}
	for i, w := range want {
		if !strings.Contains(empty[i], w) {
			t.Errorf("warning %q lacks %q", empty[i], w)
		}
	}
}
