package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/state"
)

// splitRig is a project folder with a campaign folder: where earlier
// ledgers are left.
type splitRig struct {
	project, beside string
}

func newSplitRig(t *testing.T) splitRig {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "campaigns"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte("version: 1\n"), 0o644))
	return splitRig{project: dir, beside: filepath.Join(dir, "campaigns", "spring.smsstate")}
}

func (r splitRig) ledgers(inUse, campaign string) Ledgers {
	return Ledgers{InUse: state.MustParseLocation(inUse), Campaign: campaign, Beside: r.beside, ProjectDir: r.project, ProjectFile: "smsform.yaml"}
}

// sent records a send of campaign in the state at loc, through the
// project's ledger as apply does.
func sent(t *testing.T, loc, campaign string) {
	t.Helper()
	s, err := state.Open(context.Background(), state.MustParseLocation(loc), state.Options{Campaign: campaign, Shared: true, Gate: NewGate(nil)})
	must(t, err)
	recordOne(t, s)
	must(t, s.Close())
}

// tested records only a test send of campaign in the state at loc.
func tested(t *testing.T, loc, campaign string) {
	t.Helper()
	s, err := state.Open(context.Background(), state.MustParseLocation(loc), state.Options{Campaign: campaign, Shared: true})
	must(t, err)
	must(t, s.RecordTestSend(context.Background(), state.TestSend{At: time.Now(), By: "ann", BodyHash: hash, Phones: []string{"+447400999001"}, Outcome: state.Sent}))
	must(t, s.Close())
}

func optOut(t *testing.T, loc string, phones ...string) {
	t.Helper()
	var cs []OptOutChange
	for _, p := range phones {
		cs = append(cs, OptOutChange{Phone: p, At: time.Now(), By: "ann", Reason: "STOP"})
	}
	_, err := ChangeOptOuts(context.Background(), state.MustParseLocation(loc), cs)
	must(t, err)
}

func splitOf(t *testing.T, l Ledgers) *SplitLedgerError {
	t.Helper()
	err := CheckSplitLedger(context.Background(), l)
	if err == nil {
		return nil
	}
	var se *SplitLedgerError
	if !errors.As(err, &se) {
		t.Fatalf("CheckSplitLedger: %v, want a *SplitLedgerError or nil", err)
	}
	return se
}

// A state file next to the campaign that records a send of it, while the
// state in use is elsewhere, is a second ledger of the campaign; one that
// records only test sends, or another campaign, is not.
func TestSplitLedgerBeside(t *testing.T) { eachBackend(t, testSplitLedgerBeside) }

func testSplitLedgerBeside(t *testing.T, b backend) {
	r := newSplitRig(t)
	inUse := b.loc(t)
	if se := splitOf(t, r.ledgers(inUse, "spring")); se != nil {
		t.Fatalf("nothing beside: %v", se)
	}
	tested(t, r.beside, "spring")
	if se := splitOf(t, r.ledgers(inUse, "spring")); se != nil {
		t.Errorf("test sends alone beside: %v", se)
	}
	sent(t, r.beside, "spring")
	se := splitOf(t, r.ledgers(inUse, "spring"))
	if se == nil || se.Kind != SplitCampaign || !se.Beside || se.Other != r.beside || se.Serial == 0 || se.Campaign != "spring" {
		t.Fatalf("a send beside: %+v", se)
	}
	if se.InUse != state.Redact(inUse) || !strings.Contains(se.Error(), "two ledgers of one campaign") {
		t.Errorf("InUse %q, words %q", se.InUse, se.Error())
	}
	if se := splitOf(t, r.ledgers(inUse, "autumn")); se != nil {
		t.Errorf("another campaign's file: %v", se)
	}
	// The file beside is the state in use: one ledger.
	if se := splitOf(t, r.ledgers(r.beside, "spring")); se != nil {
		t.Errorf("in use: %v", se)
	}
}

// The project's earlier state, left in its folder when the project file
// moved the state elsewhere, holds every campaign to it: with campaigns
// not migrated, then with opt-outs the state in use lacks. A state that
// holds only opt-outs or test sends is no earlier ledger of a campaign,
// and a nested project's states are its own.
func TestSplitLedgerProject(t *testing.T) { eachBackend(t, testSplitLedgerProject) }

