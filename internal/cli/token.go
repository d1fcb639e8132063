package cli

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/smsform/smsform/api"
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
			if herr, ok := tokenTrouble(err, a.Client.BaseURL, baseURLSource(c, env), a.Hours, "nothing was stored"); ok {
				return herr
			}
			return credentialsRefused(err, a.Client.BaseURL, baseURLSource(c, env), c.Provider.BasicAuth)
		}
		fmt.Fprintf(env.Stdout, "token stored for %s, valid till %s\n", a.Client.BaseURL, t.Format(time.RFC3339))
		return nil
	}
	return cmd
}

// tokenTrouble adds what to do to a failure of the token endpoint that
// says nothing about the credentials: nothing answering at the base URL,
// a certificate this machine does not trust, or a request the endpoint
// refused as malformed (400). base is the base URL called, from where it
// came, hours the valid_hour asked for, again what to say of the outcome.
// It reports false for any other error.
func tokenTrouble(err error, base, from string, hours int, again string) (error, bool) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err, false
	}
	if fix, ok := reachTrouble(ae, base, from); ok {
		return withHint(err, "%s; %s", fix, again), true
	}
	if ae.Status != http.StatusBadRequest {
		return err, false
	}
	asked := "valid_hour was not sent (the provider's default applies)"
	if hours > 0 {
		asked = fmt.Sprintf("valid_hour was %d (provider.token_valid_hours; the spec allows 1 to 168, a provider may allow less)", hours)
	}
	return withHint(err, "the token endpoint refused the request itself (400), not the credentials: the likely cause is valid_hour or grant_type "+
		"(client_credentials); %s: try a smaller provider.token_valid_hours, and read the provider's words above; %s", asked, again), true
}

// reachTrouble is what to do when a request could not reach the provider
// at base (from where it came); false when ae is not such a failure.
func reachTrouble(ae *api.Error, base, from string) (string, bool) {
	switch ae.Trouble {
	case api.TroubleCertificate:
		return fmt.Sprintf("the TLS certificate of %s (base URL %s, from %s) is not trusted by this machine: "+
			"check that the base URL names the provider's own host; if its certificate comes from a private or corporate CA, "+
			"give that CA's PEM bundle in SSL_CERT_FILE (smsform never skips certificate checks)", ae.Host, base, from), true
	case api.TroubleRefused:
		return fmt.Sprintf("nothing accepts connections at %s (base URL %s, from %s): check its host and port, and that the provider (or smsform sandbox) is running",
			ae.Host, base, from), true
	case api.TroubleDNS:
		return fmt.Sprintf("the host of the base URL %s (from %s) does not resolve: check its spelling and this machine's DNS", base, from), true
	case api.TroublePlainHTTP:
		return fmt.Sprintf("%s speaks plain HTTP, but the base URL %s (from %s) says https: use http:// for a loopback sandbox, or the provider's HTTPS port",
			ae.Host, base, from), true
	}
	return "", false
}

// credentialsRefused adds what to do to a token endpoint's refusal of the
// client credentials (401, invalid_client): where they come from, and
// that the secret is never shown, so that nobody looks for it in the
// output. basicAuth is provider.basic_auth: auto has tried both Basic
// forms already, base64 or literal may be the wrong one. Any other error
// is returned as it is.
func credentialsRefused(err error, base, from, basicAuth string) error {
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		return err
	}
	other := ""
	switch basicAuth {
	case "base64":
		other = "; if they are right, the provider may want the other Basic form: set provider.basic_auth: literal"
	case "literal":
		other = "; if they are right, the provider may want the other Basic form: set provider.basic_auth: base64"
	}
	return withHint(err, "the provider at %s (base URL from %s) refused the client credentials: check %s and %s in the environment "+
		"(smsform never prints the secret, so compare it where it is set)%s; nothing was stored", base, from, envClientID, envClientSecret, other)
}
