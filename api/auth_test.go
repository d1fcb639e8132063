package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/tokenstore"
)

// provider is a token endpoint and a send endpoint that count what they
// get; a send is accepted only with the last token issued (or with
// accepted, when set), so a token it did not issue is refused with 401.
type provider struct {
	mu        sync.Mutex
	issued    int
	sends     int
	last      string
	accepted  string
	tokenDown bool // the token endpoint answers 503
	revoke    bool // the next send is refused, as if the token were revoked
	refuseAll bool // every send is refused with 401
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r.URL.Path {
	case api.TokenPath:
		if p.tokenDown {
			api.WriteError(w, http.StatusServiceUnavailable, "unavailable", "try later")
			return
		}
		p.issued++
		p.last = fmt.Sprintf("tok-%d", p.issued)
		api.WriteJSON(w, http.StatusOK, api.TokenResponse{AccessToken: p.last,
			ValidTill: time.Now().UTC().Add(time.Hour).Format(api.ValidTillLayout)})
	case api.SendPath:
		p.sends++
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if p.revoke || p.refuseAll || (tok != p.last && tok != p.accepted) {
			p.revoke = false
			api.WriteError(w, http.StatusUnauthorized, "invalid_token", "token refused")
			return
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		http.NotFound(w, r)
	}
}

func (p *provider) counts() (issued, sends int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issued, p.sends
}

var req = api.SendRequest{From: "ACME", To: []string{"+447700900123"}, Body: "hello"}

func TestAuthenticated(t *testing.T) {
	tests := []struct {
		name string
		// run sends through a (and others it makes on the same server and
		// store) and returns the last error.
		run                        func(t *testing.T, p *provider, a func(secret, static string) *api.Authenticated) error
		wantIssued, wantSends      int
		wantErr                    string
		wantTokenError, wantErr401 bool
	}{
		{name: "one token for many sends", wantIssued: 1, wantSends: 3,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				s := a("s3cret", "")
				for range 3 {
					if _, err := s.Send(context.Background(), req); err != nil {
						return err
					}
				}
				return nil
			}},
		{name: "the next run reuses the stored token", wantIssued: 1, wantSends: 2,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				if _, err := a("s3cret", "").Send(context.Background(), req); err != nil {
					return err
				}
				_, err := a("s3cret", "").Send(context.Background(), req)
				return err
			}},
		{name: "a changed secret does not ride on the stored token", wantIssued: 2, wantSends: 2,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				if _, err := a("s3cret", "").Send(context.Background(), req); err != nil {
					return err
				}
				_, err := a("another", "").Send(context.Background(), req)
				return err
			}},
		{name: "a 401 issues a new token once and resends", wantIssued: 2, wantSends: 3,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				s := a("s3cret", "")
				if _, err := s.Send(context.Background(), req); err != nil {
					return err
				}
				p.mu.Lock()
				p.revoke = true
				p.mu.Unlock()
				_, err := s.Send(context.Background(), req)
				return err
			}},
		{name: "a fresh token refused too is an error", wantIssued: 2, wantSends: 2, wantErr: "freshly issued token", wantErr401: true,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				p.refuseAll = true
				_, err := a("s3cret", "").Send(context.Background(), req)
				return err
			}},
		{name: "SMSFORM_TOKEN is used as given", wantIssued: 0, wantSends: 1,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				p.accepted = "static-token"
				_, err := a("", "static-token").Send(context.Background(), req)
				return err
			}},
		{name: "SMSFORM_TOKEN refused without credentials", wantIssued: 0, wantSends: 1, wantErr: api.ErrTokenRefused.Error(), wantTokenError: true,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				_, err := a("", "static-token").Send(context.Background(), req)
				if !errors.Is(err, api.ErrTokenRefused) {
					t.Errorf("err = %v, want ErrTokenRefused", err)
				}
				return err
			}},
		{name: "no token to be had: nothing sent", wantIssued: 0, wantSends: 0, wantErr: "503", wantTokenError: true,
			run: func(t *testing.T, p *provider, a func(string, string) *api.Authenticated) error {
				p.tokenDown = true
				_, err := a("s3cret", "").Send(context.Background(), req)
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &provider{}
			srv := httptest.NewServer(p)
			defer srv.Close()
			store, err := tokenstore.Open(filepath.Join(t.TempDir(), "tokens"))
			if err != nil {
				t.Fatal(err)
			}
			a := func(secret, static string) *api.Authenticated {
				c := &api.Client{BaseURL: srv.URL, ClientID: "me", ClientSecret: secret}
				if secret == "" {
					c.ClientID = ""
				}
				a := &api.Authenticated{Client: c, Static: static, Hours: 1}
				if static == "" {
					a.Store = store
				}
				return a
			}
			err = tt.run(t, p, a)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
			if got := errors.As(err, new(*api.TokenError)); got != tt.wantTokenError {
				t.Errorf("err %v is a TokenError: %v, want %v", err, got, tt.wantTokenError)
			}
			var ae *api.Error
			if got := errors.As(err, &ae) && ae.Status == 401; got != tt.wantErr401 {
				t.Errorf("err %v is a 401: %v, want %v", err, got, tt.wantErr401)
			}
			if issued, sends := p.counts(); issued != tt.wantIssued || sends != tt.wantSends {
				t.Errorf("%d token(s) issued and %d send request(s), want %d and %d", issued, sends, tt.wantIssued, tt.wantSends)
			}
		})
	}
}
