package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/realpath"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/state"
)

// envState names the state when --state does not: a path, or a PostgreSQL
// location shared by every campaign (each keeps its own record, by name).
const envState = "SMSFORM_STATE"

// projectStateFile is the file a project's state folder holds.
const projectStateFile = "smsform.smsstate"

// Where a campaign's state comes from, in order of precedence.
const (
	fromFlag    = "--state"
	fromEnv     = envState
	fromProject = "project"
	fromDefault = "default"
)

// stateChoice is the state a command uses for a campaign, and why: the one
// place that decides it, so that every command agrees, and errors and
// `state where` can say where the value came from.
type stateChoice struct {
	loc    state.Location
	source string // fromFlag, fromEnv, fromProject or fromDefault
	// shared: the project's state, which holds every campaign of the
	// project (state.Options.Shared).
	shared  bool
	project *campaign.Project // nil outside a project
	beside  string            // the file next to the campaign, the default outside a project
	realDir string            // the folder the campaign file really sits in
	// The campaign file, links resolved, and the folder it was named in
	// (links not resolved: a linked folder's place), absolute.
	realFile, givenDir string
	home               string // $HOME: how far up to look outside a repository
	// When the campaign file was reached through a link to it: the state
	// next to the link and the project of the link's folder (nil when
	// none, or the campaign's own), where its record was kept before links
	// to campaign files were followed.
	linkBeside  string
	linkProject *campaign.Project
}

// from says where the choice came from, for messages.
func (c stateChoice) from() string {
	switch c.source {
	case fromProject:
		return fmt.Sprintf("state in %s:%d", c.project.Path, c.project.StateLine)
	case fromDefault:
		return "the default, next to the campaign"
	}
	return c.source
}

// shown is the location as messages show it: a password masked.
func (c stateChoice) shown() string { return c.loc.String() }

// chooseState decides the state of the campaign file at campaignPath:
// --state, else $SMSFORM_STATE, else the project file's state, else the file
// next to the campaign. When the project file names a state, --state and
// SMSFORM_STATE may name only that same state (the same file, or the same
// database and schema with another role or options): a teammate's shell or
// a forgotten variable must not split a campaign's ledger in two. flag is
// the command's --state flag, "Changed" when given.
func chooseState(env Env, campaignPath string, flag *pflag.Flag) (stateChoice, error) {
	proj, err := campaign.ProjectOfFile(campaignPath)
	if err != nil {
		return stateChoice{}, err
	}
	followed := campaign.Followed(campaignPath)
	c := stateChoice{project: proj, beside: statePath(followed, ""), source: fromDefault}
	c.realDir, _ = realpath.Dir(campaignPath)
	if c.realFile, err = filepath.EvalSymlinks(campaignPath); err == nil {
		c.realFile, _ = filepath.Abs(c.realFile)
	}
	c.givenDir, _ = filepath.Abs(filepath.Dir(campaignPath))
	c.home = env.Getenv("HOME")
	if followed != campaignPath {
		c.linkBeside = statePath(campaignPath, "")
		if lp := linkProject(campaignPath); lp != nil && (proj == nil || lp.Path != proj.Path) {
			c.linkProject = lp
		}
	}
	raw := c.beside
	var declared state.Location
	if proj != nil && proj.State != "" {
		if declared, err = projectState(proj); err != nil {
			return stateChoice{}, err
		}
		c.loc, c.source, c.shared = declared, fromProject, true
	}
	switch {
	case flag != nil && flag.Changed:
		raw, c.source = stateFileIn(flag.Value.String()), fromFlag
	case env.Getenv(envState) != "":
		raw, c.source = stateFileIn(env.Getenv(envState)), fromEnv
	}
	if c.source != fromProject {
		if c.loc, err = parseChoice(c, raw); err != nil {
			return stateChoice{}, err
		}
	}
	if declared.IsZero() || c.source == fromProject {
		return c, nil
	}
	same, err := state.SameState(c.loc, declared)
	if err != nil {
		return stateChoice{}, fmt.Errorf("compare %s with the project's state: %w", c.from(), err)
	}
	if !same {
		if c.unseenFile() {
			return stateChoice{}, withHint(fmt.Errorf("%s names a state file that does not exist (its value is not shown: it may be a password), but the project file %s names %s: a campaign keeps one ledger",
				c.from(), proj.Path, declared),
				"unset %s (and leave out --state): the project file says where the state is; to use another role, name the same database: its whole postgres:// URL in %s, or only the password in PGPASSWORD", envState, envState)
		}
		return stateChoice{}, withHint(fmt.Errorf("%s names the state %s, but the project file %s names %s: a campaign keeps one ledger",
			c.from(), c.shown(), proj.Path, declared),
			"unset %s (and leave out --state): the project file says where the state is; to use another role, name the same database", envState)
	}
	c.shared = true
	return c, nil
}

