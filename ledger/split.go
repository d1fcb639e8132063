package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/smsform/smsform/state"
)

// A campaign keeps one ledger. A state file left where smsform would once
// have used it — next to the campaign, or in the project's folder before
// the project's state moved to a database — still holds what it recorded;
// a state in use that does not hold it too is a second, partial ledger:
// everyone it recorded would be messaged again, and its opt-outs would
// not be honoured. [CheckSplitLedger] finds such a file.

// Ledgers says where a campaign's ledger is, and where an earlier one may
// have been left: what [CheckSplitLedger] looks at.
type Ledgers struct {
	// InUse is the state in use.
	InUse state.Location
	// Campaign is the campaign's name; "" checks only the project's
	// ledger (opt-outs and the frequency cap's history), for a command
	// that names no campaign.
	Campaign string
	// Beside is the state file next to the campaign, the default outside
	// a project; "" when none is looked for.
	Beside string
	// Also are more state files that may hold the campaign's record: the
	// one next to a link to the campaign file, where a command reached
	// through the link kept it before links to campaign files were
	// followed.
	Also []string
	// ProjectDir is the project's folder, "" outside a project. Its state
	// files, and those up to three folders below it, are looked at; a
	// folder holding ProjectFile is a project of its own, whose states are
	// its own.
	ProjectDir  string
	ProjectFile string
	// Enclosing are the states that the project files above the
	// project's folder name (see campaign.EnclosingProjects): a nested
	// project may hold a campaign its outer project once sent.
	Enclosing []Enclosing
}

// Enclosing is the state an enclosing project file names.
type Enclosing struct {
	ProjectFile string // the project file, and the line of its state:
	Line        int
	State       state.Location // the zero Location when Err
	// Err is why the project file could not be read: its state is then
	// unknown, and so is whether it records the campaign.
	Err error
}

// enclosingWait bounds how long the check waits for an enclosing project's
// state: a database that does not answer must not hold every plan up.
const enclosingWait = 10 * time.Second

// UncheckedError is a state that may record the campaign (one an enclosing
// project file names) and could not be read: whether the campaign was sent
// from it is unknown. Apply refuses unless told it was not.
type UncheckedError struct {
	ProjectFile string
	Line        int
	State       string // as it may be shown (no password); "" when the project file could not be read
	Campaign    string
	Err         error
}

func (e *UncheckedError) Error() string {
	if e.State == "" {
		return fmt.Sprintf("could not read the enclosing project file %s, whose state may record campaign %s: %v", e.ProjectFile, e.Campaign, e.Err)
	}
	return fmt.Sprintf("could not check whether %s, the state of the enclosing project file %s:%d, records campaign %s: %v",
		e.State, e.ProjectFile, e.Line, e.Campaign, e.Err)
}

func (e *UncheckedError) Unwrap() error { return e.Err }

// SplitKind says how a state file splits a campaign's ledger.
type SplitKind int

const (
	// SplitCampaign: the file records the campaign (Serial) and was not
	// migrated to the state in use.
	SplitCampaign SplitKind = iota + 1
	// SplitProject: the file is the project's earlier state: it holds the
	// project's ledger and campaigns that were not migrated (Unmigrated).
	SplitProject
	// SplitOptOuts: the file holds the project's opt-outs and frequency-cap
	// history, which the state in use does not: they would not be honoured.
	SplitOptOuts
	// SplitEnclosing: Other is the state of an enclosing project file
	// (ProjectFile) and records the campaign (Serial), not migrated: the
	// nested project's state would be a second, empty ledger.
	SplitEnclosing
)

// SplitLedgerError is the state file that, besides the state in use, holds
// part of a campaign's or a project's ledger. Nothing may be sent or
// recorded until it is carried over (state migrate) or removed.
type SplitLedgerError struct {
	Kind  SplitKind
	Other string // the other state file
	// Beside: Other is the file next to the campaign (else a state file
	// of the project's folder).
	Beside bool
	// ByLink: Other is the file next to a link to the campaign (Also).
	ByLink   bool
	InUse    string // the state in use, as it may be shown (no password)
	Campaign string // "" when the check named no campaign
	// ProjectFile and Line: the enclosing project file that names Other
	// as its state (SplitEnclosing).
	ProjectFile string
	Line        int
	// Serial is what Other records of the campaign (SplitCampaign,
	// SplitEnclosing).
	Serial int64
	// Unmigrated are the campaigns Other records and that were not
	// migrated (SplitProject).
	Unmigrated []string
}

