package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// Opt-outs concern people, not campaigns: they are kept in the project's
// state (the state of smsform.yaml), where every plan of every campaign
// subtracts them and every apply checks them right before each intent.
// Changing them takes no lock, so that a STOP is recorded while applies
// run; the next intent of each honours it.

func newOptOutCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "optout",
		Args: unknownCommand,
		RunE: func(*cobra.Command, []string) error {
			return withHint(fmt.Errorf("%w: smsform optout takes add, import, remove or list", ErrUsage), "run smsform optout add +447400123456 --reason STOP")
		},
	}
	cmd.AddCommand(newOptOutAddCmd(env), newOptOutImportCmd(env), newOptOutRemoveCmd(env), newOptOutListCmd(env))
	return cmd
}

// projectFlagUsage is the --project flag's help, the same for every command
// that names no campaign.
const projectFlagUsage = "the project's folder (default: the nearest folder holding smsform.yaml, from the current one upwards)"

// regionFlagUsage is the --default-region flag's help.
const regionFlagUsage = "region of national numbers (GB: 07700 900123), as a campaign's default_region; default: every number in E.164 (+44…)"

// projectLedger is the state that keeps the opt-outs and the frequency cap
// of the project governing dir (--project, else the current folder): the
// project file's state, which SMSFORM_STATE may name only as the same
// state (with a password, say), as for any campaign of the project.
func projectLedger(env Env, dir string) (stateChoice, error) {
	proj, dir, err := projectAt(dir)
	if err != nil {
		return stateChoice{}, err
	}
	switch {
	case proj == nil:
		return stateChoice{}, withHint(fmt.Errorf("no %s in %s or any folder above it: opt-outs and frequency caps are kept in a project's state", campaign.ProjectFile, dir),
			"create %s with version: 1 and state: (a folder for the state file, or a PostgreSQL database), or pass --project DIR", campaign.ProjectFile)
	case proj.State == "":
		return stateChoice{}, withHint(fmt.Errorf("%s names no state: opt-outs and frequency caps are kept in the project's state", proj.Path),
			"add state: to %s (a folder for the state file, e.g. state: .smsform/, or a PostgreSQL database)", proj.Path)
	}
	// The project file stands for a campaign of its folder: the choice is
	// the project's state, or the same state named by SMSFORM_STATE.
	return chooseState(env, proj.Path, nil)
}

// needsLedger refuses a campaign held to a frequency cap whose state is not
// the project's: a cap counts every campaign's sends, which only the
// project's state holds (a project file without state:, or one whose
// state is overridden outside the project's campaigns).
func needsLedger(c *campaign.Campaign, choice stateChoice) error {
	held := len(plan.CapsOf(c).All) > 0
	// A transactional campaign is not held to its project's cap, but its
	// sends count for the others'.
	counts := c.Project != nil && c.Project.FrequencyCap != nil
	if !held && !counts || choice.shared {
		return nil
	}
	where, what := campaign.ProjectFile, "is held to a frequency cap"
	if c.Project != nil {
		where = c.Project.Path
	}
	if !held {
		what = "counts for the project's frequency cap"
	}
	return withHint(fmt.Errorf("campaign %s %s, but its state %s (%s) is not the project's: a cap counts every campaign's sends, which only the project's state holds", c.Name, what, choice.shown(), choice.from()),
		"add state: to %s (a folder for the state file, e.g. state: .smsform/, or a PostgreSQL database), then smsform state migrate to carry this campaign's record there", where)
}

// lawCapWarning says, when the campaign's rule sets cap how many messages
// a number may get (Florida's three marketing messages a day) but its
// state is not the project's, that the cap is held only within this
// campaign: other campaigns' sends are in other states. "" otherwise. Not
// refused, as a frequency_cap is: the law's cap concerns only the numbers
// of one state, and a campaign need not be part of a project.
func lawCapWarning(c *campaign.Campaign, choice stateChoice) string {
	if plan.CapsOf(c).PerNumberLongest == 0 || choice.shared {
		return ""
	}
	return fmt.Sprintf("the rule sets' caps on a number (%s) count every marketing message the number got, which only a project's state "+
		"records across campaigns; the state of %s is its own, so the caps hold within this campaign only: add state: to %s to hold them across campaigns",
		strings.Join(lawCapRules(c), ", "), c.Name, campaign.ProjectFile)
}

