package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/smsform/smsform/state"
)

// newGrantReadonlyCmd is `smsform state grant-readonly ROLE`: the SQL that
// lets a plan job's role read a PostgreSQL state and nothing more, printed
// for a database owner to run, or run at once with --execute.
func newGrantReadonlyCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "grant-readonly ROLE", Args: positional(1, 1, "one role")}
	fs := cmd.Flags()
	fs.String("state", "", "the PostgreSQL state, as the role that applies reaches it (default: "+envState+", else the project file's)")
	execute := fs.Bool("execute", false, "run the SQL, creating or migrating smsform's schema first, instead of printing it")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		choice, err := chooseState(env, "grant-readonly", fs.Lookup("state"))
		if err != nil {
			return err
		}
		if choice.source == fromDefault {
			return withHint(fmt.Errorf("%w: which state? give --state, set %s, or run this in a project whose %s names one", ErrUsage, envState, "smsform.yaml"),
				"smsform state grant-readonly %s --state postgres://APPLY_ROLE@HOST/DB", pos[0])
		}
		role := pos[0]
		stmts, err := state.ReadOnlyGrants(choice.loc, role)
		if err != nil {
			return err
		}
		if !*execute {
			return writeGrants(env, choice, role, stmts)
		}
		if err := state.Grant(cmd.Context(), choice.loc, role); err != nil {
			return withHint(err, "run it as the role that applies (it owns smsform's tables) or a superuser; the role %s must exist (CREATE ROLE %s LOGIN)", role, role)
		}
		fmt.Fprintf(env.Stdout, "granted %s reading state %s (%s), its tables of this and later schema versions; nothing else\n", role, choice.shown(), choice.from())
		return nil
	}
	return cmd
}

// writeGrants prints the SQL as a script psql runs.
func writeGrants(env Env, choice stateChoice, role string, stmts []string) error {
	owner := state.Role(choice.loc)
	quoted := `"` + strings.ReplaceAll(role, `"`, `""`) + `"`
	_, err := fmt.Fprintf(env.Stdout, `-- smsform: let the role %[1]s read the state %[2]s and nothing more.
-- Run as %[3]s, the role that applies (it owns smsform's tables and creates
-- those of later versions), or as a superuser; the role %[1]s must exist:
--   CREATE ROLE %[5]s LOGIN PASSWORD '...';
-- smsform state grant-readonly %[1]s --execute runs it, migrating the schema first.
%[4]s;
`, role, choice.shown(), owner, strings.Join(stmts, ";\n"), quoted)
	return err
}

// readOnlyHint says what to do when a role may not read the state's schema:
// a plan job's role that was never granted it.
func readOnlyHint(err error, loc state.Location) error {
	if !state.IsPermissionDenied(err) {
		return err
	}
	return withHint(err, "the role %s may not read the state: grant it once, as the role that applies: smsform state grant-readonly %s --state URL-OF-THE-APPLY-ROLE --execute (without --execute it prints the SQL)",
		state.Role(loc), state.Role(loc))
}

// writeHint says what to do when a role may not write the state: one given
// smsform state grant-readonly (a plan job's) running a command that
// changes it.
func writeHint(err error, loc state.Location) error {
	if !state.IsPermissionDenied(err) {
		return err
	}
	return withHint(err, "nothing was changed: the role %s may not change the state (a role given smsform state grant-readonly may only plan and list); run this as the role that applies (its URL in --state or %s, its password in PGPASSWORD)",
		state.Role(loc), envState)
}
