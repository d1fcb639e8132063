package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/loopback"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/receive"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// What happens after the send concerns a project: `smsform receive` and
// `smsform reports` serve the project of the current folder (or
// --project), and record into its state (or --state, which may name only
// that same state when the project file names one).

func newReceiveCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "receive"}
	fs := cmd.Flags()
	listen := fs.String("listen", receive.DefaultAddr, "address to listen on, HOST:PORT (port 0 picks a free one); off loopback, put a TLS proxy in front")
	project := fs.String("project", "", projectFlagUsage)
	fs.String("state", "", "the project's state (default: the project file's; it may only name that same state)")
	quiet := fs.Bool("quiet", false, "log nothing (by default one line per request on stderr, never a number or a secret)")
	cmd.Args = positional(0, 0, "no arguments, only flags")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		ledger, err := receiverLedger(env, *project, fs.Lookup("state"))
		if err != nil {
			return err
		}
		p := ledger.project
		cfg, err := receiveConfig(env, p)
		if err != nil {
			return err
		}
		if !*quiet {
			cfg.Log = slog.New(slog.NewTextHandler(env.Stderr, nil))
		}
		// The port first: a port in use is refused before the state is
		// opened (and created).
		ln, err := listenReceive(env, *listen)
		if err != nil {
			return err
		}
		defer ln.Close()
		rcv, err := openReceiver(ctx, ledger)
		if err != nil {
			return err
		}
		defer rcv.Close()
		cfg.Record = rcv
		srv, err := receive.New(cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "listening on http://%s\n", ln.Addr())
		return srv.Serve(ctx, ln)
	}
	return cmd
}

// receiverLedger is the state reports and replies go into: the project's
// (found from dir, else the current folder), or --state or SMSFORM_STATE
// naming that same state; one of them must name one.
func receiverLedger(env Env, dir string, stateFlag *pflag.Flag) (stateChoice, error) {
	proj, dir, err := projectAt(dir)
	if err != nil {
		return stateChoice{}, err
	}
	if proj == nil {
		return stateChoice{}, withHint(fmt.Errorf("no %s in %s or any folder above it: reports and replies are read with a project's provider block and kept in its state", campaign.ProjectFile, dir),
			"run this in the project's folder, or pass --project DIR")
	}
	c, err := chooseState(env, proj.Path, stateFlag)
	if err != nil {
		return stateChoice{}, err
	}
	if c.source == fromDefault {
		return stateChoice{}, withHint(fmt.Errorf("%s names no state: reports and replies are kept in the project's state, with every campaign's record", proj.Path),
			"add state: to %s (a folder for the state file, e.g. state: .smsform/, or a PostgreSQL database)", proj.Path)
	}
	// Reports recorded in a state the project's earlier ledger was not
	// carried into would be recorded beside their campaigns' records.
	if err := c.projectSplit(context.Background()); err != nil {
		return stateChoice{}, withHint(err, "migrate first: nothing was recorded")
	}
	return c, nil
}

// receiveConfig is what `smsform receive` serves of project p: its
// mappings, and how the provider's posts are authenticated.
func receiveConfig(env Env, p *campaign.Project) (receive.Config, error) {
	if p.Receive == nil {
		return receive.Config{}, withHint(fmt.Errorf("%s has no receive: block: smsform receive takes only posts it can authenticate", p.Path),
			"add receive: {auth: hmac-sha256, header: HEADER} to %s, HEADER being the one your provider signs its posts with (the sandbox signs with %s), or auth: basic, bearer or query; see docs/reports.md", campaign.ProjectFile, sandbox.SignatureHeader)
	}
	if p.Reports == nil && p.Replies == nil {
		return receive.Config{}, withHint(fmt.Errorf("%s maps no reports and no replies: nothing to receive", p.Path),
			"add provider.reports and provider.replies to %s; see docs/reports.md (docs/sandbox.md has those that read the sandbox)", campaign.ProjectFile)
	}
	cfg := receive.Config{Reports: p.Reports, Replies: p.Replies,
		Auth: receive.Auth{Kind: p.Receive.Auth, Header: p.Receive.Header, Secret: env.Getenv(receive.SecretEnv)}}
	if err := cfg.Auth.Check(); err != nil {
		return receive.Config{}, withHint(fmt.Errorf("%s: %w", receive.SecretEnv, err),
			"set %s to a long random secret (e.g. openssl rand -hex 32) and give the provider the same one", receive.SecretEnv)
	}
	return cfg, nil
}

// openReceiver opens the state to record reports and replies in.
func openReceiver(ctx context.Context, c stateChoice) (*state.Receiver, error) {
	if err := c.makeFolder(); err != nil {
		return nil, err
	}
	// A stop or start reply changes the project's opt-outs in the
	// transaction that records it.
	opts := state.ReceiverOptions{OptOuts: ledger.ReplyOptOuts()}
	if r := c.project.Receive; r != nil {
		opts.StopWords, opts.StartWords = r.StopWords, r.StartWords
	}
	rcv, err := state.OpenReceiver(ctx, c.loc, opts)
	if err != nil {
		return nil, movedError(fmt.Errorf("open the state %s (%s): %w", c.shown(), c.from(), err))
	}
	return rcv, nil
}

// listenReceive listens on addr, warning when it is off loopback: the
// server speaks plain HTTP, and what it takes holds phone numbers.
func listenReceive(env Env, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, withHint(fmt.Errorf("%w: --listen %q is not HOST:PORT", ErrUsage, addr), "e.g. --listen 127.0.0.1:8089")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, withHint(fmt.Errorf("listen on %s: %w", addr, err), "pick a free port with --listen, e.g. --listen 127.0.0.1:8090")
	}
	if !loopback.Host(host) {
		warnf(env, "listening on %s, off loopback, in plain HTTP: reports carry phone numbers; let only a TLS proxy reach it (see docs/reports.md)", addr)
	}
	return ln, nil
}
