package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/state"
)

const stateUsage = `Usage:
  smsform state list [CAMPAIGN.yaml] [--state PATH] [--json] [--show-numbers]
  smsform state resolve [CAMPAIGN.yaml] [--state PATH] --in-doubt --as sent|unsent [--batch ID] [--lock-timeout D]
  smsform state resolve [CAMPAIGN.yaml] [--state PATH] --failed --as unsent [--batch ID] [--lock-timeout D]

Run "smsform state list --help" or "smsform state resolve --help" for what each flag does.
`

func runState(ctx context.Context, args []string, env Env) error {
	args, err := skipGlobalFlags(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, stateUsage)
		return withHint(fmt.Errorf("%w: smsform state takes list or resolve", ErrUsage), "run smsform state list CAMPAIGN.yaml")
	}
	switch sub := args[0]; {
	case sub == "list":
		return runStateList(ctx, args[1:], env)
	case sub == "resolve":
		return runStateResolve(ctx, args[1:], env)
	case sub == "help" || sub == "-h" || sub == "-help" || sub == "--help":
		fmt.Fprint(env.Stderr, stateUsage)
		return flag.ErrHelp
	case strings.HasPrefix(sub, "-"):
		return withHint(fmt.Errorf("%w: smsform state: %s is a flag of list or resolve, so it goes after them", ErrUsage, sub),
			"put it after the subcommand, e.g. smsform state list %s", sub)
	}
	return withHint(fmt.Errorf("%w: unknown state command %q (list or resolve)", ErrUsage, args[0]), "run smsform state --help")
}

// stateTarget is the state file named by --state or found next to a campaign.
func stateTarget(pos []string, flagValue string) (string, error) {
	switch {
	case flagValue != "":
		return flagValue, nil
	case len(pos) == 1:
		return statePath(pos[0], ""), nil
	}
	return "", withHint(fmt.Errorf("%w: which state? give a campaign file or --state PATH", ErrUsage), "smsform state list campaign.yaml")
}

type stateListJSON struct {
	FormatVersion string               `json:"format_version"`
	Campaign      string               `json:"campaign"`
	Lineage       string               `json:"lineage"`
	Serial        int64                `json:"serial"`
	Counts        map[state.Status]int `json:"counts"`
	Recipients    []stateRecipientJSON `json:"recipients"`
}

type stateRecipientJSON struct {
	Phone    string       `json:"phone"`
	Status   state.Status `json:"status"`
	BatchID  string       `json:"batch"`
	BodyHash string       `json:"body_sha256"`
	At       time.Time    `json:"at"`
	Reason   string       `json:"reason,omitempty"`
}

func runStateList(ctx context.Context, args []string, env Env) error {
	fs := newFlags("state list", "state list [CAMPAIGN.yaml] [--state PATH] [--json] [--show-numbers]", env)
	stateFlag := fs.String("state", "", "state file")
	jsonOut := fs.Bool("json", false, "print one JSON document")
	show := fs.Bool("show-numbers", false, "show phone numbers whole (they are masked by default)")
	pos, err := parse(fs, args, env, 0, 1, "at most one campaign file")
	if err != nil {
		return err
	}
	path, err := stateTarget(pos, *stateFlag)
	if err != nil {
		return err
	}
	st, err := state.OpenReadOnly(ctx, path, "")
	if err != nil {
		return err
	}
	defer st.Close()
	if st.Lineage() == "" {
		return withHint(fmt.Errorf("no state at %s", path), "apply the campaign first, or name the state with --state")
	}
	counts, err := st.Counts(ctx)
	if err != nil {
		return err
	}
	number := func(p string) string {
		if *show {
			return p
		}
		return e164.Mask(p)
	}
	doc := stateListJSON{FormatVersion: "1", Campaign: st.Campaign(), Lineage: st.Lineage(), Serial: st.Serial(),
		Counts:     map[state.Status]int{state.Sent: counts[state.Sent], state.Failed: counts[state.Failed], state.InDoubt: counts[state.InDoubt]},
		Recipients: []stateRecipientJSON{}}
	if !*jsonOut {
		fmt.Fprintf(env.Stdout, "State %s: campaign %s, lineage %s, serial %d\n%d sent, %d failed, %d in doubt\n\n",
			path, st.Campaign(), st.Lineage(), st.Serial(), counts[state.Sent], counts[state.Failed], counts[state.InDoubt])
	}
	err = st.Recipients(ctx, func(r state.Recipient) error {
		if *jsonOut {
			doc.Recipients = append(doc.Recipients, stateRecipientJSON{Phone: number(r.Phone), Status: r.Status,
				BatchID: r.BatchID, BodyHash: r.BodyHash, At: r.At, Reason: r.Reason})
			return nil
		}
		line := fmt.Sprintf("%-18s %-8s %s %s", number(r.Phone), r.Status, r.BatchID, r.At.UTC().Format(time.RFC3339))
		if r.Reason != "" {
			line += "  " + r.Reason
		}
		_, err := fmt.Fprintln(env.Stdout, line)
		return err
	})
	if err != nil || !*jsonOut {
		return err
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func runStateResolve(ctx context.Context, args []string, env Env) error {
	fs := newFlags("state resolve", "state resolve [CAMPAIGN.yaml] [--state PATH] --in-doubt|--failed --as sent|unsent [--batch ID] [--lock-timeout D]", env)
	stateFlag := fs.String("state", "", "state file")
	inDoubt := fs.Bool("in-doubt", false, "resolve in-doubt recipients: the API may have acted, check with the provider")
	failed := fs.Bool("failed", false, "resolve failed recipients (--as unsent only): the API refused them, and the cause is fixed")
	as := fs.String("as", "", "sent: the provider confirms they were sent; unsent: they were not, and the next apply sends them")
	batch := fs.String("batch", "", "only this batch (default: every batch of that kind)")
	lockTimeout := fs.Duration("lock-timeout", 0, "wait this long for an apply to release the state")
	pos, err := parse(fs, args, env, 0, 1, "at most one campaign file")
	if err != nil {
		return err
	}
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
	path, err := stateTarget(pos, *stateFlag)
	if err != nil {
		return err
	}
	ro, err := state.OpenReadOnly(ctx, path, "")
	if err != nil {
		return err
	}
	name := ro.Campaign()
	ro.Close()
	if name == "" {
		return fmt.Errorf("no state at %s", path)
	}
	st, err := state.Open(ctx, path, state.Options{Campaign: name, LockTimeout: *lockTimeout})
	if err != nil {
		return err
	}
	defer st.Close()
	kind, resolve := "in-doubt", func() (int, error) { return st.Resolve(ctx, *batch, *as == "sent") }
	if *failed {
		kind, resolve = "failed", func() (int, error) { return st.ResolveFailed(ctx, *batch) }
	}
	n, err := resolve()
	if err != nil {
		return err
	}
	if n == 0 && *batch != "" {
		return fmt.Errorf("no %s recipient to resolve in batch %s", kind, *batch)
	}
	if n == 0 {
		return fmt.Errorf("no %s recipient to resolve", kind)
	}
	fmt.Fprintf(env.Stdout, "%d %s recipient(s) resolved as %s.\n", n, kind, *as)
	return nil
}
