package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/state"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newStateCmd groups the commands that read and change a state.
func newStateCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "state",
		Args: unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withHint(fmt.Errorf("%w: smsform state takes list, resolve, migrate, where, grant-readonly or prune", ErrUsage), "run smsform state list CAMPAIGN.yaml")
		},
	}
	cmd.AddCommand(newStateListCmd(env), newStateResolveCmd(env), newStateMigrateCmd(env), newStateWhereCmd(env))
	cmd.AddCommand(newGrantReadonlyCmd(env), newStatePruneCmd(env))
	return cmd
}

// stateTarget is the state a state command works on, and the campaign's
// name when a campaign file is given: a database or a project's file holds
// many campaigns.
func stateTarget(env Env, pos []string, flag *pflag.Flag) (stateChoice, string, error) {
	c, err := chooseStateFor(env, pos, flag)
	if err != nil || len(pos) == 0 {
		return c, "", err
	}
	return withCampaign(c, pos[0])
}

// readTarget is stateTarget for a command that only reads: --state may
// name any state, a project's earlier one (moved away, kept to read)
// included, since reading it cannot split a ledger.
func readTarget(env Env, pos []string, flag *pflag.Flag) (stateChoice, string, error) {
	if len(pos) == 0 || !flag.Changed {
		return stateTarget(env, pos, flag)
	}
	c := stateChoice{source: fromFlag}
	var err error
	if c.loc, err = parseChoice(c, stateFileIn(flag.Value.String())); err != nil {
		return c, "", err
	}
	camp, err := campaign.Load(pos[0])
	if err != nil {
		return c, "", err
	}
	// A project's campaign is read in a state that holds several; any
	// other in one of its own, as stateTarget would.
	c.shared = camp.Project != nil && camp.Project.State != ""
	return c, camp.Name, nil
}

// withCampaign adds to c the name of the campaign in the file at path.
func withCampaign(c stateChoice, path string) (stateChoice, string, error) {
	camp, err := campaign.Load(path)
	if err != nil {
		return c, "", err
	}
	return c, camp.Name, nil
}

// stateFlagUsage is the --state flag's help, the same for every command.
const stateFlagUsage = "state file or PostgreSQL location (default: $SMSFORM_STATE, else the project file's state, else next to the campaign, NAME.smsstate)"

// lineageHint adds what to do to a state that belongs to another campaign.
func lineageHint(err error) error {
	if errors.Is(err, state.ErrLineage) {
		return withHint(err, "give each campaign its own state file (--state), or name the campaign whose state this is")
	}
	return err
}

func newStateListCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "list [CAMPAIGN.yaml]"}
	fs := cmd.Flags()
	fs.String("state", "", stateFlagUsage)
	jsonOut := fs.Bool("json", false, "print one JSON document")
	show := fs.Bool("show-numbers", false, "show phone numbers whole (they are masked by default)")
	wide := fs.Bool("wide", false, "show failure reasons whole instead of fitting the terminal's width")
	delivery := fs.String("delivery", "", "only the recipients sent whose delivery is delivered, undelivered or pending (no report yet counts as pending)")
	cmd.Args = positional(0, 1, "at most one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		only, ok := state.ParseDelivery(*delivery)
		if *delivery != "" && !ok {
			return withHint(fmt.Errorf("%w: --delivery %q: delivered, undelivered or pending", ErrUsage, *delivery), "e.g. --delivery undelivered")
		}
		choice, name, err := readTarget(env, pos, fs.Lookup("state"))
		if err != nil {
			return err
		}
		st, err := choice.openView(ctx, name)
		if err != nil {
			return err
		}
		defer st.Close()
		path := choice.shown()
		if st.Lineage() == "" {
			return choice.noRecord(ctx, name)
		}

		counts, err := st.Counts(ctx)
		if err != nil {
			return err
		}
		l := report.StateList{Path: path, Campaign: st.Campaign(), Lineage: st.Lineage(), Serial: st.Serial(), Counts: counts, Moved: st.Moved()}
		if err := withDeliveries(ctx, st, &l); err != nil {
			return err
		}
		filter := func(walk func(context.Context, func(state.Recipient) error) error) report.Recipients {
			return func(fn func(state.Recipient) error) error {
				return walk(ctx, func(r state.Recipient) error {
					if only != state.NoReport && (r.Status != state.Sent || state.DeliveryOf(r, l.Deliveries) != only) {
						return nil
					}
					return fn(r)
				})
			}
		}
		// Lines fit the width as every table does (a long reason is cut);
		// --wide, or --json, gives reasons whole.
		out := report.Output{ShowNumbers: *show, Width: tableWidth(env, *wide)}
		if *jsonOut {
			// JSON, for programs, comes in the order the state holds its
			// records, so that it streams in constant memory however many
			// recipients there are; the table is sorted by number.
			return report.WriteStateJSON(env.Stdout, l, filter(st.EachRecipient), out)
		}
		return report.WriteStateTable(env.Stdout, l, filter(st.Recipients), out)
	}
	return cmd
}