func (e *SplitLedgerError) Error() string {
	switch e.Kind {
	case SplitCampaign:
		return fmt.Sprintf("%s records campaign %s (serial %d) and was not migrated to the state in use, %s: two ledgers of one campaign",
			e.Other, e.Campaign, e.Serial, e.InUse)
	case SplitEnclosing:
		return fmt.Sprintf("%s, the state of the enclosing project file %s:%d, records campaign %s (serial %d) and was not migrated to the state in use, %s: two ledgers of one campaign",
			e.Other, e.ProjectFile, e.Line, e.Campaign, e.Serial, e.InUse)
	case SplitProject:
		return fmt.Sprintf("%s is the project's earlier state and still records campaigns not migrated (%s), with the project's opt-outs and frequency-cap history, while the state in use is %s: the ledger would be split",
			e.Other, strings.Join(e.Unmigrated, ", "), e.InUse)
	}
	return fmt.Sprintf("%s holds the project's opt-outs and frequency-cap history, which the state in use, %s, does not: they would not be honoured",
		e.Other, e.InUse)
}

// CheckSplitLedger returns a *SplitLedgerError when a state file other
// than the state in use holds part of the ledger: the file next to the
// campaign, or a state file of the project's folder, that records the
// campaign and was not migrated (state migrate marks what it copies); or
// the project's earlier state, which holds the project's ledger and
// either campaigns not migrated or opt-outs and cap entries the state in
// use lacks. Every campaign of the project is held to the project's
// earlier state, not only those it records: opt-outs and caps concern
// everyone. A record of test sends alone is no ledger (serial 0). It reads
// only, and nil means one ledger.
func CheckSplitLedger(ctx context.Context, l Ledgers) error {
	// A state in use that moved away is refused as such (perhaps it moved
	// to the very file next to the campaign).
	if l.Campaign != "" && movedAway(ctx, l.InUse, l.Campaign) {
		return nil
	}
	for _, f := range l.otherFiles() {
		if err := l.earlierProjectState(ctx, f); err != nil {
			return err
		}
		if err := l.campaignRecord(ctx, f); err != nil {
			return err
		}
	}
	// A state that records the campaign outweighs one that could not be
	// read: it is returned first.
	var unchecked error
	for _, e := range l.Enclosing {
		err := l.enclosingRecord(ctx, e)
		var ue *UncheckedError
		switch {
		case errors.As(err, &ue):
			if unchecked == nil {
				unchecked = err
			}
		case err != nil:
			return err
		}
	}
	return unchecked
}

// enclosingRecord is the *SplitLedgerError of an enclosing project's state
// that records the campaign with a send and was not migrated, or the
// *UncheckedError of one that could not be read in enclosingWait.
func (l Ledgers) enclosingRecord(ctx context.Context, e Enclosing) error {
	if l.Campaign == "" {
		return nil
	}
	unchecked := &UncheckedError{ProjectFile: e.ProjectFile, Line: e.Line, State: e.State.String(), Campaign: l.Campaign, Err: e.Err}
	if e.Err != nil {
		unchecked.State = ""
		return unchecked
	}
	if !e.State.IsPostgres() {
		if _, err := os.Lstat(e.State.File()); errors.Is(err, fs.ErrNotExist) {
			return nil // no state there, nothing recorded
		}
	}
	if same, err := state.SameState(e.State, l.InUse); err == nil && same {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, enclosingWait)
	defer cancel()
	st, err := state.OpenSharedReadOnly(ctx, e.State, l.Campaign)
	if err != nil {
		unchecked.Err = err
		return unchecked
	}
	defer st.Close()
	if st.Lineage() == "" || st.Serial() == 0 || st.Moved() != nil {
		return nil
	}
	return &SplitLedgerError{Kind: SplitEnclosing, Other: e.State.WithoutPassword(), ProjectFile: e.ProjectFile, Line: e.Line,
		InUse: l.InUse.String(), Campaign: l.Campaign, Serial: st.Serial()}
}

