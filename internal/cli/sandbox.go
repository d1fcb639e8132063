package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/smsform/smsform/sandbox"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runSandbox serves the messaging API on loopback until interrupted.
func newSandboxCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox"}
	fs := cmd.Flags()
	addr := fs.String("addr", sandbox.DefaultAddr, "loopback address to listen on: 127.0.0.1, ::1 or localhost, and a port (0 picks a free one)")
	id := fs.String("client-id", env.Getenv("SMSFORM_SANDBOX_CLIENT_ID"), "client id to accept (default $SMSFORM_SANDBOX_CLIENT_ID, else generated)")
	secret := fs.String("client-secret", env.Getenv("SMSFORM_SANDBOX_CLIENT_SECRET"), "client secret to accept (default $SMSFORM_SANDBOX_CLIENT_SECRET, else generated)")
	outbox := fs.String("outbox", "", "append one JSON line per delivered message to this file")
	var cfg sandbox.Config
	fs.IntVar(&cfg.MaxRecipients, "max-recipients", sandbox.DefaultMaxRecipients, "most recipients in one request")
	fs.IntVar(&cfg.MaxBody, "max-body", sandbox.DefaultMaxBody, "longest body, in characters")
	fs.Float64Var(&cfg.FailRate, "fail-rate", 0, "share of sends answered 503 without acting")
	fs.Float64Var(&cfg.AmbiguousRate, "ambiguous-rate", 0, "share of sends acted on, then the connection dropped")
	fs.Float64Var(&cfg.ErrorRate, "error-rate", 0, "share of sends acted on, then answered 500")
	fs.IntVar(&cfg.RateLimit, "rate-limit", 0, "send requests per second beyond which 429 (0: none)")
	fs.Float64Var(&cfg.RejectRate, "reject-rate", 0, "share of recipients refused (REJECTED) inside a 200 and not delivered (with --success-body results)")
	fs.Float64Var(&cfg.ThrottleRate, "throttle-rate", 0, "share of recipients throttled (THROTTLED) inside a 200 and not delivered (with --success-body results)")
	fs.DurationVar(&cfg.DedupeWindow, "dedupe-window", 0, "answer 409 duplicate_request, without sending, to a repeat of the same sender, body and recipients within this long (0: never)")
	fs.DurationVar(&cfg.Latency, "latency", 0, "delay before every response")
	fs.DurationVar(&cfg.TokenTTL, "token-ttl", 0, "token lifetime (default: as valid_hour asks)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the fault draws, for repeatable runs")
	fs.BoolVar(&cfg.Forget, "forget", false, "keep no message in memory, only counts (and --outbox): for load tests of millions of messages; the messages endpoint then lists nothing")
	quiet := fs.Bool("quiet", false, "log nothing")
	fs.StringVar(&cfg.SuccessBody, "success-body", "sandbox", "body of an accepted send: sandbox (request_id, accepted, segments, and messages: each recipient's to and message_id), minimal ({\"message_id\"}), empty, or results (each recipient's status: {\"messages\":[{\"to\",\"messageId\",\"status\":{\"groupName\",\"description\"}}]})")
	fs.IntVar(&cfg.SuccessStatus, "success-status", 200, "status of an accepted send: 200, 201, 202 or 204 (no body)")
	fs.StringVar(&cfg.ErrorBody, "error-body", "json", "shape of error bodies: json ({\"error\":{\"code\",\"message\"}}), oauth ({\"error\",\"error_description\"}) or text")
	fs.StringVar(&cfg.Basic, "basic", "both", "Basic credentials the token endpoint takes: both, base64 or literal")
	reportFlags(fs, &cfg)
	cmd.Args = positional(0, 0, "no arguments, only flags")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		// The secret is never a flag's default: --help would print it.
		if !fs.Changed("reports-secret") {
			cfg.ReportsSecret = env.Getenv(sandbox.ReportsSecretEnv)
		}
		switch err := cfg.Check(); {
		case errors.Is(err, sandbox.ErrNotLoopback):
			return withHint(err, "run the receiver on this machine, e.g. --reports-to http://127.0.0.1:8089/reports; to reach one elsewhere, forward its port (ssh -R) instead")
		case errors.Is(err, sandbox.ErrNoReportsSecret):
			return withHint(fmt.Errorf("%w: %w", ErrUsage, err), "set %s to the secret the receiver checks (smsform receive reads SMSFORM_RECEIVE_SECRET)", sandbox.ReportsSecretEnv)
		case err != nil:
			return withHint(fmt.Errorf("%w: %w", ErrUsage, err), "run smsform sandbox --help")
		}
		if err := sandbox.CheckAddr(*addr); err != nil {
			return withHint(err, "listen on loopback, e.g. --addr 127.0.0.1:8080 (port 0 picks a free one); to reach it from elsewhere, forward the port (ssh -L) instead")
		}
		if *id == "" && *secret == "" {
			*id, *secret = "sandbox-"+rand.Text()[:8], rand.Text()
			fmt.Fprintf(env.Stderr, "smsform: sandbox credentials (made up for this run): SMSFORM_CLIENT_ID=%s SMSFORM_CLIENT_SECRET=%s\n", *id, *secret)
		}
		cfg.ClientID, cfg.ClientSecret = *id, *secret
		if !*quiet {
			cfg.Log = slog.New(slog.NewTextHandler(env.Stderr, nil))
		}
		if *outbox != "" {
			f, err := os.OpenFile(*outbox, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("open outbox: %w", err)
			}
			defer f.Close()
			cfg.Outbox = f
		}
		return sandbox.Run(ctx, *addr, cfg, env.Stdout)
	}
	return cmd
}

// reportFlags are the flags of delivery reports and replies.
func reportFlags(fs *pflag.FlagSet, cfg *sandbox.Config) {
	fs.StringVar(&cfg.ReportsTo, "reports-to", "", "post a signed delivery report for each message acted on to this loopback URL (e.g. http://127.0.0.1:8089/reports)")
	fs.StringVar(&cfg.RepliesTo, "replies-to", "", "post the STOP replies of --stop-rate to this loopback URL (e.g. http://127.0.0.1:8089/replies)")
	fs.StringVar(&cfg.ReportsSecret, "reports-secret", "", "key of the HMAC-SHA256 signature of every report and reply (default $"+sandbox.ReportsSecretEnv+")")
	fs.DurationVar(&cfg.ReportDelay, "report-delay", time.Second, "time from accepting a message to its report")
	fs.Float64Var(&cfg.UndeliveredRate, "undelivered-rate", 0, "share of reports UNDELIVERED, with a reason (the rest DELIVERED)")
	fs.Float64Var(&cfg.DuplicateRate, "duplicate-rate", 0.05, "share of reports posted twice")
	fs.Float64Var(&cfg.ReorderRate, "reorder-rate", 0.1, "share of reports held back, so that later ones overtake them")
	fs.Float64Var(&cfg.StopRate, "stop-rate", 0, "share of the recipients reached who reply STOP (needs --replies-to)")
	fs.DurationVar(&cfg.ReportBackoff, "report-backoff", sandbox.DefaultReportBackoff, "wait before posting again a report or reply not answered 2xx, doubled each time up to 20 times itself")
	fs.IntVar(&cfg.ReportConcurrency, "report-concurrency", sandbox.DefaultReportConcurrency, "most reports and replies posted at once")
}
