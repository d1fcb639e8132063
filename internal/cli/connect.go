package cli

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/baseurl"
	"github.com/smsform/smsform/internal/loopback"
	"github.com/smsform/smsform/internal/redact"
	"github.com/smsform/smsform/internal/tokenstore"
)

// Environment variables smsform reads. Secrets live only here, never in
// campaign, state or plan files.
const (
	envBaseURL      = "SMSFORM_BASE_URL"
	envClientID     = "SMSFORM_CLIENT_ID"
	envClientSecret = "SMSFORM_CLIENT_SECRET"
	envToken        = "SMSFORM_TOKEN"
)

// connection settles where and as whom to call the API, before anything is
// touched, and returns a sender that holds the token.
func connection(c *campaign.Campaign, env Env, insecureHTTP bool, timeout time.Duration) (*api.Authenticated, error) {
	a, err := connectionLater(c, env, insecureHTTP, timeout)
	if err != nil {
		return nil, err
	}
	if a.Static == "" && (a.Client.ClientID == "" || a.Client.ClientSecret == "") {
		return nil, noCredentials(a.Client.BaseURL)
	}
	return a, nil
}

// connectionLater is connection for apply, which asks for a token only
// once it knows there is something to send: credentials missing are said
// then (api.ErrNoCredentials), after what the state says.
func connectionLater(c *campaign.Campaign, env Env, insecureHTTP bool, timeout time.Duration) (*api.Authenticated, error) {
	base, err := baseURL(c, env, insecureHTTP)
	if err != nil {
		return nil, err
	}
	client := &api.Client{
		BaseURL:        base,
		ClientID:       env.Getenv(envClientID),
		ClientSecret:   env.Getenv(envClientSecret),
		Basic:          basicForm(c.Provider.BasicAuth),
		RequestIDField: c.Provider.RequestIDField,
		Results:        c.Provider.Results,
		Timeout:        timeout,
	}
	static := env.Getenv(envToken)
	a := &api.Authenticated{Client: client, Static: static, Hours: c.Provider.TokenValidHours}
	if static == "" {
		dir, err := tokenstore.DefaultDir(env.Getenv)
		if err != nil {
			return nil, err
		}
		if a.Store, err = tokenstore.Open(dir); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// noCredentials is api.ErrNoCredentials with what to set; against an API
// on this machine (the sandbox, most likely), where to find them.
func noCredentials(base string) error {
	if u, err := url.Parse(base); err == nil && loopback.Host(u.Hostname()) {
		return withHint(api.ErrNoCredentials, "export %s and %s: the sandbox's are the ones it was started with (%s and %s), or those it printed as it started",
			envClientID, envClientSecret, "SMSFORM_SANDBOX_CLIENT_ID", "SMSFORM_SANDBOX_CLIENT_SECRET")
	}
	return withHint(api.ErrNoCredentials, "export %s and %s (from your CI's secrets), or a token in %s", envClientID, envClientSecret, envToken)
}

// baseURLSource says where the base URL comes from, for messages that ask
// to fix it.
func baseURLSource(c *campaign.Campaign, env Env) string {
	if env.Getenv(envBaseURL) != "" {
		return envBaseURL
	}
	return "provider.base_url in " + c.Path
}

// baseURL is SMSFORM_BASE_URL, else the campaign's provider.base_url. It
// must be https, except on loopback, unless insecureHTTP: a token sent over
// plain HTTP can be read on the way. It must not hold credentials
// (user:password@): they belong in the environment, and a URL gets printed.
func baseURL(c *campaign.Campaign, env Env, insecureHTTP bool) (string, error) {
	raw, from := env.Getenv(envBaseURL), baseURLSource(c, env)
	if raw == "" {
		raw = c.Provider.BaseURL
	}
	if raw == "" {
		return "", withHint(errors.New("no API base URL"), "set provider.base_url in %s or export %s", c.Path, envBaseURL)
	}
	base, err := baseurl.Check(raw)
	switch {
	case errors.Is(err, baseurl.ErrCredentials):
		return "", withHint(fmt.Errorf("base URL %s (%s) %w; smsform does not send them", redact.URL(raw), from, err),
			"remove the user:password@ part; give the client credentials in %s and %s", envClientID, envClientSecret)
	case err != nil:
		return "", withHint(fmt.Errorf("base URL %q (%s) is not an http(s) URL", redact.URL(raw), from), "write it like https://api.example.com")
	case !insecureHTTP && baseurl.Exposed(base):
		return "", withHint(fmt.Errorf("base URL %s is plain http: the token would cross the network unencrypted", redact.URL(raw)),
			"use https, or pass --insecure-http if you really mean it")
	}
	return base, nil
}

// basicForm is the client's Basic form for provider.basic_auth: "auto" leaves
// it to the client (base64, then the literal form once on a 401).
func basicForm(basicAuth string) string {
	if basicAuth == "auto" {
		return ""
	}
	return basicAuth
}
