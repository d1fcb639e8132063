package receive

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/smsform/smsform/campaign"
)

// SecretEnv names the environment variable the secret is read from: never
// a flag (ps would show it) nor the project file (git would keep it).
const SecretEnv = "SMSFORM_RECEIVE_SECRET"

// MinSecret is the shortest secret taken: a shorter one is guessed.
const MinSecret = 16

// ErrNoSecret refuses a server without a secret: it would take reports
// from anyone.
var ErrNoSecret = errors.New("no secret to authenticate the provider's posts with")

// Auth is how a post is known to come from the provider (the project
// file's receive: block, and the secret).
type Auth struct {
	Kind   string // campaign.AuthHMAC, AuthBasic, AuthBearer or AuthQuery
	Header string // AuthHMAC: the header that carries the signature
	Secret string
}

// Check refuses an Auth that would let anyone in.
func (a Auth) Check() error {
	switch {
	case a.Secret == "":
		return ErrNoSecret
	case len(a.Secret) < MinSecret:
		return fmt.Errorf("the secret is %d characters long: at least %d are needed", len(a.Secret), MinSecret)
	case a.Kind == campaign.AuthHMAC && a.Header == "":
		return errors.New("hmac-sha256 needs the header that carries the signature")
	case a.Kind != campaign.AuthHMAC && a.Kind != campaign.AuthBasic && a.Kind != campaign.AuthBearer && a.Kind != campaign.AuthQuery:
		return fmt.Errorf("unknown authentication %q", a.Kind)
	}
	return nil
}

// signsBody reports whether the body must be read before the post is
// authenticated: only a signature covers it. Every other kind is checked
// first, so that an unauthenticated body is never read.
func (a Auth) signsBody() bool { return a.Kind == campaign.AuthHMAC }

// Valid reports whether r, whose raw body is body (nil when not read
// yet: a kind that does not sign it), comes from the provider.
func (a Auth) Valid(r *http.Request, body []byte) bool {
	switch a.Kind {
	case campaign.AuthHMAC:
		return hmac.Equal([]byte(strings.TrimSpace(r.Header.Get(a.Header))), []byte(Sign(a.Secret, body)))
	case campaign.AuthBasic:
		_, pass, ok := r.BasicAuth()
		return ok && same(pass, a.Secret)
	case campaign.AuthBearer:
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		return ok && strings.EqualFold(scheme, "Bearer") && same(strings.TrimSpace(token), a.Secret)
	case campaign.AuthQuery:
		return same(r.URL.Query().Get("token"), a.Secret)
	}
	return false
}

// challenge is the WWW-Authenticate header of a 401, for the kinds HTTP
// has a scheme for.
func (a Auth) challenge() string {
	switch a.Kind {
	case campaign.AuthBasic:
		return `Basic realm="smsform receive"`
	case campaign.AuthBearer:
		return `Bearer realm="smsform receive"`
	}
	return ""
}

// Sign is the signature hmac-sha256 expects of body: the lowercase hex
// HMAC-SHA256 of the raw body under secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// same compares a secret given with the one expected in constant time,
// their lengths included: both are hashed first.
func same(given, secret string) bool {
	g, s := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(g[:], s[:]) == 1
}