// withDeliveries adds to l what the provider reported of the campaign:
// the latest report of each recipient (none: l.Deliveries stays nil) and
// how many recipients in doubt have none.
func withDeliveries(ctx context.Context, st *state.State, l *report.StateList) error {
	ds, err := st.Deliveries(ctx)
	if err != nil {
		return err
	}
	l.InDoubtWithoutReport = l.Counts[state.InDoubt]
	if len(ds) == 0 {
		return nil
	}
	l.Deliveries = ds
	var c state.DeliveryCounts
	if err := st.EachRecipient(ctx, func(r state.Recipient) error {
		if r.Status == state.InDoubt {
			c.Add(r, ds)
		}
		return nil
	}); err != nil {
		return err
	}
	l.InDoubtWithoutReport = c.InDoubtWithoutReport
	return nil
}

func newStateResolveCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "resolve [CAMPAIGN.yaml]"}
	fs := cmd.Flags()
	fs.String("state", "", stateFlagUsage)
	inDoubt := fs.Bool("in-doubt", false, "resolve in-doubt recipients: the API may have acted, check with the provider")
	failed := fs.Bool("failed", false, "resolve failed recipients (--as unsent only): the API refused them, and the cause is fixed")
	as := fs.String("as", "", "sent: the provider confirms they were sent; unsent: they were not, and the next apply sends them")
	batch := fs.String("batch", "", "only this batch (default: every batch of that kind)")
	lockTimeout := fs.Duration("lock-timeout", 0, "wait this long for an apply to release the state")
	cmd.Args = positional(0, 1, "at most one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *inDoubt == *failed {
			return withHint(fmt.Errorf("%w: state resolve needs --in-doubt or --failed (one of them)", ErrUsage),
				"smsform state resolve --in-doubt --as sent|unsent, or smsform state resolve --failed --as unsent")
		}
		if *as != "sent" && *as != "unsent" {
			return withHint(fmt.Errorf("%w: --as must be sent or unsent", ErrUsage),
				"--as sent if the provider confirms delivery, --as unsent to let the next apply send them again")
		}
		if *failed && *as == "sent" {
			return withHint(fmt.Errorf("%w: failed recipients can only be resolved --as unsent", ErrUsage),
				"the API refused them (4xx), so it did not send them; --as unsent lets the next apply send them again")
		}
		choice, name, err := stateTarget(env, pos, fs.Lookup("state"))
		if err != nil {
			return err
		}
		ro, err := choice.openView(ctx, name)
		if err != nil {
			return err
		}
		wanted := name
		name = ro.Campaign()
		ro.Close()
		if name == "" {
			return choice.noRecord(ctx, wanted)
		}
		st, err := state.Open(ctx, choice.loc, state.Options{Campaign: name, LockTimeout: *lockTimeout, LockWait: sayLockWait(env), RunURL: runURL(env),
			Shared: choice.shared})
		if errors.Is(err, state.ErrLocked) {
			return lockedHint(err, *lockTimeout)
		} else if err != nil {
			return movedError(err)
		}
		defer st.Close()
		kind, resolve := "in-doubt", func() (state.Resolved, error) { return st.Resolve(ctx, *batch, *as == "sent") }
		if *failed {
			kind, resolve = "failed", func() (state.Resolved, error) { return st.ResolveFailed(ctx, *batch) }
		}
		res, err := resolve()
		if err != nil {
			return err
		}
		n := res.Moved
		if n+res.ByReport == 0 && *batch != "" {
			return fmt.Errorf("no %s recipient to resolve in batch %s", kind, *batch)
		}
		if n+res.ByReport == 0 {
			return fmt.Errorf("no %s recipient to resolve", kind)
		}
		if n > 0 {
			fmt.Fprintf(env.Stdout, "%s %s resolved as %s%s.\n", words.Count(n), kind+" "+words.Plural(n, "recipient", "recipients"), *as, capWords(choice.shared, *as, n))
		}
		if res.ByReport > 0 {
			fmt.Fprintf(env.Stdout, "%s recorded sent, not %s: a delivery report in the state shows the provider acted on %s, so the next apply will not message %s again.\n",
				words.N(res.ByReport, kind+" recipient", kind+" recipients"), *as, words.Plural(res.ByReport, "its message", "their messages"), words.Plural(res.ByReport, "it", "them"))
		}
		return nil
	}
	return cmd
}

func newStateMigrateCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate [CAMPAIGN.yaml]"}
	fs := cmd.Flags()
	from := fs.String("from", "", "the state to copy: a file (or a project's state folder) or postgres:// URL")
	to := fs.String("to", "", "where to copy it: a file (or folder) or postgres:// URL that records none of its campaigns yet")
	lockTimeout := fs.Duration("lock-timeout", 0, "wait this long for an apply to release either state")
	cmd.Args = positional(0, 1, "at most one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *from == "" || *to == "" {
			return withHint(fmt.Errorf("%w: state migrate needs --from and --to", ErrUsage),
				"smsform state migrate campaign.yaml --from campaign.smsstate --to postgres://host/db")
		}
		m := migration{env: env, opts: state.CopyOptions{LockTimeout: *lockTimeout, RunURL: runURL(env), By: actor(env)}}
		var err error
		if m.from, err = parseChoice(stateChoice{source: "--from"}, stateFileIn(*from)); err != nil {
			return err
		}
		if m.to, err = parseChoice(stateChoice{source: "--to"}, stateFileIn(*to)); err != nil {
			return err
		}
		if len(pos) == 0 {
			return m.whole(ctx)
		}
		c, err := campaign.Load(pos[0])
		if err != nil {
			return err
		}
		m.opts.Campaign = c.Name
		// Into the project's state, the target holds the project's campaigns.
		if c.Project != nil && c.Project.State != "" {
			declared, err := projectState(c.Project)
			if err != nil {
				return err
			}
			m.opts.Shared, _ = state.SameState(m.to, declared)
		}
		if err := m.campaign(ctx); err != nil {
			return err
		}
		m.rest(ctx)
		return nil
	}
	return cmd
}

// rest says, after one campaign was copied, what the source still holds:
// a project's other campaigns and its ledger go with a migration of the
// whole state, before the project file names the copy.
func (m migration) rest(ctx context.Context) {
	cs, _ := state.Campaigns(ctx, m.from)
	var left []string
	for _, c := range cs {
		if !c.Moved {
			left = append(left, c.Name)
		}
	}
	l, _ := ledger.SizeOf(ctx, m.from)
	if !l.Empty() && errors.Is(ledger.CheckTarget(ctx, m.from, m.to), state.ErrTargetNotEmpty) {
		// Another project's state: a whole migration there is refused.
		fmt.Fprintf(m.env.Stderr, "hint: %s holds another project's ledger: the opt-outs of %s stay there; to hold this campaign to them, list them there (smsform optout list --json --show-numbers) and import their numbers here (smsform optout import FILE, one number a line)\n",
			m.to, m.from)
		return
	}
	if what := leftBehind(left, l); what != "" {
		fmt.Fprintf(m.env.Stderr, "hint: %s still holds %s: carry them over with smsform state migrate --from %s --to %s before the project file names the copy\n",
			m.from, what, shellWord(m.from.String()), shellWord(m.to.String()))
		return
	}
	m.useIt()
}

