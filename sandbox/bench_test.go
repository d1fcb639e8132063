package sandbox_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/sandbox"
)

// BenchmarkSend measures send requests per second of 100 recipients each,
// through the client, against a sandbox on loopback.
func BenchmarkSend(b *testing.B) {
	for _, bc := range []struct {
		name     string
		parallel bool
	}{{"sequential", false}, {"parallel", true}} {
		b.Run(bc.name, func(b *testing.B) {
			e := start(b, sandbox.Config{Outbox: io.Discard, Now: time.Now})
			tok := e.token(b)
			req := api.SendRequest{From: "ACME", To: numbers(b, 0, 100), Body: "Hi, the spring sale starts today. Reply STOP to opt out."}
			send := func() {
				if _, err := e.client.Send(context.Background(), tok, req); err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			begin := time.Now()
			if bc.parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						send()
					}
				})
			} else {
				for i := 0; i < b.N; i++ {
					send()
				}
			}
			elapsed := time.Since(begin)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(b.N*len(req.To))/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkReports measures delivery reports posted and acknowledged per
// second, from accepting the messages to the last acknowledgement, against
// a receiver on loopback that acknowledges each at once: what a receiver's
// load test can ask of the sandbox.
func BenchmarkReports(b *testing.B) {
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(rc.Close)
	e := start(b, sandbox.Config{Outbox: io.Discard, Now: time.Now, Forget: true,
		ReportsTo: rc.URL, ReportsSecret: "bench-secret"})
	tok := e.token(b)
	b.ReportAllocs()
	b.ResetTimer()
	begin := time.Now()
	for sent := 0; sent < b.N; sent += 1000 {
		req := api.SendRequest{From: "ACME", To: numbers(b, 0, min(1000, b.N-sent)), Body: "Hi, the spring sale starts today."}
		if _, err := e.client.Send(context.Background(), tok, req); err != nil {
			b.Fatal(err)
		}
	}
	for e.srv.Reports().Counts.Acknowledged < b.N {
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "reports/s")
}
