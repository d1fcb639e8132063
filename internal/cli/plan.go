package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newValidateCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "validate [CAMPAIGN.yaml|DIR]..."}
	since := cmd.Flags().String("changed-since", "", "only the campaigns whose file, or a file they read, differs from this git revision")
	cmd.Args = positional(0, math.MaxInt, "campaign files or folders (none: the project's campaigns)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		files, many, err := selectCampaigns(cmd.Context(), env, pos, *since)
		if err != nil {
			return err
		}
		return validateAll(cmd.Context(), env, files, many)
	}
	return cmd
}

// validate checks one campaign as plan would, prints its warnings on
// stderr and, when it is valid, one line on stdout that says so: silence
// is not an answer a person can tell from a command that did nothing.
func validate(ctx context.Context, env Env, path string) error {
	c, err := campaign.Load(path)
	if err != nil {
		return err
	}
	if c.Project != nil && c.Project.State != "" {
		if _, err := projectState(c.Project); err != nil {
			return err
		}
	}
	p, err := plan.Compute(ctx, c, nil)
	if p == nil {
		return err
	}
	// As plan's table does: the first ones, then a count, so that a
	// list of a million bad rows is not a million lines.
	const shown = 20
	for i, inv := range p.Invalid {
		if i == shown {
			n := len(p.Invalid) - shown
			warnf(env, "... and %s more invalid %s (smsform plan --json lists them all)", words.Count(n), words.Plural(n, "number", "numbers"))
			break
		}
		warnf(env, "%s: invalid number %s: %s", campaign.Plain(inv.Source), campaign.Quote(e164.MaskInvalid(inv.Value)), inv.Reason)
	}
	for _, w := range p.Warnings {
		warnf(env, "%s", w)
	}
	if err != nil {
		return err
	}
	// Every invalid number is a warning, even past the ones named.
	warnings := p.Summary.Invalid + len(p.Warnings)
	fmt.Fprintf(env.Stdout, "%s: %s %s, 0 errors, %s %s\n", campaign.Plain(path),
		words.Count(p.Summary.ToSend), words.Plural(p.Summary.ToSend, "recipient", "recipients"),
		words.Count(warnings), words.Plural(warnings, "warning", "warnings"))
	return nil
}

// outputFlags are the flags shared by plan and show.
type outputFlags struct {
	format      string
	json        bool
	showNumbers bool
	wide        bool
}

func (o *outputFlags) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&o.format, "format", "table", "output format: table, markdown or json")
	fs.BoolVar(&o.json, "json", false, "same as --format json")
	fs.BoolVar(&o.showNumbers, "show-numbers", false, "show phone numbers whole (they are masked by default)")
	fs.BoolVar(&o.wide, "wide", false, "table: show message bodies whole instead of fitting the terminal's width")
}

// markdown says whether the output is the markdown comment.
func (o *outputFlags) markdown() bool {
	return !o.json && (o.format == "markdown" || o.format == "md")
}

func (o *outputFlags) write(env Env, w io.Writer, p *plan.Plan) error {
	return writeWith(o, env, w, report.WriteTable, report.WriteMarkdown, report.WriteJSON, p)
}

// writeWith writes v to w with the writer of the format asked for: table,
// markdown or JSON (for one plan, or for several campaigns' plans).
func writeWith[T any](o *outputFlags, env Env, w io.Writer, table, markdown, json func(io.Writer, T, report.Output) error, v T) error {
	format := o.format
	if o.json {
		format = "json"
	}
	out := report.Output{ShowNumbers: o.showNumbers, Width: tableWidth(env, o.wide), Plain: !env.IsTerminal(w), Colour: colour(env, w)}
	switch format {
	case "table":
		return table(w, v, out)
	case "markdown", "md":
		return markdown(w, v, out)
	case "json":
		return json(w, v, out)
	}
	return fmt.Errorf("%w: unknown format %q (table, markdown or json)", ErrUsage, format)
}

// planFlags are plan's flags, as parsed (the output's in outputFlags).
type planFlags struct {
	out      outputFlags
	state    *pflag.Flag // read through chooseState: whether it was given counts
	outFile  string
	detailed bool
	at       string
	// changedSince keeps the campaigns that differ from a git revision.
	changedSince string
}

func newPlanCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "plan [CAMPAIGN.yaml|DIR]..."}
	fs := cmd.Flags()
	var f planFlags
	f.out.register(fs)
	fs.String("state", "", stateFlagUsage)
	f.state = fs.Lookup("state")
	fs.StringVar(&f.outFile, "out", "", "save the plan to this file, for smsform apply PLANFILE (a new file, or an earlier plan file); with several campaigns, a folder: one NAME.plan each")
	fs.BoolVar(&f.detailed, "detailed-exitcode", false, "exit 0 when there is nothing to send, 2 when there is, 1 on error")
	fs.StringVar(&f.at, "at", "", "show when each batch may go as at this moment (RFC 3339), not now")
	fs.StringVar(&f.changedSince, "changed-since", "", "only the campaigns whose file, or a file they read, differs from this git revision")
	cmd.Args = positional(0, math.MaxInt, "campaign files or folders (none: the project's campaigns)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		files, many, err := selectCampaigns(cmd.Context(), env, pos, f.changedSince)
		if err != nil {
			return err
		}
		if many || outIsDir(f.outFile) {
			return runPlans(cmd.Context(), env, f, files)
		}
		return runPlan(cmd.Context(), env, f, files[0])
	}
	return cmd
}

// runPlan is smsform plan CAMPAIGN: compute, save (--out), show, and say
// what to do next.
func runPlan(ctx context.Context, env Env, f planFlags, campaignPath string) error {
	at, err := planAt(env, f)
	if err != nil {
		return err
	}
	if f.outFile != "" {
		// Before the work: --out writes a new file or over a plan file,
		// nothing else (a state, the campaign, a list).
		if err := planfile.CheckOverwrite(f.outFile); err != nil {
			if !errors.Is(err, planfile.ErrNotOverwritable) {
				return err // a missing folder, whose error says what to do
			}
			return withHint(err, "give --out a new file name (e.g. %s.plan), or the path of an earlier plan file to replace", strings.TrimSuffix(filepath.Base(campaignPath), filepath.Ext(campaignPath)))
		}
	}
	r, err := computePlan(ctx, env, f, campaignPath, at)
	defer r.close()
	p := r.plan
	if shown, ok := invalidNumbers(err); ok {
		if werr := f.out.write(env, env.Stdout, p); werr != nil {
			return werr
		}
		return shown
	}
	// A plan over budget is shown (and saved, for show --recipient) so that
	// the reviewer sees why it fails; apply refuses it.
	over, err := overBudget(err, campaignPath)
	if err != nil && !over {
		return err
	}
	if f.outFile != "" {
		if _, err := savePlan(ctx, env, f.outFile, r); err != nil {
			return err
		}
	}
	if err := f.out.write(env, env.Stdout, p); err != nil {
		return err
	}
	if over {
		return err
	}
	stateFlag := ""
	if f.state.Changed {
		stateFlag = f.state.Value.String()
	}
	sayPlanNext(env, p, campaignPath, stateFlag, f.outFile)
	if f.detailed && p.Summary.ToSend > 0 {
		return ErrPending
	}
	return nil
}

// planAt is the moment plan judges send windows by: --at, else now.
func planAt(env Env, f planFlags) (time.Time, error) {
	if f.at != "" {
		return parseAt(f.at)
	}
	return env.Clock.Now(), nil
}

// planned is one campaign's plan and what it was made from.
type planned struct {
	campaign *campaign.Campaign
	choice   stateChoice
	st       *state.State
	plan     *plan.Plan // nil when it could not be made
}

func (r planned) close() {
	if r.st != nil {
		r.st.Close()
	}
}

