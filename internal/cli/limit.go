package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/words"
)

// A canary: apply --limit N (or P%) sends the first batches of the plan,
// whole, while their recipients stay within N, and stops with exit 0 and
// what is left; the next apply carries on.

// limitFlag is --limit as given: N recipients, or P percent of what is
// left to send.
type limitFlag struct {
	n       int
	percent float64 // > 0: a share of what is left to send
}

// parseLimit reads --limit: "" (none), "500" or "1%" (a share of what is
// left to send, 0 < P <= 100).
func parseLimit(s string) (limitFlag, error) {
	if s == "" {
		return limitFlag{}, nil
	}
	bad := withHint(fmt.Errorf("%w: --limit %q is neither a number of recipients nor a percentage", ErrUsage, s),
		"write --limit 500 (recipients) or --limit 1%% (of what is left to send)")
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(v) {
			return limitFlag{}, bad
		}
		if v <= 0 || v > 100 {
			hint := "write --limit 100% to send everything left, or a number of recipients (--limit 500)"
			if v <= 0 {
				hint = "write --limit 1% for a canary of a hundredth of what is left, or a number of recipients (--limit 500)"
			}
			return limitFlag{}, withHint(fmt.Errorf("%w: --limit %q is not a share of what is left to send: a percentage is more than 0 and at most 100", ErrUsage, s), "%s", hint)
		}
		return limitFlag{percent: v}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return limitFlag{}, bad
	}
	if n < 1 {
		return limitFlag{}, withHint(fmt.Errorf("%w: --limit %q sends nobody: a number of recipients is at least 1", ErrUsage, s),
			"write --limit 1 for a canary of one recipient, or leave --limit out to send everything left")
	}
	return limitFlag{n: n}, nil
}

// of is the limit in recipients, for a plan with toSend left to send: at
// least one recipient when there is anything to send.
func (l limitFlag) of(toSend int) int {
	if l.percent == 0 {
		return l.n
	}
	return max(1, int(math.Floor(float64(toSend)*l.percent/100)))
}

// limitStopped says, for a run that stopped at --limit, what went and what
// is left, and how to carry on; ok reports that the run ended there and
// nothing else is to be said (exit 0). A run that stopped at the limit
// owing recipients ends with their error all the same (exit 3).
func (n nextStep) limitStopped(res *apply.Result, err error, jsonOut bool) (ok bool) {
	if res == nil || !res.LimitReached {
		return false
	}
	if !jsonOut { // with --json the summary says limit_reached and what was skipped
		again := "run apply again to carry on"
		if n.saved != nil {
			again = fmt.Sprintf("smsform apply %s sends the rest of this plan", n.planFile)
		}
		fmt.Fprintf(n.env.Stdout, "\nStopped at --limit %s: %s left to send: %s.\n", words.Count(res.Limit),
			words.N(res.Skipped+res.Waiting, "recipient", "recipients"), again)
	}
	return errors.As(err, new(*apply.LimitError))
}