// lawCapRules are the ids of the campaign's rules that cap a number.
func lawCapRules(c *campaign.Campaign) []string {
	var ids []string
	for _, r := range c.Compliance.Rules.All() {
		if r.Check == compliance.CheckCap && r.Concerns(c.Compliance.Kind) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// optOutFlags are the flags every optout command shares.
type optOutFlags struct {
	project string
	region  string
}

func (f *optOutFlags) register(fs *pflag.FlagSet, numbers bool) {
	fs.StringVar(&f.project, "project", "", projectFlagUsage)
	if numbers {
		fs.StringVar(&f.region, "default-region", "", regionFlagUsage)
	}
}

// normalizer reads numbers as a campaign with default_region f.region does.
func (f *optOutFlags) normalizer() (*e164.Normalizer, error) {
	if f.region != "" && !e164.ValidRegion(f.region) {
		return nil, withHint(fmt.Errorf("%w: --default-region %q is not a region", ErrUsage, f.region), "give a two-letter region code, e.g. --default-region GB")
	}
	return e164.NewNormalizer(f.region), nil
}

func newOptOutAddCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "add NUMBER..."}
	var f optOutFlags
	f.register(cmd.Flags(), true)
	reason := cmd.Flags().String("reason", "", "why, for whoever reads the opt-outs (e.g. STOP by SMS)")
	cmd.Args = positional(1, math.MaxInt, "one or more phone numbers")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		proj, nums, err := optOutArguments(env, &f, pos)
		if err != nil {
			return err
		}
		return addOptOuts(cmd.Context(), env, proj, nums, *reason)
	}
	return cmd
}

func newOptOutImportCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "import FILE"}
	var f optOutFlags
	f.register(cmd.Flags(), true)
	fs := cmd.Flags()
	column := fs.String("phone-column", "phone", "a CSV file's column that holds the number (a file that is not .csv holds one number a line)")
	reason := fs.String("reason", "", "why, for whoever reads the opt-outs (default: imported from FILE)")
	skip := fs.Bool("skip-invalid", false, "skip values that are not valid numbers (a provider's export may hold short codes) instead of refusing the file")
	cmd.Args = positional(1, 1, "one file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		proj, nums, err := optOutInput(env, &f)
		if err != nil {
			return err
		}
		src := optOutSource(pos[0], *column, fs.Changed("phone-column"))
		err = src.Read(cmd.Context(), func(e campaign.Entry) error {
			nums.add(e.Raw, fmt.Sprintf("%s:%d", campaign.Plain(e.File), e.Line))
			return nil
		})
		if err != nil {
			return err
		}
		if err := nums.check(pos[0], *skip); err != nil {
			return err
		}
		if *reason == "" {
			*reason = "imported from " + filepath.Base(pos[0])
		}
		return addOptOuts(cmd.Context(), env, proj, nums, *reason)
	}
	return cmd
}

// optOutSource reads an opt-out file as a campaign reads its lists: a CSV
// file (.csv, or any file when --phone-column is given) by its header, any
// other one number a line ("#" lines and blank lines skipped).
func optOutSource(path, column string, columnGiven bool) campaign.Source {
	src := campaign.Source{Kind: campaign.KindText, File: path, Path: path}
	if columnGiven || strings.EqualFold(filepath.Ext(path), ".csv") {
		src.Kind, src.PhoneColumn = campaign.KindCSV, column
	}
	return src
}

func newOptOutRemoveCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "remove NUMBER..."}
	var f optOutFlags
	f.register(cmd.Flags(), true)
	reason := cmd.Flags().String("reason", "", "required: the re-consent, for the record (e.g. \"opted in again on the web form, ticket 4521\")")
	cmd.Args = positional(1, math.MaxInt, "one or more phone numbers")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		if strings.TrimSpace(*reason) == "" {
			return withHint(fmt.Errorf("%w: optout remove needs --reason: taking a number off the opt-outs is a re-consent, kept on record", ErrUsage),
				"smsform optout remove NUMBER --reason \"opted in again on the web form\"")
		}
		proj, nums, err := optOutArguments(env, &f, pos)
		if err != nil {
			return err
		}
		return removeOptOuts(cmd.Context(), env, proj, nums, *reason)
	}
	return cmd
}

func newOptOutListCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "list"}
	var f optOutFlags
	f.register(cmd.Flags(), false)
	fs := cmd.Flags()
	jsonOut := fs.Bool("json", false, "print one JSON document")
	show := fs.Bool("show-numbers", false, "show phone numbers whole (they are masked by default)")
	wide := fs.Bool("wide", false, "show reasons whole instead of fitting the terminal's width")
	cmd.Args = positional(0, 0, "no argument")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		proj, err := projectLedger(env, f.project)
		if err != nil {
			return err
		}
		if err := proj.projectSplit(ctx); err != nil {
			warnf(env, "%v", err)
		}
		if err := state.Vacated(ctx, proj.loc); errors.Is(err, state.ErrMoved) {
			warnf(env, "%v; the opt-outs below are as they were when it moved", err)
		}
		l := report.OptOutList{Project: proj.project.Path, State: proj.shown()}
		walk := func(fn func(ledger.OptOut) error) error {
			_, err := ledger.OptOuts(ctx, proj.loc, fn)
			return err
		}
		out := report.Output{ShowNumbers: *show, Width: tableWidth(env, *wide)}
		if *jsonOut {
			return report.WriteOptOutJSON(env.Stdout, l, walk, out)
		}
		return report.WriteOptOutTable(env.Stdout, l, walk, out)
	}
	return cmd
}

// optOutInput is the project's ledger and the set its numbers go into.
func optOutInput(env Env, f *optOutFlags) (stateChoice, *numberSet, error) {
	proj, err := projectLedger(env, f.project)
	if err != nil {
		return stateChoice{}, nil, err
	}
	// An opt-out recorded in a state the project's earlier ledger was not
	// carried into would make that state look like the project's.
	if err := proj.projectSplit(context.Background()); err != nil {
		return stateChoice{}, nil, withHint(err, "migrate first: nothing was recorded")
	}
	norm, err := f.normalizer()
	if err != nil {
		return stateChoice{}, nil, err
	}
	return proj, &numberSet{norm: norm, seen: e164.NewMap[struct{}](0)}, nil
}

// optOutArguments is optOutInput for numbers given as arguments: every one
// must be a valid number.
func optOutArguments(env Env, f *optOutFlags, args []string) (stateChoice, *numberSet, error) {
	proj, nums, err := optOutInput(env, f)
	if err != nil {
		return stateChoice{}, nil, err
	}
	for i, raw := range args {
		nums.add(raw, fmt.Sprintf("argument %d", i+1))
	}
	if err := nums.check("arguments", false); err != nil {
		return stateChoice{}, nil, err
	}
	return proj, nums, nil
}

// numberSet gathers the numbers a command is given, normalised to E.164 as
// a campaign's lists are, each once, in the order given.
type numberSet struct {
	norm    *e164.Normalizer
	seen    *e164.Map[struct{}]
	phones  []string
	dups    int
	invalid []string // the first few, where and why, the value masked
	bad     int
}

// shownInvalid is how many invalid values an error or a warning names.
const shownInvalid = 5

func (s *numberSet) add(raw, where string) {
	n, err := s.norm.Normalize(raw)
	if err != nil {
		if s.bad++; len(s.invalid) < shownInvalid {
			s.invalid = append(s.invalid, fmt.Sprintf("%s: %s: %v", where, campaign.Quote(e164.MaskInvalid(raw)), err))
		}
		return
	}
	if _, added := s.seen.Ref(n.E164); !added {
		s.dups++
		return
	}
	s.phones = append(s.phones, n.E164)
}

// check refuses invalid numbers (nothing is recorded), or with skip lets
// them be, and refuses a set with no number at all.
func (s *numberSet) check(what string, skip bool) error {
	if s.bad > 0 && !skip {
		hint := "write numbers in E.164 (+447400123456), or give --default-region for national ones"
		if what != "arguments" {
			hint += "; or pass --skip-invalid to record the valid ones"
		}
		return withHint(fmt.Errorf("%s in %s, nothing recorded: %s", words.N(s.bad, "invalid number", "invalid numbers"), what, strings.Join(s.invalid, "; ")), "%s", hint)
	}
	if len(s.phones) == 0 {
		return fmt.Errorf("no valid number in %s: nothing recorded", what)
	}
	return nil
}

