package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Authenticated sends through a [Client] with a valid token, so that the
// send loop never handles one: it reuses a stored token until shortly before
// its valid_till, issues a new one when needed, and on a 401 issues a new
// token once and resends (a 401 means the API did not act, so resending
// cannot message anyone twice).
type Authenticated struct {
	Client *Client
	Store  TokenStore       // nil: keep tokens in memory only
	Static string           // SMSFORM_TOKEN: used as given, never stored
	Hours  int              // valid_hour of issued tokens
	Now    func() time.Time // nil: time.Now

	mu      sync.Mutex
	basic   string // the Basic form that worked last, from the store
	token   string
	until   time.Time // when to stop using token: shortly before its valid_till
	refused string    // the last token the API refused
}

// TokenStore keeps issued tokens between runs (internal/tokenstore is
// one). It must keep a token to itself: tokens are secrets.
type TokenStore interface {
	// Get returns the token stored for k, and whether there is one.
	Get(k TokenKey) (Token, bool, error)
	// Put stores t for k, replacing any earlier one.
	Put(k TokenKey, t Token) error
}

// TokenKey is the credentials a token was issued to. A store files tokens
// under it, and must never write the secret itself.
type TokenKey struct {
	BaseURL, ClientID, ClientSecret string
}

// ErrNoCredentials means there is neither a token nor client credentials.
var ErrNoCredentials = errors.New("no credentials: set SMSFORM_CLIENT_ID and SMSFORM_CLIENT_SECRET, or SMSFORM_TOKEN")

// ErrTokenRefused means the API refused SMSFORM_TOKEN and there are no
// client credentials to issue another one.
var ErrTokenRefused = errors.New("SMSFORM_TOKEN was refused (401) and there are no client credentials to issue a new one")

// Send sends req with a valid token, renewing it once on a 401.
func (a *Authenticated) Send(ctx context.Context, req SendRequest) (SendResponse, error) {
	tok, err := a.Token(ctx)
	if err != nil {
		return SendResponse{}, &TokenError{err}
	}
	resp, err := a.Client.Send(ctx, tok, req)
	if !isUnauthorized(err) {
		return resp, err
	}
	a.refuse(tok)
	tok, terr := a.Token(ctx)
	if terr != nil {
		return SendResponse{}, &TokenError{fmt.Errorf("token refused (401) and no new one could be had: %w", terr)}
	}
	resp, err = a.Client.Send(ctx, tok, req)
	if isUnauthorized(err) {
		a.refuse(tok)
		return resp, fmt.Errorf("the API refused a freshly issued token (401): check the credentials and the base URL: %w", err)
	}
	return resp, err
}

// TokenError is a failure to get a token for a send. No request for the
// batch was made, so whatever the token endpoint answered (a 500, a timeout,
// a 400) says nothing about the batch: it is neither in doubt nor failed.
type TokenError struct{ Err error }

func (e *TokenError) Error() string { return e.Err.Error() }
func (e *TokenError) Unwrap() error { return e.Err }

func isUnauthorized(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == 401
}

func (a *Authenticated) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// refuse forgets tok after the API refused it, unless another request has
// already replaced it.
func (a *Authenticated) refuse(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = tok
	if a.token == tok {
		a.token = ""
	}
}

// Token returns a token to use now, from memory, SMSFORM_TOKEN, the store or
// the API, in that order.
func (a *Authenticated) Token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.token != "" && now.Before(a.until) {
		return a.token, nil
	}
	if a.Static != "" && a.Static != a.refused {
		a.token, a.until = a.Static, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		return a.token, nil
	}
	if a.Client.ClientID == "" || a.Client.ClientSecret == "" {
		if a.Static != "" {
			return "", ErrTokenRefused
		}
		return "", ErrNoCredentials
	}
	if a.Store != nil {
		t, ok, err := a.Store.Get(a.key())
		if err != nil {
			return "", err
		}
		a.basic = t.Basic
		if ok && t.Value != a.refused && now.Before(t.ValidTill.Add(-storedMargin)) {
			a.token, a.until = t.Value, t.ValidTill.Add(-storedMargin)
			return a.token, nil
		}
	}
	if _, err := a.issue(ctx, now); err != nil {
		return "", err
	}
	return a.token, nil
}

// Issue gets a new token from the API and stores it, whatever is held; it
// returns the token's valid_till.
func (a *Authenticated) Issue(ctx context.Context) (time.Time, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issue(ctx, a.now())
}

func (a *Authenticated) issue(ctx context.Context, now time.Time) (time.Time, error) {
	t, err := a.issueToken(ctx)
	if err != nil {
		return time.Time{}, err // the client's error already says "issue token"
	}
	a.token, a.until, a.basic = t.Value, t.ValidTill.Add(-margin(t.ValidTill.Sub(now))), t.Basic
	if a.Store != nil {
		if err := a.Store.Put(a.key(), t); err != nil {
			return time.Time{}, fmt.Errorf("store token: %w", err)
		}
	}
	return t.ValidTill, nil
}

// issueToken asks the client for a token, trying first the Basic form that
// worked last time when the campaign leaves the form open.
func (a *Authenticated) issueToken(ctx context.Context) (Token, error) {
	if a.Client.Basic != "" || a.basic == "" {
		return a.Client.IssueToken(ctx, a.Hours)
	}
	c := *a.Client
	c.Basic = a.basic
	t, err := c.IssueToken(ctx, a.Hours)
	if !isUnauthorized(err) {
		return t, err
	}
	return a.Client.IssueToken(ctx, a.Hours) // the provider changed its mind: try both forms
}

// key is what the store files a token under: the credentials that issued it.
func (a *Authenticated) key() TokenKey {
	return TokenKey{BaseURL: a.Client.BaseURL, ClientID: a.Client.ClientID, ClientSecret: a.Client.ClientSecret}
}

// storedMargin is how long before its valid_till a stored token is
// replaced, so that it does not expire in the middle of a run.
const storedMargin = time.Minute

// margin is how long before its valid_till a token issued in this run is
// replaced: a tenth of its life, at most a minute, so that short-lived tokens
// (tests, --token-ttl) are still used.
func margin(life time.Duration) time.Duration {
	return min(life/10, time.Minute)
}