// computePlan loads the campaign at campaignPath and plans it against its
// state, as at the moment at. The plan comes back with the error when it
// can be shown (invalid numbers, over budget).
func computePlan(ctx context.Context, env Env, f planFlags, campaignPath string, at time.Time) (planned, error) {
	var r planned
	c, err := campaign.Load(campaignPath)
	if err != nil {
		return r, err
	}
	r.campaign = c
	if f.at != "" && !c.Window.Active() && !c.Compliance.SetsHours() {
		warnf(env, "%s has no send_window, not_before, not_after or rules that set hours: --at changes nothing", campaignPath)
	}
	if r.choice, err = chooseState(env, campaignPath, f.state); err != nil {
		return r, err
	}
	if err := needsLedger(c, r.choice); err != nil {
		return r, err
	}
	if r.st, err = r.choice.openView(ctx, c.Name); err != nil {
		return r, err
	}
	if m := r.st.Moved(); m != nil {
		return r, movedError(&state.MovedError{Loc: r.choice.shown(), Campaign: c.Name, Moved: *m})
	}
	if err := r.st.Vacated(ctx); err != nil {
		return r, err // not recorded here, nor anything more
	}
	p, err := plan.ComputeWith(ctx, c, r.st, plan.Options{Now: at, Ledger: ledger.ViewOf(r.st)})
	if p != nil {
		if serr := p.ScheduleAt(at); serr != nil {
			return r, serr
		}
		p.Refusal = r.refusal(ctx, campaignPath)
		if p.Refusal != nil && p.Refusal.Kind == plan.RefusedEarlierState {
			p.State.EarlierState = savedSigns(p.Refusal.Signs) // saved: apply refuses it from any folder
		}
		if w := lawCapWarning(c, r.choice); w != "" {
			p.Warnings = append(p.Warnings, w)
		}
		if derr := r.delivery(ctx, p, campaignPath); derr != nil {
			return r, derr
		}
	}
	r.plan = p
	return r, err
}

// delivery gives p what the provider reported so far of the campaign
// (nil when the state holds no report of it) and warns of anomalies, in
// every format.
func (r planned) delivery(ctx context.Context, p *plan.Plan, campaignPath string) error {
	if p.State.Serial == 0 {
		return nil // nothing sent: nothing reported
	}
	// The summary walks every recipient: not for a campaign the provider
	// reported nothing of (a resumed plan of 1,000,000 took half as long
	// again for it).
	if reported, err := r.st.Reported(ctx); err != nil || !reported {
		return err
	}
	sum, err := r.st.DeliverySummary(ctx)
	if err != nil || !sum.Reported {
		return err
	}
	p.Delivery = &sum
	if w := report.AnomalyWarning(sum.Anomalies, campaignPath); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	return nil
}

// refusal is why apply would refuse r's plan as the states stand, first
// what is most fundamental (see plan.Refusal); nil when it would not.
func (r planned) refusal(ctx context.Context, campaignPath string) *plan.Refusal {
	name := r.campaign.Name
	var unchecked *ledger.UncheckedError
	var split *splitLedgerError
	switch err := r.choice.splitLedger(ctx, campaignPath, name); {
	case errors.As(err, &split):
		return &plan.Refusal{Kind: plan.RefusedSplitLedger, Reason: split.reason(), Fix: split.fix()}
	case errors.As(err, &unchecked):
		return &plan.Refusal{Kind: plan.RefusedUnchecked, Reason: err.Error(),
			Fix: "make that state reachable and plan again, or, if the campaign was never sent from it, apply with --first-send"}
	case err != nil:
		return &plan.Refusal{Kind: plan.RefusedUnchecked, Reason: "could not check for a second ledger: " + err.Error(),
			Fix: "fix what stops the check and plan again"}
	}
	if r.st.Lineage() == "" || r.st.Serial() == 0 {
		signs, err := earlierSigns(ctx, r.choice, name)
		if err != nil {
			return &plan.Refusal{Kind: plan.RefusedUnchecked, Reason: "could not look for signs of an earlier state: " + err.Error(),
				Fix: "fix what stops the check and plan again"}
		}
		if len(signs) > 0 {
			e := &state.EarlierStateError{Loc: r.choice.shown(), Campaign: name, Signs: signs}
			return &plan.Refusal{Kind: plan.RefusedEarlierState, Reason: e.Error(), Signs: signs,
				Fix: "if the earlier state exists, point --state (or the project file's state:) at it; if it is really lost, check with the provider who was messaged, then apply with --new-state"}
		}
	}
	if pz := r.st.Paused(); pz != nil {
		return &plan.Refusal{Kind: plan.RefusedPaused, Reason: "the campaign is " + report.PauseWords(pz),
			Fix: "smsform resume " + shellWord(campaignPath)}
	}
	return nil
}

