package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// applyFlags are apply's flags, as parsed.
type applyFlags struct {
	state          *pflag.Flag // read through chooseState: whether it was given counts
	newState       bool
	firstSend      bool
	autoApprove    bool
	json           bool
	lockTimeout    time.Duration
	maxErrors      int
	maxSilent      int
	insecure       bool
	requestTimeout time.Duration
	showNumbers    bool
	wide           bool
	wait           bool
	limit          string
}

func newApplyCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "apply CAMPAIGN.yaml|PLANFILE|DIR"}
	fs := cmd.Flags()
	var f applyFlags
	fs.String("state", "", stateFlagUsage)
	f.state = fs.Lookup("state")
	fs.BoolVar(&f.newState, "new-state", false, "start a new state even though there are signs of an earlier one (everyone may be messaged again: decide first)")
	fs.BoolVar(&f.firstSend, "first-send", false, "go on when an enclosing project's state that could not be read may record the campaign: you know it was never sent from there")
	fs.BoolVar(&f.autoApprove, "auto-approve", false, "apply without asking (needed without a terminal, in automation and with --json)")
	fs.BoolVar(&f.json, "json", false, "print one JSON event per line instead of the plan and progress (with a saved plan or --auto-approve)")
	fs.DurationVar(&f.lockTimeout, "lock-timeout", 0, "wait this long for another apply to release the state (default: fail at once)")
	fs.IntVar(&f.maxErrors, "max-errors", 10, "stop after this many failed or in-doubt batches")
	fs.IntVar(&f.maxSilent, "max-silent", apply.DefaultMaxSilent, "stop after this many requests in a row get no answer from the provider (their batches are in doubt)")
	fs.BoolVar(&f.insecure, "insecure-http", false, "allow a plain-http base URL that is not loopback")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 30*time.Second, "give up waiting for one API answer after this long (the batch is then in doubt)")
	fs.BoolVar(&f.showNumbers, "show-numbers", false, "show phone numbers whole (they are masked by default)")
	fs.BoolVar(&f.wide, "wide", false, "show message bodies whole in the plan's table instead of fitting the terminal's width")
	fs.BoolVar(&f.wait, "wait", false, "while send windows are closed, wait for them to open (until everything is sent or not_after passes) rather than stop with exit 5")
	fs.StringVar(&f.limit, "limit", "", "send only the first batches, whole, while their recipients stay within N, or P% of what is left to send (a canary); the next apply carries on")
	cmd.Args = positional(1, 1, "one campaign file, saved plan or folder of saved plans")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		if isDir(pos[0]) {
			return runApplyDir(cmd.Context(), env, f, pos[0])
		}
		return runApply(cmd.Context(), env, f, pos[0])
	}
	return cmd
}