// unseenFile says SMSFORM_STATE names a state file that does not exist: a
// value that may not be a path at all (a password put in SMSFORM_STATE
// rather than PGPASSWORD, a CI secret), which messages must not show.
// --state is not hidden: its value is in the command line already.
func (c stateChoice) unseenFile() bool {
	return c.source == fromEnv && c.newFile()
}

// newFile says --state or SMSFORM_STATE names a state file that does not
// exist yet.
func (c stateChoice) newFile() bool {
	if c.source != fromEnv && c.source != fromFlag || c.loc.IsZero() || c.loc.IsPostgres() {
		return false
	}
	_, err := os.Lstat(c.loc.File())
	return errors.Is(err, os.ErrNotExist)
}

// parseChoice parses raw, the location c's source gave.
func parseChoice(c stateChoice, raw string) (state.Location, error) {
	// A password put in SMSFORM_STATE rather than PGPASSWORD must neither
	// be shown nor become a new state file's name: the variable's value is
	// not in the command line, so an error need not repeat it.
	const password = "a PostgreSQL password goes in PGPASSWORD"
	loc, err := state.ParseLocation(raw)
	if err != nil {
		if c.source == fromEnv {
			err = fmt.Errorf("%s (its value is not shown: it may hold a password)", strings.ReplaceAll(err.Error(), raw, "the value"))
		}
		return loc, withHint(fmt.Errorf("%s: %w", c.from(), err),
			"name a state file (a path), a postgres:// URL or a libpq keyword string (host=… dbname=…); "+password)
	}
	// A new state file's name ends in .smsstate, so that a state moved or
	// renamed beside it is seen as an earlier state (a sign apply looks
	// for) rather than passed by for a fresh ledger.
	c.loc = loc
	if !c.newFile() || filepath.Ext(loc.File()) == stateExt {
		return loc, nil
	}
	msg := fmt.Sprintf("%s names no existing state file, and a new one's name ends in %s", c.from(), stateExt)
	if c.source == fromFlag {
		return loc, withHint(errors.New(msg), "name it NAME%s (or a folder ending in /, or a postgres:// URL); %s, never in --state", stateExt, password)
	}
	hint := fmt.Sprintf("name a state file (NAME%s), a folder ending in /, or the whole postgres:// URL; %s", stateExt, password)
	if c.project != nil && c.project.State != "" {
		hint = fmt.Sprintf("unset %s: the project file %s says where the state is; to use another role, set its whole postgres:// URL for the same database, or only %s",
			envState, c.project.Path, password)
	}
	return loc, withHint(fmt.Errorf("%s (its value is not shown: it may be a password)", msg), "%s", hint)
}

// projectState is the project file's state: a PostgreSQL location as
// written, a path against the project's folder; a folder (existing, or
// written with a trailing /) holds the project's file.
func projectState(p *campaign.Project) (state.Location, error) {
	loc, err := state.ParseLocation(p.State)
	if err != nil {
		return loc, &campaign.Error{File: p.Path, Line: p.StateLine, Field: "state", Msg: err.Error(),
			Hint: "name a folder (or file) for the state, relative to the project file, or a PostgreSQL database"}
	}
	if loc.IsPostgres() {
		return loc, nil
	}
	path := p.State
	if !filepath.IsAbs(path) {
		path = realpath.Join(p.Dir, path)
	}
	if strings.HasSuffix(p.State, "/") { // a folder as written (Join drops the /)
		path = filepath.Join(path, projectStateFile)
	} else {
		path = stateFileIn(path)
	}
	return state.ParseLocation(path)
}