// savedSigns are signs of an earlier state as a saved plan keeps them, for
// an apply that may run in another folder.
func savedSigns(signs []string) []string {
	out := make([]string, len(signs))
	for i, s := range signs {
		out[i] = strings.ReplaceAll(s, inCurrentFolder, "in the folder plan ran in")
	}
	return out
}

// overBudget reports whether err is a plan over its budget, which is shown
// (and saved) with the error, and adds what to do to it.
func overBudget(err error, campaignPath string) (bool, error) {
	var over *plan.BudgetError
	if errors.As(err, &over) {
		return true, withHint(err, "raise the budget in %s, or send less: fewer recipients, a shorter body, GSM-7 characters only", campaignPath)
	}
	return false, err
}

// savePlan saves r's plan to outFile, with what apply needs to find and
// check its campaign and state, and says what it saved: the plan's id and
// the file's SHA-256, as a folder's manifest lists them.
func savePlan(ctx context.Context, env Env, outFile string, r planned) (planfile.ManifestPlan, error) {
	loc := r.choice.loc
	// A password in the state's URL is never saved. Whether apply will
	// have it again matters only when it came from --state: SMSFORM_STATE
	// is in apply's environment as it is in plan's (the CI job's secret),
	// a project file holds none, and libpq's PGPASSWORD or password file
	// supply it without either.
	if r.choice.source == fromFlag && loc.HasPassword() && !libpqPassword(env) {
		warnf(env, "the plan records the state URL without its password: apply %s needs it from --state, %s, PGPASSWORD or ~/.pgpass", outFile, envState)
	}
	saved, err := planfile.NewSaved(ctx, r.plan, Version, r.campaign.Path, loc.WithoutPassword(), !loc.IsPostgres(), r.campaign.Files())
	if err != nil {
		return planfile.ManifestPlan{}, err
	}
	sum, err := planfile.SaveSum(outFile, saved)
	if err != nil {
		if errors.Is(err, planfile.ErrNotOverwritable) {
			return planfile.ManifestPlan{}, withHint(err, "give --out a new file name, or the path of an earlier plan file to replace")
		}
		return planfile.ManifestPlan{}, err
	}
	return planfile.ManifestPlan{File: filepath.Base(outFile), Campaign: r.campaign.Name, ID: saved.ID, SHA256: sum}, nil
}

// libpqPassword reports whether libpq's own sources of a password are set
// here: PGPASSWORD, or a password file ($PGPASSFILE, else ~/.pgpass).
func libpqPassword(env Env) bool {
	if env.Getenv("PGPASSWORD") != "" {
		return true
	}
	file := env.Getenv("PGPASSFILE")
	if file == "" {
		home := env.Getenv("HOME")
		if home == "" {
			return false
		}
		file = filepath.Join(home, ".pgpass")
	}
	_, err := os.Stat(file)
	return err == nil
}

// invalidNumbers is the error of a plan refused for its invalid numbers
// (strict, or none valid) or for messages that break rules, which plan
// shows before the error so that the rows and each rule's verdict can be
// found; ok is false for any other error.
func invalidNumbers(err error) (shown error, ok bool) {
	var strict *plan.StrictError
	switch {
	case errors.As(err, &strict):
		return withHint(err, "fix or remove the invalid numbers, or set strict: false to skip them"), true
	case errors.As(err, new(*plan.NoValidError)):
		return err, true // its hint says how to write the numbers
	case errors.As(err, new(*plan.ComplianceError)):
		return err, true // each row's error has its rule's fix for a hint
	}
	return nil, false
}