// runApply is smsform apply TARGET: start (every check), show and confirm
// a campaign's plan, send.
func runApply(ctx context.Context, env Env, f applyFlags, target string) error {
	if _, err := parseLimit(f.limit); err != nil {
		return err
	}
	saved, campaignPath, err := applyTarget(ctx, target)
	if err != nil {
		return err
	}
	if saved != nil {
		defer saved.Close()
	}
	choice, err := chooseState(env, campaignPath, f.state)
	if err != nil {
		return err
	}
	savedState := saved != nil && choice.source == fromDefault && saved.StatePath != ""
	if savedState {
		if choice.loc, err = state.ParseLocation(saved.StatePath); err != nil {
			return fmt.Errorf("the state %s records: %w", target, err)
		}
	}
	sp := choice.loc
	if err := choice.makeFolder(); err != nil {
		return err
	}
	next := nextStep{env: env, saved: saved, planFile: target, campaign: campaignPath, state: choice.loc,
		implicit: choice.source != fromFlag, savedState: savedState}
	if saved == nil && !f.autoApprove {
		if err := canConfirm(env, f.json, next); err != nil {
			return err
		}
	}
	c, err := campaign.Load(campaignPath)
	if err != nil {
		return next.loadError(err)
	}
	if err := needsLedger(c, choice); err != nil {
		return err
	}
	if w := lawCapWarning(c, choice); w != "" {
		warnf(env, "%s", w)
	}
	client, err := connectionLater(c, env, f.insecure, f.requestTimeout)
	if err != nil {
		return err
	}
	next.base, next.baseFrom, next.hours = client.Client.BaseURL, baseURLSource(c, env), client.Hours
	if err := checkOneLedger(ctx, env, choice, campaignPath, c.Name, f.firstSend); err != nil {
		return err
	}
	// The saved plan's own sign of an earlier state (the lineage it was
	// made against) is apply.Start's to give: it is known once the file
	// is read.
	pending, err := apply.Start(ctx, apply.Request{Campaign: c, Saved: saved, PlanFile: target, Client: client, State: sp,
		StateOptions: state.Options{LockTimeout: f.lockTimeout, LockWait: sayLockWait(env), RunURL: runURL(env), NewState: f.newState,
			Shared: choice.shared, Signs: earlierStateSigns(ctx, choice, c.Name)},
		Clock: env.Clock, Events: newProgress(env, f.json, 0).Event, Warn: func(err error) { warnf(env, "%v", err) }})
	if err != nil {
		return next.startError(err, f.lockTimeout, sp)
	}
	defer pending.Close()
	p := pending.Plan
	if n, err := pending.Anomalies(ctx); err != nil {
		return err
	} else if w := report.AnomalyWarning(n, campaignPath); w != "" {
		warnf(env, "%s", w)
	}
	out := report.Output{ShowNumbers: f.showNumbers, Width: tableWidth(env, f.wide), Plain: !env.IsTerminal(env.Stdout), Colour: colour(env, env.Stdout)}
	if saved == nil {
		if err := showAndConfirm(ctx, env, f, p, out); err != nil {
			return err
		}
	}
	if p.Summary.ToSend == 0 {
		owed := pending.Owed()
		if f.json {
			newProgress(env, true, 0).NothingToSend(owed)
		} else {
			fmt.Fprintln(env.Stdout, "Nothing to send.")
		}
		if owed.Any() {
			return next.runError(&apply.IncompleteError{Owed: owed})
		}
		return nil
	}
	return sendPending(ctx, env, f, pending, next, out, c.Concurrency)
}

// showAndConfirm shows a campaign's plan (not with --json) and, unless
// --auto-approve, asks for "yes".
func showAndConfirm(ctx context.Context, env Env, f applyFlags, p *plan.Plan, out report.Output) error {
	if !f.json {
		if err := report.WriteTable(env.Stdout, p, out); err != nil {
			return err
		}
	}
	if p.Summary.ToSend > 0 && !f.autoApprove {
		noteNothingNow(env, p, f.wait)
		return confirm(ctx, env, report.PromptSummary(p))
	}
	return nil
}

// sendPending sends what passed every check, with progress and the result.
func sendPending(ctx context.Context, env Env, f applyFlags, pending *apply.Pending, next nextStep, out report.Output, concurrency int) error {
	limit, _ := parseLimit(f.limit) // checked before anything
	n := limit.of(pending.Plan.Summary.ToSend)
	prog := applyProgress(env, pending.Plan, f.json, f.wait, f.showNumbers, n)
	env.Interrupt.set(fmt.Sprintf("up to %s in flight when it quit are in doubt: see them with smsform state list %s%s, check with the provider, then smsform state resolve %s%s --in-doubt --as sent|unsent",
		words.N(concurrency, "batch", "batches"), next.campaign, next.stateArg(), next.campaign, next.stateArg()))
	defer env.Interrupt.set("")
	res, err := pending.Send(ctx, apply.Options{MaxErrors: f.maxErrors, MaxSilent: f.maxSilent, Events: prog.Event, Wait: f.wait,
		Warn: func(err error) { warnf(env, "%v", err) }, Limit: n})
	prog.Done()
	next.recorded = pending.Recorded()
	if !f.json {
		if werr := report.WriteResult(env.Stdout, res, err == nil, out); werr != nil {
			return errors.Join(werr, err)
		}
	}
	if next.limitStopped(res, err, f.json) {
		return nil
	}
	return next.runError(err)
}

