package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/receive"
)

// newReportsCmd is the command group of delivery reports: import here;
// each subcommand is a command of its own, added below.
func newReportsCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "reports",
		Args: unknownCommand,
		RunE: func(*cobra.Command, []string) error {
			return withHint(fmt.Errorf("%w: smsform reports takes a subcommand", ErrUsage), "run smsform reports --help")
		},
	}
	cmd.AddCommand(newReportsImportCmd(env), newReportsShowCmd(env))
	return cmd
}

// newReportsShowCmd is reports show: what the provider reported of a
// campaign, read from its state, with what the undelivered messages cost.
func newReportsShowCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "show CAMPAIGN.yaml"}
	fs := cmd.Flags()
	fs.String("state", "", stateFlagUsage)
	format := fs.String("format", "table", "table or markdown")
	jsonOut := fs.Bool("json", false, "print one JSON document")
	cmd.Args = positional(1, 1, "one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *format != "table" && *format != "markdown" {
			return withHint(fmt.Errorf("%w: --format %q: table or markdown", ErrUsage, *format), "e.g. --format markdown, or --json")
		}
		d, err := deliveryOf(ctx, env, pos[0], fs.Lookup("state"))
		if err != nil {
			return err
		}
		switch {
		case *jsonOut:
			return report.WriteDeliveryJSON(env.Stdout, d)
		case *format == "markdown":
			return report.WriteDeliveryMarkdown(env.Stdout, d)
		}
		return report.WriteDeliveryTable(env.Stdout, d)
	}
	return cmd
}

// deliveryOf reads what the provider reported of the campaign at path from
// its state and prices the undelivered messages as plan prices a send.
func deliveryOf(ctx context.Context, env Env, path string, flag *pflag.Flag) (report.Delivery, error) {
	c, err := campaign.Load(path)
	if err != nil {
		return report.Delivery{}, err
	}
	choice, err := chooseState(env, path, flag)
	if err != nil {
		return report.Delivery{}, err
	}
	st, err := choice.openView(ctx, c.Name)
	if err != nil {
		return report.Delivery{}, err
	}
	defer st.Close()
	if st.Lineage() == "" {
		return report.Delivery{}, choice.noRecord(ctx, c.Name)
	}
	if m := st.Moved(); m != nil {
		warnf(env, "the record of campaign %s at %s was moved to %s on %s: what follows is what it held then; its reports since are recorded there (name that state with --state or in the project file)",
			c.Name, choice.shown(), m.To, m.At.UTC().Format(time.RFC3339))
	}
	sum, err := st.DeliverySummary(ctx)
	if err != nil {
		return report.Delivery{}, err
	}
	d := report.Delivery{Campaign: c.Name, Summary: sum}
	if sum.Undelivered > 0 {
		// The state keeps a hash of each body, not the body: the campaign
		// renders it again, as plan does to price what was already spent.
		p, err := plan.ComputeWith(ctx, c, st, plan.Options{Undelivered: sum.UndeliveredPhones})
		if p == nil {
			return d, err
		}
		d.Cost = p.Undelivered
	}
	return d, nil
}

func newReportsImportCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "import FILE"}
	fs := cmd.Flags()
	project := fs.String("project", "", projectFlagUsage)
	fs.String("state", "", "the project's state (default: the project file's; it may only name that same state)")
	format := fs.String("format", "", "csv (a header row; each pointer of provider.reports names a column: /status is the column status) or jsonl (a JSON document a line, read as a posted body); default: from the file's name")
	jsonOut := fs.Bool("json", false, "print one JSON document")
	cmd.Args = positional(1, 1, "one file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		f, err := importFormat(pos[0], *format)
		if err != nil {
			return err
		}
		ledger, err := receiverLedger(env, *project, fs.Lookup("state"))
		if err != nil {
			return err
		}
		if ledger.project.Reports == nil {
			return withHint(fmt.Errorf("%s maps no reports (provider.reports): there is no way to read %s", ledger.project.Path, pos[0]),
				"add provider.reports to %s, the same mapping smsform receive reads; see docs/reports.md", campaign.ProjectFile)
		}
		im := receive.Import{Reports: ledger.project.Reports}
		// A file the mapping cannot read is refused before the state is
		// even opened.
		if err := im.Check(pos[0], f); err != nil {
			return importError(err, receive.Imported{})
		}
		rcv, err := openReceiver(ctx, ledger)
		if err != nil {
			return err
		}
		defer rcv.Close()
		im.Record = rcv
		got, err := im.File(ctx, pos[0], f)
		if err != nil {
			return importError(err, got)
		}
		out := report.Imported{File: pos[0], Imported: got}
		if *jsonOut {
			return report.WriteImportedJSON(env.Stdout, out)
		}
		return report.WriteImported(env.Stdout, out)
	}
	return cmd
}

// importFormat is --format, else what the file's name says.
func importFormat(path, flag string) (receive.Format, error) {
	switch f := receive.Format(flag); {
	case f == receive.CSV || f == receive.JSONLines:
		return f, nil
	case flag != "":
		return "", withHint(fmt.Errorf("%w: --format %q: csv or jsonl", ErrUsage, flag), "e.g. --format csv")
	}
	if f := receive.FormatOf(path); f != "" {
		return f, nil
	}
	return "", withHint(fmt.Errorf("%w: cannot tell the format of %s from its name", ErrUsage, campaign.Plain(path)),
		"pass --format csv (a header row) or --format jsonl (a JSON document a line)")
}

// importError says what an import that stopped left: what came before
// the line that stopped it is recorded, and importing again is safe.
func importError(err error, got receive.Imported) error {
	if _, joined := err.(interface{ Unwrap() []error }); joined {
		return err // the reports before the line were not recorded either: it says so
	}
	done := words.N(got.Reports, "report", "reports") + " before it recorded"
	var le *receive.LineError
	switch {
	case errors.Is(err, context.Canceled):
		return withHint(fmt.Errorf("%w: %s recorded", apply.ErrInterrupted, words.N(got.Reports, "report", "reports")),
			"import the file again to carry on: a report recorded before counts once")
	case errors.As(err, &le) && got.Reports == 0:
		return withHint(fmt.Errorf("%w (nothing was recorded)", err),
			"fix the file, or provider.reports in %s, and import it again", campaign.ProjectFile)
	case errors.As(err, &le):
		return withHint(fmt.Errorf("%w (%s; nothing after it)", err, done),
			"fix that line and import the file again: the reports before it count once")
	}
	return err
}