// leftBehind words what a state still holds after one campaign moved: its
// campaigns not moved, the project's ledger, what it received; "" for
// nothing.
func leftBehind(campaigns []string, l ledger.Size) string {
	var parts []string
	if len(campaigns) > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", words.N(len(campaigns), "other campaign", "other campaigns"), strings.Join(campaigns, ", ")))
	}
	if !l.Empty() {
		parts = append(parts, "the project's opt-outs and frequency-cap history")
	}
	if l.Received > 0 {
		parts = append(parts, "the replies and delivery reports matched to no campaign")
	}
	switch n := len(parts); n {
	case 0, 1:
		return strings.Join(parts, "")
	default:
		return strings.Join(parts[:n-1], ", ") + ", and " + parts[n-1]
	}
}

// migration is one state migrate: a campaign's record, or (no campaign
// named) every campaign of a state and the project's ledger.
type migration struct {
	env      Env
	from, to state.Location
	opts     state.CopyOptions
}

// campaign copies the campaign m.opts names and marks it moved.
func (m migration) campaign(ctx context.Context) error {
	// A target holding another project's ledger never gets the source's
	// claims of this campaign's sends (a whole migration is refused
	// there): they are made from its record as it is copied.
	m.opts.ClaimSends = errors.Is(ledger.CheckTarget(ctx, m.from, m.to), state.ErrTargetNotEmpty)
	c, err := state.Copy(ctx, m.from, m.to, m.opts)
	if errors.Is(err, state.ErrLocked) {
		return lockedHint(err, m.opts.LockTimeout)
	} else if errors.Is(err, state.ErrTargetNotEmpty) {
		return withHint(err, "the target already records this campaign: nothing was copied; use it as it is, or pick another target")
	} else if err != nil {
		return movedError(err)
	}
	after := ""
	if c.Reports > 0 {
		after += ", " + words.N(c.Reports, "delivery report", "delivery reports")
	}
	if c.Tests > 0 {
		after += ", " + words.N(c.Tests, "test send", "test sends")
	}
	fmt.Fprintf(m.env.Stdout, "Copied campaign %s (lineage %s, serial %d) from %s to %s: %s, %s sent, %s failed, %s in doubt, %s%s; checked; %s is marked moved.\n",
		c.Campaign, c.Lineage, c.Serial, m.from, m.to, words.N(c.Attempts, "attempt", "attempts"),
		words.Count(c.Counts[state.Sent]), words.Count(c.Counts[state.Failed]), words.Count(c.Counts[state.InDoubt]), words.N(c.Plans, "applied plan", "applied plans"),
		after, m.from)
	return nil
}