// nextStep words the hints of an apply that stopped: where to look, and
// how to carry on.
type nextStep struct {
	env      Env
	saved    *planfile.Saved // nil when applying a campaign file
	planFile string
	campaign string
	state    state.Location
	implicit bool // the state was not named by --state: the next commands find it by themselves
	// savedState: the state is the one the saved plan records (nothing
	// else names one), a URL without its password.
	savedState bool
	recorded   bool   // the run changed the state (a saved plan then goes on from there)
	base       string // the API's base URL, and where it came from
	baseFrom   string
	hours      int // valid_hour asked of the token endpoint
}

// stateArg is the --state flag the commands need, if any.
func (n nextStep) stateArg() string {
	if n.implicit {
		return ""
	}
	return " --state " + n.state.String()
}

// newPlan is the command that makes a new plan of the campaign.
func (n nextStep) newPlan() string {
	return fmt.Sprintf("smsform plan %s%s --out PLANFILE", n.campaign, n.stateArg())
}

// carryOn says how to send what the run did not send.
func (n nextStep) carryOn() string {
	switch {
	case n.saved == nil:
		return "run apply again: it sends only what was not sent, never anyone twice"
	case !n.recorded:
		return fmt.Sprintf("apply the plan again (smsform apply %s): nothing was recorded, so it is not used up", n.planFile)
	}
	return fmt.Sprintf("apply the plan again (smsform apply %s): it sends only the batches it has not attempted yet, as long as nothing else changes the campaign's state meanwhile (else make a new plan: %s)",
		n.planFile, n.newPlan())
}

// checkOneLedger refuses an apply whose campaign keeps part of its ledger
// in another state, and one whose enclosing project's state could not be
// read unless firstSend says the campaign was never sent from there.
func checkOneLedger(ctx context.Context, env Env, choice stateChoice, campaignPath, name string, firstSend bool) error {
	var unchecked *ledger.UncheckedError
	switch err := choice.splitLedger(ctx, campaignPath, name); {
	case errors.As(err, &unchecked) && firstSend:
		warnf(env, "%v; going on, as --first-send says", err)
	case errors.As(err, &unchecked):
		return withHint(err, "nothing was sent or recorded: make that state reachable and apply again, or, if you know the campaign was never sent from it, apply with --first-send")
	case err != nil:
		return withHint(err, "nothing was sent or recorded: one campaign, one ledger")
	}
	return nil
}

// tokenRefused is the error for a token that could not be had before the
// run, when nothing was sent or recorded.
func (n nextStep) tokenRefused(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, api.ErrNoCredentials):
		return noCredentials(n.base)
	}
	again := "nothing was sent or recorded; run apply again once fixed"
	if n.saved != nil {
		again = fmt.Sprintf("nothing was sent or recorded, so the plan is not used up: once fixed, run smsform apply %s again", n.planFile)
	}
	if herr, ok := tokenTrouble(err, n.base, n.baseFrom, n.hours, again); ok {
		return herr
	}
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.WrongPlace():
		return withHint(err, "check the base URL %s (from %s): the token endpoint is %s%s; %s", n.base, n.baseFrom, n.base, api.TokenPath, again)
	case errors.As(err, &ae) && ae.Status == 401:
		return withHint(err, "the API refused the client credentials: check %s and %s; if they are right, the provider may want the other Basic form: set provider.basic_auth to base64 or literal (auto tries base64, then literal); %s", envClientID, envClientSecret, again)
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 429 && ae.Status != 408:
		return withHint(err, "the API refused the client credentials: check %s and %s, and the base URL; %s", envClientID, envClientSecret, again)
	case errors.As(err, &ae):
		return withHint(err, "the API could not issue a token now; %s", again)
	}
	return withHint(err, "%s", again)
}

