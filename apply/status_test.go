package apply_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/state"
)

// statusOfAnswer is what each HTTP status answering a send means for its
// batch.
var statusOfAnswer = map[int]state.Status{
	300: state.InDoubt, 301: state.Unsent, 302: state.Unsent, 303: state.InDoubt, 304: state.InDoubt, 307: state.Unsent, 308: state.Unsent,
	400: state.Failed, 401: state.Unsent, 403: state.Failed, 404: state.Unsent, 405: state.Unsent, 408: state.Unsent,
	409: state.InDoubt, 413: state.Unsent, 415: state.Failed, 418: state.Failed, 422: state.Failed, 429: state.Unsent,
	500: state.InDoubt, 501: state.InDoubt, 502: state.InDoubt, 503: state.Unsent, 504: state.InDoubt, 599: state.InDoubt,
}

func TestStatusOf(t *testing.T) {
	for code, want := range statusOfAnswer {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			if got := apply.StatusOf(&api.Error{Status: code, Reached: true}); got != want {
				t.Errorf("StatusOf(HTTP %d) = %v, want %v", code, got, want)
			}
		})
	}
	for _, tt := range []struct {
		name string
		err  api.Error
		want state.Status
	}{
		{"never left", api.Error{Err: errors.New("connection refused")}, state.Unsent},
		{"no answer after writing", api.Error{Err: errors.New("timeout"), Reached: true}, state.InDoubt},
		{"no token in a 200", api.Error{Status: 200, Reached: true, Message: "no token issued"}, state.Unsent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := apply.StatusOf(&tt.err); got != tt.want {
				t.Errorf("StatusOf(%+v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestStatusOfAnswers: what the client makes of a real answer, or of none,
// becomes the status the table above says.
func TestStatusOfAnswers(t *testing.T) {
	req := api.SendRequest{From: "Shop", To: []string{"+14155550101"}, Body: "hi"}
	for code, want := range statusOfAnswer {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				w.WriteHeader(code)
			}))
			defer srv.Close()
			_, err := (&api.Client{BaseURL: srv.URL, Timeout: 5 * time.Second}).Send(context.Background(), "tok", req)
			var ae *api.Error
			if !errors.As(err, &ae) {
				t.Fatalf("got %v, want an *api.Error", err)
			}
			if got := apply.StatusOf(ae); got != want {
				t.Errorf("HTTP %d: %v, want %v (%v)", code, got, want, err)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = (&api.Client{BaseURL: "http://" + addr, Timeout: 2 * time.Second}).Send(context.Background(), "tok", req)
		var ae *api.Error
		if !errors.As(err, &ae) || apply.StatusOf(ae) != state.Unsent {
			t.Errorf("got %v, want unsent", err)
		}
	})
	t.Run("dropped after reading", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		_, err := (&api.Client{BaseURL: srv.URL, Timeout: 5 * time.Second}).Send(context.Background(), "tok", req)
		var ae *api.Error
		if !errors.As(err, &ae) || apply.StatusOf(ae) != state.InDoubt {
			t.Errorf("got %v, want in doubt", err)
		}
	})
}
