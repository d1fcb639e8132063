// Package baseurl holds the one rule for the messaging API's base URL, so
// that a campaign file (campaign) and the connection apply makes
// (internal/cli) judge it alike: an absolute http or https URL with a host
// and no credentials, and https unless it stays on this machine.
package baseurl

import (
	"errors"
	"net/url"
	"strings"

	"github.com/smsform/smsform/internal/loopback"
)

// ErrCredentials is returned by [Check] for a URL that holds anything before
// its host (user:password@): credentials come from the environment, and a
// URL gets printed.
var ErrCredentials = errors.New("holds credentials before the host")

// ErrNotHTTP is returned by [Check] for what is not an absolute http or
// https URL with a host.
var ErrNotHTTP = errors.New("is not an absolute http or https URL")

// Check returns raw, without trailing slashes, if it can be a base URL, else
// [ErrCredentials] or [ErrNotHTTP].
func Check(raw string) (string, error) {
	// Any @ is taken for credentials, before parsing: a password with an
	// unencoded / ? or # does not parse as one ("https://tok#en@host" has
	// host "tok"), and is still not to be sent anywhere or shown.
	if strings.Contains(raw, "@") {
		return "", ErrCredentials
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", ErrNotHTTP
	}
	return strings.TrimRight(raw, "/"), nil
}

// Exposed reports whether a token sent to base, which passed [Check], could
// be read on the way: plain http to a host that is not loopback.
func Exposed(base string) bool {
	u, err := url.Parse(base)
	return err != nil || u.Scheme == "http" && !loopback.Host(u.Hostname())
}