// startError adds to an error from apply.Start what to do about it.
// waited is how long it waited for the state's lock, loc where the state is.
func (n nextStep) startError(err error, waited time.Duration, loc state.Location) error {
	var refused *apply.PlanRefusedError
	var noToken *apply.NoTokenError
	switch {
	case errors.As(err, &noToken):
		return n.tokenRefused(noToken.Err)
	case errors.Is(err, state.ErrLocked):
		return lockedHint(err, waited)
	case errors.Is(err, state.ErrEarlierState):
		return earlierStateHint(err, loc)
	case errors.Is(err, state.ErrMoved):
		return movedError(err)
	case errors.Is(err, state.ErrPaused):
		return withHint(err, "nothing was sent or recorded; once it may go on, smsform resume %s%s, then apply again", n.campaign, n.stateArg())
	case errors.Is(err, context.Canceled):
		return err
	case !errors.As(err, &refused):
		return n.statePassword(err, loc)
	}
	switch refused.Why {
	case apply.PlanDiffers:
		return withHint(err, "nothing was sent or recorded; the plan is not what smsform plan --out makes of these files (it was edited after it was saved, or made by another smsform version): make a new plan (%s), have it reviewed and apply that", n.newPlan())
	case apply.FilesChanged:
		if errors.Is(err, fs.ErrNotExist) {
			return withHint(err, "%s; or make a new plan (%s) and have it reviewed", n.whereFiles(), n.newPlan())
		}
	case apply.OverBudget:
		return withHint(err, "nothing was sent or recorded; raise the budget in %s, or send less, and make a new plan (%s)", n.campaign, n.newPlan())
	case apply.AlreadyApplied:
		return withHint(err, "a saved plan is applied once, and this one was applied whole: to send anything more (recipients added since, or those it failed), make a new plan (%s) and have it reviewed", n.newPlan())
	case apply.OtherLineage:
		return withHint(err, "apply the plan with the state it was made against (--state), or make a new plan (%s)", n.newPlan())
	}
	return withHint(err, "make a new plan (%s) and have it reviewed", n.newPlan())
}