// stateFileIn is the state a file location names: a folder (existing, or
// written with a trailing /) holds a project's state file; a PostgreSQL
// location or a file path is itself.
func stateFileIn(loc string) string {
	if state.IsPostgres(loc) {
		return loc
	}
	if fi, err := os.Stat(loc); strings.HasSuffix(loc, "/") || err == nil && fi.IsDir() {
		return filepath.Join(loc, projectStateFile)
	}
	return loc
}

// makeFolder makes the folder the project file names for its state file,
// if missing: the project says where the state goes, so the first command
// that writes to it (apply, test, pause, optout add or import) may make the place
// (plan, which writes nothing, reads it as empty). Any other location must
// exist: a mistyped --state must not become a new, empty ledger.
func (c stateChoice) makeFolder() error {
	if c.source != fromProject || c.loc.IsPostgres() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.loc.File()), 0o700); err != nil {
		return fmt.Errorf("make the project's state folder (state in %s:%d): %w", c.project.Path, c.project.StateLine, err)
	}
	return nil
}

// chooseStateFor is chooseState for a command that may name no campaign
// (state list --state X): --state or SMSFORM_STATE then.
func chooseStateFor(env Env, pos []string, flag *pflag.Flag) (stateChoice, error) {
	if len(pos) == 1 {
		return chooseState(env, pos[0], flag)
	}
	c := stateChoice{source: fromFlag}
	var err error
	switch {
	case flag.Changed:
		c.loc, err = parseChoice(c, stateFileIn(flag.Value.String()))
	case env.Getenv(envState) != "":
		c.source = fromEnv
		c.loc, err = parseChoice(c, stateFileIn(env.Getenv(envState)))
	default:
		// Inside a project, its state: the one every campaign of it uses.
		p, err := campaign.ProjectFor(".")
		if err != nil {
			return c, err
		}
		if p == nil || p.State == "" {
			return c, withHint(fmt.Errorf("%w: which state? give a campaign file or --state PATH", ErrUsage), "smsform state list campaign.yaml")
		}
		if c.loc, err = projectState(p); err != nil {
			return c, err
		}
		c.project, c.source, c.shared = p, fromProject, true
	}
	return c, err
}

// openView opens the choice's state read-only for the campaign name.
func (c stateChoice) openView(ctx context.Context, name string) (*state.State, error) {
	var st *state.State
	var err error
	if c.shared {
		st, err = state.OpenSharedReadOnly(ctx, c.loc, name)
	} else {
		st, err = state.OpenReadOnly(ctx, c.loc, name)
	}
	return st, readOnlyHint(lineageHint(err), c.loc)
}

// ledgers is what ledger.CheckSplitLedger looks at for the campaign name
// ("" for the project's ledger alone) whose state is c.
func (c stateChoice) ledgers(name string) ledger.Ledgers {
	l := ledger.Ledgers{InUse: c.loc, Campaign: name, Beside: c.beside, ProjectFile: campaign.ProjectFile}
	switch {
	case c.project != nil:
		l.ProjectDir = c.project.Dir
		if name != "" {
			l.Enclosing = enclosingStates(c.project.Dir)
		}
	case name != "" && c.realDir != "":
		// Outside a project too: discovery stops at a repository's root,
		// and a repository made inside a project's folder (git init, a
		// clone) leaves its campaigns without the project whose state may
		// record them.
		l.Enclosing = enclosingStates(c.realDir)
	}
	if name != "" && c.linkBeside != "" {
		l.Also = []string{c.linkBeside}
		if c.linkProject != nil && c.linkProject.State != "" {
			l.Enclosing = append(l.Enclosing, enclosingOf(c.linkProject.Path, c.linkProject, nil))
		}
	}
	return l
}