// whole copies every campaign the source records (those moved away before
// are passed over) and then the project's ledger: what a project's state
// moving to PostgreSQL needs, so that nobody is messaged again and every
// opt-out and the cap's history go along. Run again after a stop, it
// carries on where it stopped.
func (m migration) whole(ctx context.Context) error {
	cs, err := state.Campaigns(ctx, m.from)
	if err != nil {
		return err
	}
	// Refused whole, before any campaign is copied and marked moved. A
	// state a whole migration left (back to where it came from, say)
	// keeps the project's ledger as it was then: whatever its counts, it
	// is not the source's (sends since are missing from its cap history).
	if errors.Is(state.Vacated(ctx, m.to), state.ErrMoved) {
		return withHint(fmt.Errorf("state migrate: every campaign of %s moved away from it, and it keeps the project's ledger as it was then: %w", m.to, state.ErrTargetNotEmpty),
			"nothing was copied; migrate into a new state (another file, or another schema) and name that in the project file")
	}
	if err := ledger.CheckTarget(ctx, m.from, m.to); errors.Is(err, state.ErrTargetNotEmpty) {
		return withHint(err, "nothing was copied; migrate into a state whose ledger is empty (opt-outs recorded there since would be lost to the source's)")
	} else if err != nil {
		return err
	}
	// Several campaigns go into a state that holds several.
	m.opts.Shared = len(cs) > 1 || m.to.IsPostgres()
	if p, err := campaign.ProjectFor("."); err == nil && p != nil && p.State != "" {
		if declared, err := projectState(p); err == nil {
			if same, _ := state.SameState(m.to, declared); same {
				m.opts.Shared = true
			}
		}
	}
	for _, c := range cs {
		if c.Moved {
			fmt.Fprintf(m.env.Stdout, "Campaign %s moved away from %s before: passed over.\n", c.Name, m.from)
			continue
		}
		m.opts.Campaign = c.Name
		if err := m.campaign(ctx); err != nil {
			return err
		}
	}
	l, err := ledger.Copy(ctx, m.from, m.to)
	if err != nil {
		return err
	}
	switch {
	case l.Already:
		fmt.Fprintf(m.env.Stdout, "The project's ledger at %s is already the one at %s: nothing more to copy.\n", m.to, m.from)
	case l.OptOutChanges+l.CapNumbers+l.Replies+l.Unmatched > 0:
		received := ""
		if l.Replies > 0 {
			received += ", " + words.N(l.Replies, "reply", "replies")
		}
		if l.Unmatched > 0 {
			received += fmt.Sprintf(", %s matched to no campaign", words.N(l.Unmatched, "delivery report", "delivery reports"))
		}
		fmt.Fprintf(m.env.Stdout, "Copied the project's ledger from %s to %s: %s (%s opted out now), %s in the frequency cap's index%s; checked.\n",
			m.from, m.to, words.N(l.OptOutChanges, "opt-out change", "opt-out changes"),
			words.N(l.OptedOut, "number", "numbers"), words.N(l.CapNumbers, "number", "numbers"), received)
	case len(cs) == 0:
		return fmt.Errorf("state migrate: %s records no campaign and no opt-out: nothing to copy", m.from)
	}
	m.useIt()
	return nil
}

// useIt says what to do once a state is copied: use the copy.
func (m migration) useIt() {
	if inAutomation(m.env) {
		return
	}
	fmt.Fprintf(m.env.Stderr, "hint: use the copy from now on: name it as the project file's state (%s); outside a project, with --state or %s\n",
		campaign.ProjectFile, envState)
}

// newStateWhereCmd says which state a command would use for a campaign,
// and why: --state, SMSFORM_STATE, the project file, or the default.
func newStateWhereCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "where CAMPAIGN.yaml"}
	fs := cmd.Flags()
	fs.String("state", "", stateFlagUsage)
	jsonOut := fs.Bool("json", false, "print one JSON document")
	cmd.Args = positional(1, 1, "one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		c, err := campaign.Load(pos[0])
		if err != nil {
			return err
		}
		choice, err := chooseState(env, pos[0], fs.Lookup("state"))
		if err != nil {
			return err
		}
		w := report.StateWhere{Campaign: c.Name, Location: choice.shown(), From: choice.from(), Source: choice.source, Shared: choice.shared,
			Postgres: choice.loc.IsPostgres()}
		if choice.project != nil {
			w.Project = choice.project.Path
		}
		st, err := choice.openView(ctx, c.Name)
		if err != nil {
			return err
		}
		defer st.Close()
		w.Lineage, w.Serial, w.Moved, w.Paused = st.Lineage(), st.Serial(), st.Moved(), st.Paused()
		if err := choice.splitLedger(ctx, pos[0], c.Name); err != nil {
			w.SecondLedger = err.Error()
		}
		if *jsonOut {
			return report.WriteStateWhereJSON(env.Stdout, w)
		}
		return report.WriteStateWhere(env.Stdout, w)
	}
	return cmd
}

// capWords says what a resolve did to the frequency cap of a project's
// state: resolved as unsent, the recipients' places are freed; as sent,
// they keep them.
func capWords(shared bool, as string, n int) string {
	switch {
	case !shared:
		return ""
	case as == "unsent":
		return fmt.Sprintf("; %s in the frequency cap %s freed, so the next apply may send %s", words.Plural(n, "its place", "their places"), words.Plural(n, "is", "are"), words.Plural(n, "it", "them"))
	}
	return fmt.Sprintf("; %s in the frequency cap %s", words.Plural(n, "it keeps its place", "they keep their places"), words.Plural(n, "as a message sent", "as messages sent"))
}