// runError adds to an error from apply.Run what to look at and what to do.
// Hints for a run that finished (exit 3) are next steps, left out in
// automation; a run that stopped says why it stopped and how to go on.
func (n nextStep) runError(err error) error {
	list := fmt.Sprintf("smsform state list %s%s", n.campaign, n.stateArg())
	resolve := fmt.Sprintf("smsform state resolve %s%s --in-doubt --as sent|unsent", n.campaign, n.stateArg())
	resolveFailed := fmt.Sprintf("smsform state resolve %s%s --failed --as unsent", n.campaign, n.stateArg())
	var incomplete *apply.IncompleteError
	var ae *api.Error
	if werr, ok := n.windowError(err); ok {
		return werr
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, state.ErrPaused):
		return withHint(err, "no new batch started; the requests in flight were answered and recorded; once it may go on, smsform resume %s%s, then %s",
			n.campaign, n.stateArg(), n.carryOn())
	case errors.Is(err, apply.ErrStateRefused):
		fix := fmt.Sprintf("make room on the disk that holds %s, or make it writable", n.state)
		if n.state.IsPostgres() {
			fix = fmt.Sprintf("check the database %s (reachable? full? read-only?)", n.state)
		}
		return withHint(err, "%s; nothing more was sent, and a batch whose end could not be written is in doubt (see %s): then %s", fix, list, n.carryOn())
	case errors.Is(err, apply.ErrTooManyErrors):
		// Two hints, printed in this order.
		return withHint(withHint(err, "fix the cause (or raise --max-errors), then %s", n.carryOn()),
			"see which recipients failed or are in doubt, and why: %s (failed ones wait for %s once the cause is fixed; in-doubt ones for %s, once checked with the provider)",
			list, resolveFailed, resolve)
	case errors.Is(err, apply.ErrInterrupted), errors.Is(err, context.Canceled):
		return withHint(err, "what was in flight is recorded; to send the rest, %s", n.carryOn())
	case errors.As(err, &incomplete):
		switch {
		case incomplete.InDoubt == 0 && incomplete.Owed.InDoubt == 0:
			return withHint(err, "see why with %s; the API refused them, so they are not sent again until, the cause fixed, %s", list, resolveFailed)
		}
		if len(incomplete.Unrecognised) > 0 {
			err = withHint(err, "%s; recipients that got it are in doubt: once you know what it means, name it there, then %s (sent: it means accepted; unsent: it means not taken)",
				unknownStatuses(incomplete.Unrecognised), resolve)
		}
		dup := ""
		if incomplete.Duplicates > 0 {
			dup = fmt.Sprintf(" (the provider says it already has %d of them, so they were most likely sent by an earlier request: resolve those as sent once it confirms)", incomplete.Duplicates)
		}
		failed := ""
		if incomplete.Failed > 0 || incomplete.Owed.Failed > 0 {
			failed = fmt.Sprintf("; the failed ones the API refused: once the cause is fixed, %s", resolveFailed)
		}
		return withHint(err, "see them with %s; check the in-doubt ones with the provider%s, then %s (sent: delivered; unsent: the next apply sends them)%s", list, dup, resolve, failed)
	case errors.As(err, new(*apply.SilentError)):
		return withHint(err, "the provider may have sent them: check with the provider (its dashboard, its status page), then %s; if it is only slow, raise --request-timeout (or --max-silent); then %s",
			resolve, n.carryOn())
	case errors.As(err, new(*apply.WrongPlaceError)):
		return withHint(err, "check the base URL %s (from %s): the send endpoint is %s%s; once fixed, %s",
			n.base, n.baseFrom, n.base, api.SendPath, n.carryOn())
	case errors.As(err, new(*apply.ForbiddenError)):
		return withHint(err, "the credentials in %s lack the permission to send, or the base URL %s (from %s) is not the right account's; once fixed, %s",
			envClientID, n.base, n.baseFrom, n.carryOn())
	case errors.Is(err, api.ErrTokenRefused):
		return withHint(err, "set a valid %s, or %s and %s; nothing of the refused batch was sent; once fixed, %s", envToken, envClientID, envClientSecret, n.carryOn())
	case errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403):
		return withHint(err, "check %s and %s, and the base URL; nothing of the refused batch was sent; once fixed, %s", envClientID, envClientSecret, n.carryOn())
	case errors.As(err, &ae) && ae.Unreachable():
		fix, _ := reachTrouble(ae, n.base, n.baseFrom)
		return withHint(err, "%s; nothing of that batch was sent; once fixed, %s", fix, n.carryOn())
	case errors.As(err, &ae) && apply.StatusOf(ae) == state.Unsent:
		return withHint(err, "the API did not act on that batch (nothing of it was sent): it was unreachable or kept refusing; later, %s", n.carryOn())
	}
	return err
}

// canConfirm refuses an apply that cannot show the plan and ask for "yes":
// in automation, without a terminal, and with --json, whose output is for a
// program: a person would be asked about a plan they were not shown.
func canConfirm(env Env, jsonOut bool, n nextStep) error {
	var why string
	switch {
	case jsonOut:
		why = "--json shows no plan to confirm"
	case inAutomation(env):
		why = "automation mode (CI=true or SMSFORM_IN_AUTOMATION=1) never asks"
	case !env.IsTerminal(env.Stdin):
		why = "no terminal to ask on"
	default:
		return nil
	}
	return withHint(fmt.Errorf("refusing to apply without confirmation: %s", why),
		"pass --auto-approve, or review a saved plan and apply that: %s, then smsform apply PLANFILE", n.newPlan())
}