// skipped says what check let be: the invalid values and the repeats.
func (s *numberSet) skipped() string {
	var parts []string
	if s.dups > 0 {
		parts = append(parts, words.N(s.dups, "repeat", "repeats")+" counted once")
	}
	if s.bad > 0 {
		parts = append(parts, words.N(s.bad, "invalid value", "invalid values")+" skipped")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// currentOptOuts is the set of numbers opted out now in the state at loc;
// byPerson, only those whose opt-out a person recorded (not a reply).
func currentOptOuts(ctx context.Context, loc state.Location, byPerson bool) (*e164.Map[struct{}], error) {
	m := e164.NewMap[struct{}](0)
	_, err := ledger.OptOuts(ctx, loc, func(o ledger.OptOut) error {
		if !byPerson || o.Source != "reply" {
			m.Ref(o.Phone)
		}
		return nil
	})
	return m, err
}

// addOptOuts records the numbers that a person has not opted out yet, so
// that a provider's export imported every day does not grow the log by its
// size. A number a STOP reply opted out is recorded again, as the person's:
// a later START reply lifts only an opt-out a reply made.
func addOptOuts(ctx context.Context, env Env, proj stateChoice, nums *numberSet, reason string) error {
	now, err := currentOptOuts(ctx, proj.loc, true)
	if err != nil {
		return err
	}
	at, by := env.Clock.Now().UTC(), actor(env)
	var changes []ledger.OptOutChange
	for _, p := range nums.phones {
		if _, ok := now.Get(p); !ok {
			changes = append(changes, ledger.OptOutChange{Phone: p, At: at, By: by, Reason: reason})
		}
	}
	for _, inv := range nums.invalid {
		warnf(env, "skipped invalid value %s", inv)
	}
	already := len(nums.phones) - len(changes)
	if len(changes) == 0 {
		fmt.Fprintf(env.Stdout, "Nothing to record: %s already opted out%s.\n", countedNumbers(already), nums.skipped())
		return nil
	}
	// The first opt-outs of a new project make its state, as its first
	// apply would: a STOP list is imported before the first campaign.
	if err := proj.makeFolder(); err != nil {
		return err
	}
	if _, err := ledger.ChangeOptOuts(ctx, proj.loc, changes); err != nil {
		return writeHint(err, proj.loc)
	}
	also := ""
	if already > 0 {
		also = fmt.Sprintf("; %s already opted out", countedNumbers(already))
	}
	fmt.Fprintf(env.Stdout, "Opted out %s%s%s, by %s in %s.\n", words.N(len(changes), "number", "numbers"), also, nums.skipped(), by, proj.shown())
	fmt.Fprintln(env.Stdout, "Every campaign of the project skips them from now on: plans subtract them, and applies running now or later, of saved plans too, check them right before each batch.")
	return nil
}

// countedNumbers is "1 number was" or "3 numbers were".
func countedNumbers(n int) string {
	return words.N(n, "number was", "numbers were")
}

// removeOptOuts takes numbers off the opt-outs, each a re-consent with its
// reason; a number that is not opted out refuses the whole command, so
// that a typo is not a silent no-op.
func removeOptOuts(ctx context.Context, env Env, proj stateChoice, nums *numberSet, reason string) error {
	now, err := currentOptOuts(ctx, proj.loc, false)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range nums.phones {
		if _, ok := now.Get(p); !ok {
			missing = append(missing, e164.Mask(p))
		}
	}
	if len(missing) > 0 {
		return withHint(fmt.Errorf("not opted out: %s; nothing recorded", strings.Join(missing, ", ")),
			"smsform optout list shows the opt-outs (--show-numbers to see them whole)")
	}
	at, by := env.Clock.Now().UTC(), actor(env)
	changes := make([]ledger.OptOutChange, len(nums.phones))
	for i, p := range nums.phones {
		changes[i] = ledger.OptOutChange{Phone: p, Remove: true, At: at, By: by, Reason: reason}
	}
	if _, err := ledger.ChangeOptOuts(ctx, proj.loc, changes); err != nil {
		return writeHint(err, proj.loc)
	}
	fmt.Fprintf(env.Stdout, "Removed %s from the opt-outs (re-consent, by %s: %s): campaigns of the project may message %s again.\n",
		words.N(len(changes), "number", "numbers"), by, reason, words.Plural(len(changes), "it", "them"))
	return nil
}

// newStatePruneCmd drops old sends from the frequency cap's index of the
// project's state. It never touches a campaign's own records.
func newStatePruneCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "prune"}
	fs := cmd.Flags()
	project := fs.String("project", "", projectFlagUsage)
	olderThan := fs.String("older-than", "", "drop sends older than this from the cap's index: 30d, 720h; at least the longest frequency cap's window")
	cmd.Args = positional(0, 0, "no argument")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		d, err := parseAge(*olderThan)
		if err != nil {
			return err
		}
		proj, err := projectLedger(env, *project)
		if err != nil {
			return err
		}
		longest, from, err := longestCap(proj.project, d)
		if err != nil {
			return err
		}
		if d < longest {
			return withHint(fmt.Errorf("--older-than %s is shorter than the frequency cap's window of %s (%s): pruning would let a number be messaged past its cap", *olderThan, words.Duration(longest), from),
				"give --older-than %s or more", words.Duration(longest))
		}
		sends, numbers, err := ledger.PruneCaps(cmd.Context(), proj.loc, d, env.Clock.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "Pruned %s older than %s from the frequency cap's index of %s (%s left with none); the campaigns' records are untouched.\n",
			words.N(sends, "send", "sends"), *olderThan, proj.shown(), words.N(numbers, "number", "numbers"))
		return nil
	}
	return cmd
}