// movedAway reports whether the campaign's record in the state at loc is
// marked moved.
func movedAway(ctx context.Context, loc state.Location, campaign string) bool {
	st, err := state.OpenSharedReadOnly(ctx, loc, campaign)
	if err != nil {
		return false
	}
	defer st.Close()
	return st.Moved() != nil
}

// campaignRecord is the *SplitLedgerError of a file f that records the
// campaign with a send (serial past 0) and was not migrated.
func (l Ledgers) campaignRecord(ctx context.Context, f state.Location) error {
	if l.Campaign == "" {
		return nil
	}
	st, err := state.OpenSharedReadOnly(ctx, f, l.Campaign)
	if err != nil {
		return nil
	}
	serial, recorded := st.Serial(), st.Lineage() != "" && st.Serial() != 0 && st.Moved() == nil
	st.Close()
	if !recorded {
		return nil
	}
	return &SplitLedgerError{Kind: SplitCampaign, Other: f.String(), Beside: f.File() == l.Beside, ByLink: slices.Contains(l.Also, f.File()),
		InUse: l.InUse.String(), Campaign: l.Campaign, Serial: serial}
}

// earlierProjectState is the *SplitLedgerError of a state file f of the
// project's folder that is the project's earlier state, not yet carried
// over to the state in use: it holds a ledger (only a project's state
// does) and either campaigns that were not migrated, or opt-outs and cap
// entries the state in use does not have.
func (l Ledgers) earlierProjectState(ctx context.Context, f state.Location) error {
	if l.ProjectDir == "" || f.File() == l.Beside {
		return nil
	}
	old, err := size(ctx, f)
	if err != nil || old.Empty() {
		return nil
	}
	cs, err := state.Campaigns(ctx, f)
	if err != nil {
		return nil
	}
	var left []string
	for _, c := range cs {
		if !c.Moved {
			left = append(left, c.Name)
		}
	}
	e := &SplitLedgerError{Kind: SplitProject, Other: f.String(), InUse: l.InUse.String(), Campaign: l.Campaign, Unmigrated: left}
	if len(left) > 0 {
		return e
	}
	now, err := size(ctx, l.InUse)
	if err != nil || now.OptOutSeq >= old.OptOutSeq && (now.CapNumbers > 0 || old.CapNumbers == 0) {
		return nil
	}
	e.Kind = SplitOptOuts
	return e
}

// maxWalk bounds the files a search of the project's folder looks at, so
// that a project in a large tree does not slow every command down.
const maxWalk = 5000

// otherFiles are the state files that could be a second ledger: the file
// next to the campaign, and the state files in the project's folder and
// three levels below (a nested project is its own), that exist and are
// not the state in use. A file whose name no state location can have is
// none of smsform's.
func (l Ledgers) otherFiles() []state.Location {
	var files []string
	if l.Beside != "" {
		files = append(files, l.Beside)
	}
	files = append(files, l.Also...)
	if l.ProjectDir != "" {
		files = append(files, l.projectFiles()...)
	}
	var out []state.Location
	for _, f := range files {
		loc, err := state.ParseLocation(f)
		if err != nil || loc.IsPostgres() {
			continue
		}
		if _, err := os.Lstat(f); err != nil {
			continue
		}
		if same, err := state.SameState(loc, l.InUse); err == nil && !same {
			out = append(out, loc)
		}
	}
	return out
}

// projectFiles are the state files of the project's folder, bar Beside.
func (l Ledgers) projectFiles() []string {
	var files []string
	root, seen := l.ProjectDir, 0
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if seen++; err != nil || seen > maxWalk {
			return fs.SkipAll
		}
		if d.IsDir() {
			if path != root && l.skipDir(root, path, d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(path, ".smsstate") && path != l.Beside {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// skipDir reports whether the walk of the project's folder passes over
// the folder path: version control, dependencies, a nested project, or
// too deep.
func (l Ledgers) skipDir(root, path, name string) bool {
	if name == ".git" || name == "node_modules" {
		return true
	}
	if l.ProjectFile != "" {
		if _, err := os.Lstat(filepath.Join(path, l.ProjectFile)); err == nil {
			return true
		}
	}
	rel, _ := filepath.Rel(root, path)
	return strings.Count(rel, string(filepath.Separator)) >= 3
}