// applyTarget tells a saved plan from a campaign file: plans are gzip,
// campaigns are YAML. Of a saved plan only the header is read here (what
// campaign, which state): apply.Start reads the rest, comparing it with the
// campaign as it goes. The caller closes it.
func applyTarget(ctx context.Context, path string) (*planfile.Saved, string, error) {
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		return nil, path, nil
	}
	saved, err := planfile.OpenHeader(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", err
		}
		return nil, "", withHint(err, "apply takes a campaign file (.yaml) or a plan saved with smsform plan --out")
	}
	return saved, saved.CampaignPath, nil
}

// loadError adds to an error loading the campaign of a saved plan, when
// it is not where the plan file says, where the plan file looked.
func (n nextStep) loadError(err error) error {
	if n.saved == nil {
		return err
	}
	// Only the plan's header was read: a damaged plan says more than
	// the campaign it names.
	if rerr := n.saved.ReadPlan(nil); errors.Is(rerr, planfile.ErrNotPlan) {
		return withHint(rerr, "apply takes a campaign file (.yaml) or a plan saved with smsform plan --out")
	}
	if _, serr := os.Stat(n.campaign); !errors.Is(serr, fs.ErrNotExist) {
		return err
	}
	return withHint(err, "%s; or make a new plan (smsform plan CAMPAIGN.yaml --out %s)", n.whereFiles(), n.planFile)
}

// whereFiles says where a saved plan looks for its campaign and lists.
func (n nextStep) whereFiles() string {
	if n.saved.PathsFrom == planfile.PathsFromPlanFile {
		return fmt.Sprintf("the plan %s names the campaign and its lists by their place from the plan file's folder: apply it with them where they were when it was made (the same checkout), the plan file at its place among them or moved with them", n.planFile)
	}
	return fmt.Sprintf("the plan %s was made by an earlier smsform, which named the campaign and its lists from the folder plan ran in: run apply from that folder", n.planFile)
}

// statePassword adds to an error opening the state a saved plan records,
// a URL without its password, where the password comes from, when nothing
// here supplies one.
func (n nextStep) statePassword(err error, loc state.Location) error {
	if !n.savedState || !loc.IsPostgres() || libpqPassword(n.env) {
		return err
	}
	return withHint(err, "the plan records the state's URL without its password: if the database wants one, set PGPASSWORD or a ~/.pgpass entry, or name the state with --state or %s", envState)
}

// ErrCancelled is a confirmation answered with anything but "yes", or
// interrupted (ErrPromptInterrupted): nothing was sent or recorded.
var (
	ErrCancelled         = errors.New("apply cancelled")
	ErrPromptInterrupted = fmt.Errorf("%w at the prompt: nothing was sent or recorded", ErrCancelled)
)

// confirm asks for "yes" on the terminal (runApply has made sure there is
// one), right under the plan's summary in one line. An interrupt while it
// waits cancels at once (ErrPromptInterrupted): nothing is in flight.
func confirm(ctx context.Context, env Env, summary string) error {
	fmt.Fprintf(env.Stderr, "\n%s\nDo you want to send these messages? Only 'yes' will be accepted: ", summary)
	env.Interrupt.setPrompting(true)
	defer env.Interrupt.setPrompting(false)
	type answer struct {
		line string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(env.Stdin).ReadString('\n')
		answered <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(env.Stderr)
		return ErrPromptInterrupted
	case a := <-answered:
		if a.err != nil && a.line == "" {
			return fmt.Errorf("%w: no answer", ErrCancelled)
		}
		if strings.TrimSpace(a.line) != "yes" {
			return ErrCancelled
		}
	}
	return nil
}

// unknownStatuses says which statuses the provider answered that the
// mapping does not name, and where to name them.
func unknownStatuses(us []apply.UnknownStatus) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = fmt.Sprintf("status %s (%s) is not named by provider.results at %s", strconv.Quote(u.Status), words.N(u.Recipients, "recipient", "recipients"), u.Where)
	}
	return strings.Join(parts, "; ")
}
