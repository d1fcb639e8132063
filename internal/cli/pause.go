package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/state"
)

// A pause is a mark in the campaign's state, not a signal to a process:
// whoever reaches the state pauses the campaign, whichever machine runs its
// apply, and the next scheduled apply finds it too. A running apply reads
// it right before each batch's intent.

func newPauseCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "pause CAMPAIGN.yaml"}
	fs := cmd.Flags()
	fs.String("state", "", stateFlagUsage)
	reason := fs.String("reason", "", "why it is paused, for whoever finds it so")
	cmd.Args = positional(1, 1, "one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		if err := plainReason(*reason); err != nil {
			return err
		}
		ctx := cmd.Context()
		c, choice, before, err := controlTarget(ctx, env, pos[0], cmd, true)
		if err != nil {
			return err
		}
		p := &state.Pause{At: env.Clock.Now().UTC(), By: actor(env), Reason: *reason}
		if err := choice.makeFolder(); err != nil { // a project's first command may be a pause
			return err
		}
		if err := state.SetPause(ctx, choice.loc, c.Name, choice.shared, p); err != nil {
			return writeHint(err, choice.loc)
		}
		if before != nil {
			fmt.Fprintf(env.Stdout, "Campaign %s was already %s; now %s.\n", c.Name, report.PauseWords(before), report.PauseWords(p))
		} else {
			fmt.Fprintf(env.Stdout, "Campaign %s %s.\n", c.Name, report.PauseWords(p))
		}
		fmt.Fprintf(env.Stdout, "No new batch starts: an apply running now lets its requests in flight finish, records them and stops (exit 6); "+
			"apply refuses to start (exit 6) until smsform resume %s%s.\n", pos[0], stateArgOf(choice))
		return nil
	}
	return cmd
}

// plainReason refuses a pause reason that holds a control or bidirectional
// character (a line break, ESC, U+202E): the reason is shown wherever the
// pause is, apply's refusal among them, and must read there as the one
// line of text it is.
func plainReason(reason string) error {
	if words.Visible(reason) != reason {
		return withHint(fmt.Errorf("%w: --reason %q holds a control character (a line break, tab, escape or bidirectional control)", ErrUsage, reason),
			"write the reason as one line of plain text")
	}
	return nil
}

func newResumeCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "resume CAMPAIGN.yaml"}
	fs := cmd.Flags()
	fs.String("state", "", stateFlagUsage)
	cmd.Args = positional(1, 1, "one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		c, choice, before, err := controlTarget(ctx, env, pos[0], cmd, false)
		if err != nil {
			return err
		}
		if before == nil {
			fmt.Fprintf(env.Stdout, "Campaign %s is not paused: nothing to do.\n", c.Name)
			return nil
		}
		if err := state.SetPause(ctx, choice.loc, c.Name, choice.shared, nil); err != nil {
			return writeHint(err, choice.loc)
		}
		fmt.Fprintf(env.Stdout, "Campaign %s resumed (it was %s): the next apply carries on where it stopped.\n", c.Name, report.PauseWords(before))
		return nil
	}
	return cmd
}

// controlTarget is the campaign a pause or resume acts on, its state, and
// its pause as it is now (nil: not paused). A state moved elsewhere is
// refused: the pause would be read by nobody; so is pausing (which makes
// the campaign's record) where signs of an earlier state show.
func controlTarget(ctx context.Context, env Env, path string, cmd *cobra.Command, pausing bool) (*campaign.Campaign, stateChoice, *state.Pause, error) {
	c, err := campaign.Load(path)
	if err != nil {
		return nil, stateChoice{}, nil, err
	}
	choice, err := chooseState(env, path, cmd.Flags().Lookup("state"))
	if err != nil {
		return nil, stateChoice{}, nil, err
	}
	st, err := choice.openView(ctx, c.Name)
	if err != nil {
		return nil, stateChoice{}, nil, err
	}
	defer st.Close()
	if m := st.Moved(); m != nil {
		return nil, stateChoice{}, nil, movedError(&state.MovedError{Loc: choice.shown(), Campaign: c.Name, Moved: *m})
	}
	if st.Lineage() == "" && pausing {
		// A pause makes the campaign's record: where signs of an earlier
		// state show, that record would pass for the campaign's state
		// and the next apply would send everyone again (nor would the
		// pause reach the apply it was meant for).
		signs, err := earlierSigns(ctx, choice, c.Name)
		if err != nil {
			return nil, stateChoice{}, nil, err
		}
		if len(signs) > 0 {
			return nil, stateChoice{}, nil, withHint(&state.EarlierStateError{Loc: choice.shown(), Campaign: c.Name, Signs: signs},
				"a pause must reach the state the campaign's applies use: point --state at the earlier state (or restore the file); if it is really lost, apply --new-state starts a new one")
		}
	}
	return c, choice, st.Paused(), nil
}

// stateArgOf is the --state flag a later command needs to find the same
// state: none when it was not given by the flag.
func stateArgOf(c stateChoice) string {
	if c.source != fromFlag {
		return ""
	}
	return " --state " + c.shown()
}