func testSplitLedgerProject(t *testing.T, b backend) {
	r := newSplitRig(t)
	inUse := b.loc(t)
	// The state in use holds opt-outs and test sends only: one ledger,
	// for a campaign and for the project's ledger alone.
	optOut(t, inUse, "+447400100001")
	tested(t, inUse, "spring")
	for _, name := range []string{"spring", ""} {
		if se := splitOf(t, r.ledgers(inUse, name)); se != nil {
			t.Errorf("campaign %q, opt-outs and test sends in use: %v", name, se)
		}
	}

	nested := filepath.Join(r.project, "other")
	must(t, os.MkdirAll(nested, 0o755))
	must(t, os.WriteFile(filepath.Join(nested, "smsform.yaml"), []byte("version: 1\n"), 0o644))
	optOut(t, filepath.Join(nested, "smsform.smsstate"), "+447400100001", "+447400100002")
	sent(t, filepath.Join(nested, "smsform.smsstate"), "spring")
	if se := splitOf(t, r.ledgers(inUse, "spring")); se != nil {
		t.Errorf("a nested project's state: %v", se)
	}

	old := filepath.Join(r.project, ".smsform", "smsform.smsstate")
	must(t, os.MkdirAll(filepath.Dir(old), 0o755))
	optOut(t, old, "+447400100001", "+447400100002")
	sent(t, old, "autumn")
	// Every campaign is held to it, the one it never recorded too.
	for _, name := range []string{"spring", ""} {
		se := splitOf(t, r.ledgers(inUse, name))
		if se == nil || se.Kind != SplitProject || se.Other != old || !slices.Equal(se.Unmigrated, []string{"autumn"}) || se.Beside {
			t.Errorf("campaign %q, an earlier state with autumn: %+v", name, se)
		}
	}

	// Its campaign migrated (marked moved), its opt-outs not yet.
	_, err := state.Copy(context.Background(), state.MustParseLocation(old), state.MustParseLocation(b.loc(t)), state.CopyOptions{Campaign: "autumn", Shared: true, By: "ann"})
	must(t, err)
	se := splitOf(t, r.ledgers(inUse, "spring"))
	if se == nil || se.Kind != SplitOptOuts || se.Other != old || !strings.Contains(se.Error(), "would not be honoured") {
		t.Fatalf("opt-outs left behind: %+v", se)
	}
	// As many opt-outs, and a cap history, in the state in use.
	optOut(t, inUse, "+447400100002")
	sent(t, inUse, "winter")
	if se := splitOf(t, r.ledgers(inUse, "spring")); se != nil {
		t.Errorf("opt-outs and cap history in use: %v", se)
	}
}

// An enclosing project's state that records a send of the campaign is a
// second ledger of it, whichever engine holds it; one that is missing, is
// the state in use, records only test sends or another campaign, is not.
// One that cannot be read is unchecked, never taken for empty, and a
// state that records the campaign outweighs it.
func TestSplitLedgerEnclosing(t *testing.T) { eachBackend(t, testSplitLedgerEnclosing) }

func testSplitLedgerEnclosing(t *testing.T, b backend) {
	r := newSplitRig(t)
	inUse := filepath.Join(r.project, "campaigns", ".inner", "smsform.smsstate")
	outer := b.loc(t)
	l := Ledgers{InUse: state.MustParseLocation(inUse), Campaign: "spring",
		Enclosing: []Enclosing{{ProjectFile: filepath.Join(r.project, "smsform.yaml"), Line: 2, State: state.MustParseLocation(outer)}}}
	if err := CheckSplitLedger(context.Background(), l); err != nil {
		t.Fatalf("an empty enclosing state: %v", err)
	}
	tested(t, outer, "spring")
	sent(t, outer, "autumn")
	if err := CheckSplitLedger(context.Background(), l); err != nil {
		t.Fatalf("test sends and another campaign: %v", err)
	}
	sent(t, outer, "spring")
	se := splitOf(t, l)
	if se == nil || se.Kind != SplitEnclosing || se.ProjectFile != l.Enclosing[0].ProjectFile || se.Line != 2 || se.Serial == 0 {
		t.Fatalf("a send in the enclosing state: %+v", se)
	}
	if se.Other != state.WithoutPassword(outer) && se.Other != outer {
		t.Errorf("Other %q, want %q", se.Other, outer)
	}
	// The enclosing state is the state in use: one ledger.
	same := l
	same.InUse = state.MustParseLocation(outer)
	if err := CheckSplitLedger(context.Background(), same); err != nil {
		t.Errorf("the same state: %v", err)
	}

	// Unreadable first, a split after: the split is returned.
	broken := Enclosing{ProjectFile: filepath.Join(r.project, "..", "smsform.yaml"), Line: 3, Err: errors.New("state: not a state location")}
	l.Enclosing = []Enclosing{broken, l.Enclosing[0]}
	if se := splitOf(t, l); se == nil || se.Kind != SplitEnclosing {
		t.Errorf("a split after an unchecked state: %+v", se)
	}
	l.Enclosing = []Enclosing{broken}
	var ue *UncheckedError
	if err := CheckSplitLedger(context.Background(), l); !errors.As(err, &ue) || ue.Line != 3 || !strings.Contains(err.Error(), "not a state location") {
		t.Errorf("an unreadable enclosing project: %v", err)
	}
}

// A PostgreSQL state that does not answer is unchecked within the wait,
// its password never in the words.
func TestSplitLedgerEnclosingUnreachable(t *testing.T) {
	r := newSplitRig(t)
	l := Ledgers{InUse: state.MustParseLocation(filepath.Join(r.project, "in.smsstate")), Campaign: "spring",
		Enclosing: []Enclosing{{ProjectFile: filepath.Join(r.project, "smsform.yaml"), Line: 2,
			State: state.MustParseLocation("postgres://sms:hunter2@127.0.0.1:1/x?connect_timeout=2&sslmode=disable")}}}
	var ue *UncheckedError
	err := CheckSplitLedger(context.Background(), l)
	if !errors.As(err, &ue) {
		t.Fatalf("CheckSplitLedger: %v, want an *UncheckedError", err)
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "records campaign spring") {
		t.Errorf("words: %q", err.Error())
	}
}