// parseAge reads --older-than: a Go duration (720h) or a number of days (30d).
func parseAge(s string) (time.Duration, error) {
	bad := withHint(fmt.Errorf("%w: --older-than %q is not a duration", ErrUsage, s), "give days (30d) or hours (720h)")
	if s == "" {
		return 0, withHint(fmt.Errorf("%w: state prune needs --older-than", ErrUsage), "smsform state prune --older-than 30d")
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}

// longestCap is the longest window of the project's frequency cap and of
// its campaigns' own (stricter caps may look further back), and where it
// is set. A campaign file that does not load could be fixed and applied
// later with a longer window: it is refused, unless olderThan is past the
// longest window any cap may have.
func longestCap(p *campaign.Project, olderThan time.Duration) (time.Duration, string, error) {
	var longest time.Duration
	from := "no frequency cap is set"
	if c := p.FrequencyCap; c != nil {
		longest, from = c.Per, p.Path
	}
	if olderThan >= campaign.MaxCapWindow {
		return longest, from, nil
	}
	files, err := p.CampaignFiles()
	if err != nil {
		return 0, "", withHint(fmt.Errorf("state prune: %w: the campaigns' own frequency caps cannot be checked", err),
			"fix the project's campaigns: globs, or give --older-than %s (no cap looks further back)", words.Duration(campaign.MaxCapWindow))
	}
	var cs []*campaign.Campaign
	for _, f := range files {
		c, err := campaign.Load(f)
		if err != nil {
			return 0, "", withHint(fmt.Errorf("state prune: %s does not load, so its frequency_cap cannot be checked: %w", f, err),
				"fix the campaign, or give --older-than %s (no cap looks further back)", words.Duration(campaign.MaxCapWindow))
		}
		cs = append(cs, c)
	}
	stray, err := strayCampaigns(p, files)
	if err != nil {
		return 0, "", withHint(fmt.Errorf("state prune: %w", err),
			"give --older-than %s (no cap looks further back), or prune from a project whose folder holds less", words.Duration(campaign.MaxCapWindow))
	}
	cs = append(cs, stray...)
	for _, c := range cs {
		f := campaign.Plain(c.Path)
		if c.FrequencyCap != nil && c.FrequencyCap.Per > longest {
			longest, from = c.FrequencyCap.Per, f
		}
		// The caps its rule sets put on a number (Florida's three marketing
		// messages a day) read the same index.
		if w := plan.CapsOf(c).PerNumberLongest; w > longest {
			longest, from = w, f+": its rule sets' caps on a number"
		}
	}
	return longest, from, nil
}

// projectAt is the project governing dir (a folder or a project file; ""
// is the current folder), nil when none does, and dir made absolute as
// the folder the search started from.
func projectAt(dir string) (*campaign.Project, string, error) {
	if dir == "" {
		dir = "."
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if filepath.Base(dir) == campaign.ProjectFile {
		dir = filepath.Dir(dir)
	}
	proj, err := campaign.ProjectFor(dir)
	return proj, dir, err
}

// strayCampaigns are the campaigns of project p that its campaigns: globs
// do not find (files, those they do): every .yaml or .yml file in its
// folders that loads as a campaign of p, hidden folders too (a campaign
// in .drafts/ applies with the project's state all the same); only .git,
// which holds no campaign one can apply, is passed by. Such a file still
// applies with the project's state, so its own caps count for prune. A
// file that does not load is not one: it could not apply. A folder of more
// than maxStrayWalk entries (a project at a monorepo's root, node_modules)
// is not read to its end: an error, since pruning with a campaign missed
// would drop sends its cap still counts.
func strayCampaigns(p *campaign.Project, files []string) ([]*campaign.Campaign, error) {
	known := map[string]bool{}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			known[abs] = true
		}
	}
	var out []*campaign.Campaign
	root, seen := filepath.Dir(p.Path), 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch seen++; {
		case seen > maxStrayWalk:
			return fmt.Errorf("the project's folder %s holds more than %d files and folders: not every campaign file in it could be read for its frequency cap", root, maxStrayWalk)
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir() || known[path]:
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" || filepath.Base(path) == campaign.ProjectFile {
			return nil
		}
		if c, err := campaign.Load(path); err == nil && c.Project != nil && c.Project.Path == p.Path {
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// maxStrayWalk bounds what strayCampaigns reads of a project's folder.
var maxStrayWalk = 100_000 // a var: a test lowers it