// linkProject is the project of the folder a link to a campaign file sits
// in, nil when none (or it cannot be read: the campaign's own project is
// what commands use).
func linkProject(campaignPath string) *campaign.Project {
	abs, err := realpath.Abs(campaignPath)
	if err != nil {
		return nil
	}
	dir, _ := realpath.Split(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	p, _ := campaign.ProjectFor(dir)
	return p
}

// enclosingStates are the states the project files above the project's
// folder dir name, for ledger.CheckSplitLedger; one that cannot be read
// is carried with its error.
func enclosingStates(dir string) []ledger.Enclosing {
	files, err := campaign.EnclosingProjects(dir)
	if err != nil {
		return []ledger.Enclosing{{ProjectFile: filepath.Join(filepath.Dir(dir), campaign.ProjectFile), Err: err}}
	}
	var out []ledger.Enclosing
	for _, f := range files {
		p, err := campaign.LoadProject(f)
		if err == nil && p.State == "" {
			continue
		}
		out = append(out, enclosingOf(f, p, err))
	}
	return out
}

// enclosingOf is the state the project file f (loaded as p, or err) names,
// for ledger.CheckSplitLedger.
func enclosingOf(f string, p *campaign.Project, err error) ledger.Enclosing {
	e := ledger.Enclosing{ProjectFile: f, Err: err}
	if err == nil {
		e.Line = p.StateLine
		e.State, e.Err = projectState(p)
	}
	return e
}

// splitLedger is the state file that holds part of the ledger of the
// campaign (named name, in the file at campaignPath) besides the state in
// use (see ledger.CheckSplitLedger), in the command line's words; nil when
// there is one ledger; a *ledger.UncheckedError when an enclosing
// project's state could not be read. The default state, next to the
// campaign, has no other place to be in its own project, but an
// enclosing project's state may still record the campaign.
func (c stateChoice) splitLedger(ctx context.Context, campaignPath, name string) error {
	l := c.ledgers(name)
	if c.source == fromDefault {
		l = ledger.Ledgers{InUse: l.InUse, Campaign: l.Campaign, Enclosing: l.Enclosing, Also: l.Also}
	}
	return c.splitWords(ledger.CheckSplitLedger(ctx, l), campaignPath)
}

// projectSplit is splitLedger for the project's ledger alone: what optout
// commands, which have no campaign, check.
func (c stateChoice) projectSplit(ctx context.Context) error {
	l := c.ledgers("")
	l.Beside = ""
	return c.splitWords(ledger.CheckSplitLedger(ctx, l), "")
}

// splitWords puts a *ledger.SplitLedgerError in the command line's words;
// other errors (and nil) are returned as they are.
func (c stateChoice) splitWords(err error, campaignPath string) error {
	var se *ledger.SplitLedgerError
	if !errors.As(err, &se) {
		return err
	}
	return &splitLedgerError{SplitLedgerError: se, from: c.from(), campaignPath: campaignPath,
		to: shellWord(c.loc.WithoutPassword())}
}

// splitLedgerError is a *ledger.SplitLedgerError said with where the state
// in use came from and the state migrate command that carries the other
// file over.
type splitLedgerError struct {
	*ledger.SplitLedgerError
	from         string // where the state in use came from (stateChoice.from)
	campaignPath string // the campaign file, as given
	to           string // the state in use, as state migrate --to takes it
}

func (e *splitLedgerError) Unwrap() error { return e.SplitLedgerError }

func (e *splitLedgerError) Error() string {
	tail := "carry it over with " + e.fix()
	switch e.Kind {
	case ledger.SplitCampaign:
		tail += ", or remove it if it is stale"
	case ledger.SplitProject:
		tail = "carry it all over with " + e.fix()
	case ledger.SplitOptOuts:
		tail = "carry them over with " + e.fix()
	}
	return e.reason() + "; " + tail
}

// reason is what is split, without the command that mends it.
func (e *splitLedgerError) reason() string {
	switch e.Kind {
	case ledger.SplitCampaign:
		where := "within the project's folder"
		switch {
		case e.Beside:
			where = "next to the campaign"
		case e.ByLink:
			where = "next to the link to the campaign (where an earlier smsform kept its record)"
		}
		return fmt.Sprintf("%s %s records campaign %s (serial %d) and was not migrated, while the state in use is %s (%s): "+
			"two ledgers of one campaign", e.Other, where, e.Campaign, e.Serial, e.InUse, e.from)
	case ledger.SplitEnclosing:
		return fmt.Sprintf("%s, the state of the enclosing project file %s:%d, records campaign %s (serial %d) and was not migrated, "+
			"while the state in use is %s (%s): two ledgers of one campaign, and everyone it recorded would be messaged again",
			e.Other, e.ProjectFile, e.Line, e.Campaign, e.Serial, e.InUse, e.from)
	case ledger.SplitProject:
		return fmt.Sprintf("%s in the project's folder is the project's earlier state and still records %s not migrated (%s), "+
			"with the project's opt-outs and frequency-cap history, while the state in use is %s (%s): the ledger would be split",
			e.Other, words.N(len(e.Unmigrated), "campaign", "campaigns"), strings.Join(e.Unmigrated, ", "), e.InUse, e.from)
	}
	return fmt.Sprintf("%s in the project's folder holds the project's opt-outs and frequency-cap history, which the state in use, %s (%s), "+
		"does not: they would not be honoured", e.Other, e.InUse, e.from)
}

// fix is the state migrate command that carries the other state over.
func (e *splitLedgerError) fix() string {
	if e.Kind == ledger.SplitCampaign || e.Kind == ledger.SplitEnclosing {
		return fmt.Sprintf("smsform state migrate %s --from %s --to %s", e.campaignPath, shellWord(e.Other), e.to)
	}
	return fmt.Sprintf("smsform state migrate --from %s --to %s", shellWord(e.Other), e.to)
}

// shellWord is s as a shell reads one word: quoted when it holds anything
// the shell would take apart (a PostgreSQL URL's & and ?), so that a
// command in a hint can be pasted.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// noRecord says that the state holds no record of the campaign name ("":
// of any campaign): that there is no state there at all, or that the
// state there records other campaigns, or only the project's ledger.
func (c stateChoice) noRecord(ctx context.Context, name string) error {
	const hint = "apply the campaign first, or name the state with --state"
	cs, cerr := state.Campaigns(ctx, c.loc)
	ledger, lerr := ledger.SizeOf(ctx, c.loc)
	found := cerr == nil && len(cs) > 0 || lerr == nil && !ledger.Empty() || !c.loc.IsPostgres() && exists(c.loc.File())
	if !found {
		return withHint(fmt.Errorf("no state at %s", c.shown()), hint)
	}
	if err := state.Vacated(ctx, c.loc); errors.Is(err, state.ErrMoved) {
		return err // applying it here would be refused too
	}
	what := "campaign " + name
	if name == "" {
		what = "any campaign"
	}
	others := ""
	if len(cs) > 0 {
		others = fmt.Sprintf(" (it records %s)", words.N(len(cs), "other campaign", "other campaigns"))
	}
	return withHint(fmt.Errorf("the state at %s has no record of %s%s", c.shown(), what, others), hint)
}

// movedError adds what to do to a record marked moved.
func movedError(err error) error {
	var me *state.MovedError
	if errors.As(err, &me) {
		return withHint(err, "use %s instead: as state: in the project file (%s), or else with --state or %s; the old one is kept only to read", me.To, campaign.ProjectFile, envState)
	}
	return err
}

// runURL is the CI run this process belongs to, when the environment says:
// GitHub Actions, GitLab CI, Jenkins. A locked state names it to the next
// apply.
func runURL(env Env) string {
	if s, r, id := env.Getenv("GITHUB_SERVER_URL"), env.Getenv("GITHUB_REPOSITORY"), env.Getenv("GITHUB_RUN_ID"); s != "" && r != "" && id != "" {
		return s + "/" + r + "/actions/runs/" + id
	}
	for _, k := range []string{"CI_JOB_URL", "BUILD_URL"} {
		if v := env.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// earlierStateSigns are the signs of an earlier state that only the
// command line knows of (the state package adds its own, and apply.Start
// a saved plan's): the states of the folders around the campaign that
// record it; a lock file next to the campaign while its state file is
// gone and the state is elsewhere. They count only where the state in
// use has no record of the campaign (its first send there): a project's
// state made by another campaign, or by an opt-out, is no record of this
// one.
func earlierStateSigns(ctx context.Context, c stateChoice, name string) []string {
	if c.records(ctx, name) {
		return nil // not looked for: a rerun in a folder of many states opens none of them
	}
	signs := statesNearby(ctx, c, name)
	if c.source == fromDefault || exists(c.beside) {
		return signs
	}
	for _, lock := range []string{state.LockFile(c.beside, name), c.beside + ".lock"} {
		if exists(lock) {
			signs = append(signs, fmt.Sprintf("%s exists (a state was used next to the campaign)", lock))
		}
	}
	return signs
}

// records says that c's state is a file that records the campaign name.
// (A PostgreSQL state is not asked: the folders are looked in for it
// every time, which costs a few folder reads where no state file is.)
func (c stateChoice) records(ctx context.Context, name string) bool {
	if c.loc.IsPostgres() || !exists(c.loc.File()) {
		return false
	}
	st, err := c.openView(ctx, name)
	if err != nil {
		return false
	}
	defer st.Close()
	return st.Lineage() != ""
}

// earlierSigns are all the signs of an earlier state of the campaign name
// that the state in use does not record: the state package's and the
// command line's. What plan shows first, and what stops pause from making
// a record in a new state (apply would take it for the campaign's state).
func earlierSigns(ctx context.Context, c stateChoice, name string) ([]string, error) {
	var signs []string
	// A state file whose folder is still to be made (the project's, by
	// its first apply) has nothing beside it to look at.
	if _, err := os.Stat(filepath.Dir(c.loc.File())); c.loc.IsPostgres() || err == nil {
		var err error
		if signs, err = state.EarlierSigns(ctx, c.loc, name); err != nil {
			return nil, err
		}
	}
	return append(signs, earlierStateSigns(ctx, c, name)...), nil
}

// statesNearby is, for a campaign, the state files that record it (and the lock files of one
// that is gone) in the current folder and in the folders above the
// campaign's (see foldersAbove), from where the file really is and from
// where it was named (a linked folder): a state named by a bare --state
// or SMSFORM_STATE lands in the folder the command ran in (--state
// c.smsstate, run from a repository's root), and a later command without
// it, or with it from elsewhere, must not start a second ledger. The
// state package looks in the state's own folder.
func statesNearby(ctx context.Context, c stateChoice, name string) []string {
	here, err := filepath.Abs(".")
	if err != nil {
		return []string{fmt.Sprintf("the current folder could not be found (%v), nor the states in it looked at", err)}
	}
	// Folders are told apart by what they really are: one reached by a
	// link and by its own path is looked in once. The folder of a state
	// file still to be made is the state package's to look in.
	seen := map[string]bool{}
	if !c.loc.IsPostgres() && !exists(c.loc.File()) {
		seen[realPathOf(filepath.Dir(c.loc.File()))] = true
	}
	var dirs []string
	add := func(d string) {
		if r := realPathOf(d); d != "" && !seen[r] {
			seen[r] = true
			dirs = append(dirs, d)
		}
	}
	add(here)
	add(c.realDir)
	add(c.givenDir)
	for _, from := range []string{c.realDir, c.givenDir} {
		if from != "" {
			for _, d := range foldersAbove(from, c.home) {
				add(d)
			}
		}
	}
	var signs []string
	for _, dir := range dirs {
		where := "in a folder above the campaign's"
		switch dir {
		case here:
			where = inCurrentFolder
		case c.realDir, c.givenDir:
			where = "in the campaign's folder"
		}
		signs = append(signs, c.statesRecording(ctx, dir, where, name)...)
	}
	return signs
}

// inCurrentFolder is how a sign says where it was seen when that is the
// folder the command runs in; a saved plan says "the folder plan ran in"
// instead (see savedSigns), for an apply that may run elsewhere.
const inCurrentFolder = "in the current folder"

// realPathOf is path absolute, its links resolved when it exists.
func realPathOf(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// foldersAbove are the folders above dir where a state named from there
// may record its campaign: up to the outermost repository's root, or,
// outside any repository, up to the home folder home (when dir is in it).
func foldersAbove(dir, home string) []string {
	if up, ok := campaign.FoldersUpToRepository(dir); ok {
		return up
	}
	if home == "" || !filepath.IsAbs(home) {
		return nil
	}
	for _, h := range []string{filepath.Clean(home), realPathOf(home)} {
		if !strings.HasPrefix(dir, h+string(filepath.Separator)) {
			continue
		}
		var up []string
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			up = append(up, d)
			if d == h || filepath.Dir(d) == d {
				return up
			}
		}
	}
	return nil
}

// statesRecording are, in words, the state files in dir (where, said so)
// that record the campaign name, or could not be read (they may; see
// state.RecordingsIn), and the lock files of the campaign whose state file
// is gone.
func (c stateChoice) statesRecording(ctx context.Context, dir, where, name string) []string {
	var signs []string
	for _, r := range state.RecordingsIn(ctx, dir, name) {
		if !c.inUse(r.File) {
			signs = append(signs, c.stateSign(r, where, name))
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), stateExt+"."+name+".lock") {
			lock := filepath.Join(dir, e.Name())
			if !exists(strings.TrimSuffix(lock, "."+name+".lock")) && state.LockLeft(lock) {
				signs = append(signs, fmt.Sprintf("%s, %s, exists but not its state file (a state of campaign %q was used there)", lock, where, name))
			}
		}
	}
	return signs
}

// inUse says that the file f is the state in use.
func (c stateChoice) inUse(f string) bool {
	return !c.loc.IsPostgres() && realPathOf(f) == realPathOf(c.loc.File())
}

// stateSign is, in words, what the state file r found says of the
// campaign name as a sign of an earlier state.
func (c stateChoice) stateSign(r state.Recording, where, name string) string {
	if r.Err != nil {
		return fmt.Sprintf("%s, %s, could not be read (%v): it may record campaign %q; if it is no smsform state, rename it (not ending in %s) or remove it",
			r.File, where, r.Err, name, stateExt)
	}
	sign := fmt.Sprintf("%s, %s, records campaign %q (lineage %s, serial %d)", r.File, where, name, r.Lineage, r.Serial)
	if other := c.sameNameBeside(strings.TrimSuffix(r.File, stateExt), name); other != "" {
		return sign + fmt.Sprintf(": the state of %s, another campaign file of that name (a copy?); smsform tells campaigns by their names: give each its own", other)
	}
	return sign + ": a state named there by --state or " + envState
}

// sameNameBeside is the campaign file base.yaml (or .yml), when it is not
// this campaign's file and is one of the campaign's name: the state next
// to it is its default. "" otherwise.
func (c stateChoice) sameNameBeside(base, name string) string {
	for _, ext := range []string{".yaml", ".yml"} {
		f := base + ext
		if filepath.Base(f) == campaign.ProjectFile || !exists(f) {
			continue
		}
		if realPathOf(f) == c.realFile {
			return "" // the campaign's own file, through a link
		}
		if campaign.NameOf(f) == name {
			return f
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// earlierStateHint says what to do about an *state.EarlierStateError.
func earlierStateHint(err error, loc state.Location) error {
	where := "restore the file (or point --state at it)"
	if loc.IsPostgres() {
		where = "point --state (or " + envState + ") at the database and schema that hold it"
	}
	return withHint(err, "if the earlier state exists, %s; if it is really lost, check with the provider who was messaged before anyone is messaged again: only then pass --new-state", where)
}

// lockedHint says what to do about a state another apply holds, fitting
// how long this run already waited for it.
func lockedHint(err error, waited time.Duration) error {
	if waited > 0 {
		return withHint(err, "it was still held after waiting %s: let that apply finish, then run this again (or wait longer with a larger --lock-timeout)", words.Duration(waited))
	}
	return withHint(err, "wait for that apply to finish, or pass --lock-timeout 10m to wait for it")
}

// sayLockWait tells, on stderr, that the state is locked and how long
// --lock-timeout lets this command wait for it: a wait is never silent.
func sayLockWait(env Env) func(time.Duration) {
	return func(timeout time.Duration) {
		fmt.Fprintf(env.Stderr, "smsform: the state is locked by another run; waiting up to %s for it (--lock-timeout)\n", words.Duration(timeout))
	}
}
