package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/smsform/smsform/state"
)

// envState names the state when --state does not: a path, or a postgres://
// URL shared by every campaign (each keeps its own record, by name).
const envState = "SMSFORM_STATE"

// stateLoc is where a campaign's state is: --state, else $SMSFORM_STATE,
// else the file next to the campaign. explicit is false for that file.
func stateLoc(env Env, campaignPath, flagValue string) (loc string, explicit bool) {
	if flagValue != "" {
		return flagValue, true
	}
	if v := env.Getenv(envState); v != "" {
		return v, true
	}
	return statePath(campaignPath, ""), false
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
// command line knows of (the state package adds its own): a saved plan
// made against a state, and a state file next to the campaign that records
// it while the state is elsewhere (not migrated?).
func earlierStateSigns(ctx context.Context, saved savedInfo, campaignPath, name, loc string) []string {
	var signs []string
	if saved.lineage != "" {
		signs = append(signs, fmt.Sprintf("the saved plan %s was made against state lineage %s (serial %d)", saved.file, saved.lineage, saved.serial))
	}
	if file := statePath(campaignPath, ""); file != loc {
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			if lock := state.LockFile(file, name); exists(lock) || exists(file+".lock") {
				if !exists(lock) {
					lock = file + ".lock"
				}
				signs = append(signs, fmt.Sprintf("%s exists (a state was used next to the campaign)", lock))
			}
		} else if err == nil {
			if st, err := state.OpenReadOnly(ctx, file, ""); err == nil {
				if st.Campaign() == name {
					signs = append(signs, fmt.Sprintf("%s next to the campaign records it (lineage %s, serial %d): to carry it over, smsform state migrate %s --from %s --to STATE",
						file, st.Lineage(), st.Serial(), campaignPath, file))
				}
				st.Close()
			}
		}
	}
	return signs
}

// savedInfo is what earlierStateSigns needs of a saved plan.
type savedInfo struct {
	file    string
	lineage string
	serial  int64
}

// earlierStateHint says what to do about an *state.EarlierStateError.
func earlierStateHint(err error, loc string) error {
	where := "restore it"
	if state.IsPostgres(loc) {
		where = "point --state (or " + envState + ") at the database and schema that hold it"
	} else {
		where = "restore the file (or point --state at it)"
	}
	return withHint(err, "if the earlier state exists, %s; if it is really lost, check with the provider who was messaged before anyone is messaged again: only then pass --new-state", where)
}

// shownState is a state location as messages show it: a URL's password masked.
func shownState(loc string) string { return state.Redact(loc) }

// savedStatePath is what a saved plan records of the state: a URL
// without its password, which apply then takes from PGPASSWORD or
// ~/.pgpass (or a --state / SMSFORM_STATE that holds it).
func savedStatePath(loc string) string {
	if !state.IsPostgres(loc) {
		return loc
	}
	return state.WithoutPassword(loc)
}

// hasPassword reports whether a state URL holds a password.
func hasPassword(loc string) bool {
	return state.IsPostgres(loc) && state.WithoutPassword(loc) != loc
}

// lockedHint says what to do about a state another apply holds, fitting
// how long this run already waited for it.
func lockedHint(err error, waited time.Duration) error {
	if waited > 0 {
		return withHint(err, "it was still held after waiting %s: let that apply finish, then run this again (or wait longer with a larger --lock-timeout)", waited)
	}
	return withHint(err, "wait for that apply to finish, or pass --lock-timeout 10m to wait for it")
}

// sayLockWait tells, on stderr, that the state is locked and how long
// --lock-timeout lets this command wait for it: a wait is never silent.
func sayLockWait(env Env) func(time.Duration) {
	return func(timeout time.Duration) {
		fmt.Fprintf(env.Stderr, "smsform: the state is locked by another run; waiting up to %s for it (--lock-timeout)\n", timeout)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
