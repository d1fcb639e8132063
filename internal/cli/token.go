package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/smsform/smsform/campaign"
)

// runToken issues a token and stores it for apply to reuse. It never
// prints the token.
func runToken(ctx context.Context, args []string, env Env) error {
	fs := newFlags("token", "token [CAMPAIGN.yaml] [--insecure-http]", env)
	insecure := fs.Bool("insecure-http", false, "allow a plain-http base URL that is not loopback")
	pos, err := parse(fs, args, env, 0, 1, "at most one campaign file")
	if err != nil {
		return err
	}
	c := &campaign.Campaign{Path: "(no campaign)", Provider: campaign.Provider{TokenValidHours: 24}}
	if len(pos) == 1 {
		if c, err = campaign.Load(pos[0]); err != nil {
			return err
		}
	}
	a, err := connection(c, env, *insecure, 30*time.Second)
	if err != nil {
		return err
	}
	if a.Store == nil {
		return withHint(errors.New("SMSFORM_TOKEN is set: there is nothing to issue or store"), "unset SMSFORM_TOKEN to issue a token from the client credentials")
	}
	t, err := a.Issue(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "token stored for %s, valid till %s\n", a.Client.BaseURL, t.Format(time.RFC3339))
	return nil
}