// sayPlanNext says, outside automation, what to do with the plan shown.
func sayPlanNext(env Env, p *plan.Plan, campaignPath, stateFlag, outFile string) {
	switch {
	case inAutomation(env):
	case p.Refusal != nil:
		fmt.Fprintf(env.Stderr, "hint: apply will refuse it until this is settled: %s\n", p.Refusal.Fix)
	case outFile != "":
		fmt.Fprintf(env.Stderr, "smsform: plan saved to %s (it holds phone numbers: keep it private)\nhint: apply exactly this plan with: smsform apply %s\n", outFile, outFile)
	case p.Summary.ToSend > 0:
		stateArg := ""
		if stateFlag != "" {
			stateArg = " --state " + state.Redact(stateFlag)
		}
		fmt.Fprintf(env.Stderr, "hint: to send it, run smsform apply %s%s (or save it for review with --out PLANFILE, then smsform apply PLANFILE)\n", campaignPath, stateArg)
	}
}

func newShowCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "show PLANFILE"}
	fs := cmd.Flags()
	var out outputFlags
	out.register(fs)
	recipient := fs.String("recipient", "", "print exactly what this number would be sent (+44…): body, encoding, segments")
	cmd.Args = positional(1, 1, "one plan file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		// The table, JSON and one recipient walk the batches as a stream
		// from the file, as apply does, so that a plan of millions is
		// never in memory; the markdown comment, cut from its middle,
		// needs them at hand.
		open := planfile.Open
		if out.markdown() {
			open = planfile.Load
		}
		saved, err := open(cmd.Context(), pos[0])
		if err != nil {
			if cmd.Context().Err() != nil {
				return err
			}
			if fi, serr := os.Stat(pos[0]); serr == nil && !fi.Mode().IsRegular() {
				// A folder or a device (/dev/null): no plan is written there.
				return withHint(err, "give show the path of a plan file saved with smsform plan CAMPAIGN.yaml --out NAME.plan")
			}
			if ext := strings.ToLower(filepath.Ext(pos[0])); ext == ".yaml" || ext == ".yml" {
				// A campaign file, most likely: never suggest writing a plan over it.
				return withHint(err, "show reads a saved plan; for a campaign file, run smsform plan %s", pos[0])
			}
			return withHint(err, "make a new one with smsform plan CAMPAIGN.yaml --out %s", pos[0])
		}
		defer saved.Close()
		if *recipient != "" {
			return showRecipient(env, saved.Plan, pos[0], *recipient, report.Output{ShowNumbers: out.showNumbers})
		}
		// When the batches may go is told as of now: what matters is when
		// the saved plan is applied, not when it was made.
		if err := saved.Plan.ScheduleAt(env.Clock.Now()); err != nil {
			return err
		}
		return out.write(env, env.Stdout, saved.Plan)
	}
	return cmd
}

// errFound stops a walk of the batches at the one sought.
var errFound = errors.New("found")

// showRecipient prints the one message a saved plan would send to number,
// exactly as it would go: the body, its encoding and segments.
func showRecipient(env Env, p *plan.Plan, planFile, number string, out report.Output) error {
	n, err := e164.NewNormalizer("").Normalize(number)
	if err != nil {
		return withHint(fmt.Errorf("%w: --recipient %q is not a valid number: %v", ErrUsage, number, err),
			"write it in E.164, with + and the country code, e.g. --recipient +447400123459")
	}
	var found *plan.Batch
	err = p.EachBatch(func(_ int, b plan.Batch) error {
		if slices.Contains(b.Recipients, n.E164) {
			found = &b
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return err
	}
	if found != nil {
		return report.WriteMessage(env.Stdout, n.E164, *found, out)
	}
	return withHint(fmt.Errorf("%s is not to be sent by %s", e164.Mask(n.E164), planFile),
		"it may be invalid, excluded, a duplicate or already sent: smsform show %s lists what the plan holds", planFile)
}

// tableWidth is the width tables fit: the terminal's, or $COLUMNS, or 80
// when neither is known; 0 (no limit) with --wide.
func tableWidth(env Env, wide bool) int {
	if wide {
		return 0
	}
	if env.Width != nil {
		if w := env.Width(); w > 0 {
			return w
		}
	}
	if c, err := strconv.Atoi(env.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 80
}
