package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/spf13/cobra"
)

// runToken issues a token and stores it for apply to reuse. It never
// prints the token.
func newTokenCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "token [CAMPAIGN.yaml]"}
	fs := cmd.Flags()
	insecure := fs.Bool("insecure-http", false, "allow a plain-http base URL that is not loopback")
	cmd.Args = positional(0, 1, "at most one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		c := &campaign.Campaign{Path: "(no campaign)", Provider: campaign.Provider{TokenValidHours: 24}}
		if len(pos) == 1 {
			var err error
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
	return cmd
}
