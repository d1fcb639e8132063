package cli

import (
	"fmt"
	"strings"

	"github.com/smsform/smsform/internal/exitcode"
	"github.com/smsform/smsform/sandbox"
	"github.com/spf13/cobra"
)

// helpText is what `smsform help CMD` says of each command besides its
// flags: what it does, the environment it reads, its exit codes, examples.
// Kept in one place so the texts read as one manual.
type helpText struct {
	short, long, example string
	env                  []string        // names from envHelp
	exits                []exitcode.Code // the exit codes this command uses; the root lists them all
	args                 []string        // file extensions its arguments complete to
}

var envHelp = map[string]string{
	"SMSFORM_BASE_URL":                      "the API's base URL; overrides provider.base_url",
	"SMSFORM_CLIENT_ID":                     "client id for token issuance",
	"SMSFORM_CLIENT_SECRET":                 "client secret for token issuance",
	"SMSFORM_TOKEN":                         "a token to use as is (never stored)",
	"SMSFORM_TOKEN_DIR":                     "where tokens are stored (default: the user's cache folder + smsform/tokens)",
	"SMSFORM_STATE":                         "the state: a file path or a postgres:// URL (--state wins)",
	"PGHOST, PGUSER, PGPASSWORD, PGSSLMODE": "PostgreSQL connection settings (libpq conventions, ~/.pgpass too)",
	"CI, SMSFORM_IN_AUTOMATION":             "CI=true or SMSFORM_IN_AUTOMATION=1: no prompt (apply needs --auto-approve or a saved plan), no progress bar, no colour, no \"run this next\" hints; errors keep their hints",
	"NO_COLOR":                              "set: no colour",
	"SMSFORM_SANDBOX_CLIENT_ID, SMSFORM_SANDBOX_CLIENT_SECRET": "the credentials the sandbox accepts",
	"SMSFORM_RECEIVE_SECRET":                                   "the secret that authenticates the provider's posts (required; at least 16 characters)",
}

var helps = map[string]helpText{
	"": {
		short: "Terraform for SMS campaigns",
		long: `smsform plans and sends SMS campaigns described in YAML files kept in git.
plan shows exactly who would get which message; apply sends that through the
messaging API and records every step in a state, so that a rerun resumes and
never messages anyone twice.`,
		example: `  smsform validate campaign.yaml
  smsform plan campaign.yaml --out campaign.plan
  smsform apply campaign.plan`,
		exits: exitcode.All(),
	},
	"validate": {
		short:   "Check campaign files and their lists, without planning output",
		long:    "Runs every check of plan (YAML, numbers, templates, windows, prices) on each campaign, prints errors and warnings on stderr, and one line per valid campaign on stdout: its recipients and warnings. It contacts nothing and writes nothing.",
		example: "  smsform validate campaigns/spring.yaml\n  smsform validate campaigns/*.yaml\n  smsform validate                      # every campaign of the project\n  smsform validate --changed-since origin/main",
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"plan": {
		short: "Show what a campaign would send, to whom, when and at what cost",
		long: `Computes the plan: every number checked as E.164, every message rendered, what
the state already records subtracted, the rest cut into batches. Numbers are
masked unless --show-numbers. Plan never contacts the API and never changes the
state. --out saves the plan for smsform apply PLANFILE (it holds phone numbers:
keep it private). With no campaign (the project's campaigns), several files or
folders, or --changed-since, each campaign gets a section and the summary counts
them all; --out is then a folder (one NAME.plan each), and the exit code is 1 if
any fails, else 2 with --detailed-exitcode if any has something to send.`,
		example: `  smsform plan campaigns/spring.yaml
  smsform plan campaigns/spring.yaml --format markdown > plan.md
  smsform plan campaigns/spring.yaml --out spring.plan --detailed-exitcode
  smsform plan campaigns/spring.yaml --at 2026-12-01T08:00:00Z   # who goes when, as at that moment
  smsform plan                                   # every campaign of the project, a section each
  smsform plan --changed-since origin/main --format markdown --out plans/   # one comment, one plan file each`,
		env:   []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE", "CI, SMSFORM_IN_AUTOMATION", "NO_COLOR"},
		exits: []exitcode.Code{exitcode.OK, exitcode.Error, exitcode.Pending},
		args:  []string{"yaml", "yml"},
	},
	"show": {
		short:   "Show a saved plan",
		long:    "Renders a plan saved with smsform plan --out, like plan does.",
		example: "  smsform show spring.plan --format markdown",
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"plan"},
	},
	"apply": {
		short: "Send a campaign, or exactly a saved plan",
		long: `With a campaign file: plans, shows the plan, asks for "yes" on a terminal and
sends. With a saved plan: sends exactly that plan, without asking (it was
reviewed), refusing it if a file or the state changed since.

Before each batch its intent is recorded in the state and after the answer its
outcome, so a rerun resumes and nobody is messaged twice. A batch the API may
have acted on without saying so is left in doubt for you to resolve
(smsform state resolve).

With a send window (or not_before), each batch's window is checked right
before its intent: when nothing more may be sent now, apply stops (exit 5)
and says when the next window opens; --wait sleeps until then instead.

In a project (smsform.yaml with a state), each batch's recipients are also
checked against the project's opt-outs and frequency cap right before its
intent: those who opted out since the plan are recorded suppressed and not
sent; those over the cap are left for a later run, as a closed window's are.`,
		example: `  smsform apply campaigns/spring.yaml
  smsform apply spring.plan
  smsform apply plans/                  # each saved plan, stopping at the first that fails
  CI=true smsform apply campaigns/spring.yaml --auto-approve --json
  smsform apply spring.plan --wait`,
		env: []string{"SMSFORM_BASE_URL", "SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_TOKEN", "SMSFORM_TOKEN_DIR",
			"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE", "CI, SMSFORM_IN_AUTOMATION", "NO_COLOR"},
		exits: []exitcode.Code{exitcode.OK, exitcode.Error, exitcode.Incomplete, exitcode.Locked, exitcode.Closed, exitcode.Paused, exitcode.Interrupted},
		args:  []string{"yaml", "yml", "plan"},
	},
	"pause": {
		short: "Pause a campaign: no new batch starts, from any machine that reaches its state",
		long: `Records a pause in the campaign's state, with who, when and why. It takes no
lock, so it works while an apply runs: that apply starts no new batch, lets
the requests in flight finish, records them and stops with exit 6. Until
smsform resume, apply (of the campaign or of a saved plan) refuses with exit 6,
and plan says the campaign is paused. Pausing changes nothing of who was
messaged: a saved plan made before stays valid.`,
		example: `  smsform pause campaigns/spring.yaml --reason "typo in the link"`,
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"test": {
		short: "Send the campaign's messages to your own phones first",
		long: `Renders the campaign's messages (one per distinct body, up to 3: the longest,
the shortest, the UCS-2 one…; or --row FILE:LINE, one recipient's message) and
sends them to the numbers you name (--to, or test_recipients in the project
file), checked as list numbers are. It goes through the same client and token
as apply, without a prompt, and is recorded in the campaign's state as a test
send (when, by whom, which body, the provider's answer): never one of the
campaign's recipients, never a change to its plan. Plan and apply then say
"tested … to 2 numbers".`,
		example: `  smsform test campaigns/spring.yaml --to +447400123456,+447400123457
  smsform test campaigns/spring.yaml --to +447400123456 --row lists/customers.csv:12`,
		env: []string{"SMSFORM_BASE_URL", "SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_TOKEN", "SMSFORM_TOKEN_DIR",
			"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits: []exitcode.Code{exitcode.OK, exitcode.Error, exitcode.Locked},
		args:  []string{"yaml", "yml"},
	},
	"resume": {
		short:   "Lift a campaign's pause: the next apply carries on where it stopped",
		long:    "Clears the pause smsform pause recorded. It sends nothing itself: run apply (or let the scheduled job run it).",
		example: "  smsform resume campaigns/spring.yaml",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"token": {
		short:   "Issue a token and store it for apply to reuse (never printed)",
		long:    "Exchanges the client credentials for a token and stores it (0600 file in a 0700 folder) for later applies. It never prints the token.",
		example: "  SMSFORM_CLIENT_ID=... SMSFORM_CLIENT_SECRET=... smsform token campaigns/spring.yaml",
		env:     []string{"SMSFORM_BASE_URL", "SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_TOKEN", "SMSFORM_TOKEN_DIR"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"state": {
		short:   "Inspect and change a campaign's state",
		long:    "list shows who was messaged; resolve records an operator's decision on in-doubt or failed recipients; migrate copies a state between a file and PostgreSQL and marks the source moved; where says which state a campaign uses and why.",
		example: "  smsform state list campaigns/spring.yaml",
	},
	"state list": {
		short:   "Show what a state records: counts by status and every recipient",
		long:    "Prints the counts of sent, failed and in-doubt recipients, then each recipient (masked unless --show-numbers). It changes nothing.",
		example: "  smsform state list campaigns/spring.yaml\n  smsform state list --state postgres://db.example.com/smsform --json",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"state resolve": {
		short: "Record an operator's decision on in-doubt or failed recipients",
		long: `--in-doubt --as sent: the provider confirms they were messaged.
--in-doubt --as unsent: they were not; the next apply sends them.
--failed --as unsent: the cause of the API's refusal is fixed; the next apply sends them again.`,
		example: "  smsform state resolve campaigns/spring.yaml --in-doubt --as sent --batch b-4c2cdea4520a7733",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error, exitcode.Locked},
		args:    []string{"yaml", "yml"},
	},
	"state migrate": {
		short:   "Copy a campaign's whole state between a file and PostgreSQL",
		long:    "Copies every record, lineage and serial included, into a target that records nothing of the campaign yet (or a record that moved away from it), reads the copy back and compares, then marks the source moved: it stays readable, and every command that would write or plan against it refuses.",
		example: "  smsform state migrate campaigns/spring.yaml --from campaigns/spring.smsstate --to postgres://db.example.com/smsform",
		env:     []string{"PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error, exitcode.Locked},
		args:    []string{"yaml", "yml"},
	},
	"state where": {
		short: "Say which state a campaign's commands use, and why",
		long: `The state comes from --state, else SMSFORM_STATE, else the project file's state
(smsform.yaml, found from the campaign's folder upwards), else the file next to the campaign.
When the project file names a state, --state and SMSFORM_STATE may only name that same state.
Also shows what the state records of the campaign, and whether it was moved or is paused.`,
		example: "  smsform state where campaigns/spring.yaml\n  smsform state where campaigns/spring.yaml --json",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"state grant-readonly": {
		short: "Let a PostgreSQL role read the state and nothing more, for plan jobs",
		long: `Prints the SQL that lets ROLE read smsform's schema: USAGE on the schema,
SELECT on its tables, and default privileges so that the tables of later
schema versions are readable too. Run it as the role that applies (it owns
smsform's tables). --execute runs it, creating or migrating the schema first.
The state is --state, else SMSFORM_STATE, else the project file's.`,
		example: "  smsform state grant-readonly smsform_plan --state postgres://smsform@db.example.com/campaigns | psql ...\n  smsform state grant-readonly smsform_plan --execute",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"state prune": {
		short:   "Drop old sends from the frequency cap's index of the project's state",
		long:    "The cap's index keeps each number's recent sends across the project's campaigns; sends older than --older-than are dropped (it must be at least the longest cap window of the project and its campaigns). A campaign's own records are never touched.",
		example: "  smsform state prune --older-than 30d",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"optout": {
		short:   "Keep the project's opt-outs: numbers no campaign of the project messages",
		long:    "Opt-outs live in the project's state (smsform.yaml's state). Every plan subtracts them; every apply, of a saved plan too, checks them right before each batch and records a number opted out since the plan as suppressed.",
		example: "  smsform optout add +447400123456 --reason \"STOP by SMS\"\n  smsform optout import stops.csv\n  smsform optout list",
	},
	"optout add": {
		short:   "Opt numbers out of every campaign of the project",
		long:    "Numbers are normalised to E.164 as lists are (--default-region for national ones); who adds them and when is recorded (the CI actor, else user@host). Numbers already opted out are left as they are. No lock is taken: it works while applies run, and their next batch honours it.",
		example: "  smsform optout add +447400123456 +447400123457 --reason \"STOP by SMS\"\n  smsform optout add 07400 123456 --default-region GB",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"optout import": {
		short:   "Opt out every number of a file: a CSV with a phone column, or one number a line",
		long:    "Reads a provider's STOP export as campaign lists are read: a .csv file (or any file with --phone-column) by its header row, any other file one number a line. An invalid value refuses the whole file unless --skip-invalid.",
		example: "  smsform optout import stops.csv --phone-column msisdn\n  smsform optout import stops.txt --default-region GB --skip-invalid",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"csv", "txt"},
	},
	"optout remove": {
		short:   "Take numbers off the opt-outs: a re-consent, with its reason recorded",
		long:    "Every number must be opted out now, or nothing is recorded. The removal is kept in the opt-out log with who, when and --reason.",
		example: "  smsform optout remove +447400123456 --reason \"opted in again on the web form, ticket 4521\"",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"optout list": {
		short:   "List the project's opt-outs: number, since when, by whom, why",
		long:    "Numbers are masked unless --show-numbers. It changes nothing.",
		example: "  smsform optout list\n  smsform optout list --json --show-numbers > optouts.json",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"sandbox": {
		short: "Serve the messaging API on loopback, for demos and tests",
		long: `A strict fake provider: it issues expiring tokens, checks every request, records
each message in --outbox, and can inject faults. It listens on loopback only.
Its first line on stdout is "listening on http://HOST:PORT".`,
		example: "  smsform sandbox --addr 127.0.0.1:0 --outbox outbox.jsonl",
		env:     []string{"SMSFORM_SANDBOX_CLIENT_ID, SMSFORM_SANDBOX_CLIENT_SECRET"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"receive": {
		short: "Take the provider's delivery reports and replies, and record them in the project's state",
		long: `An HTTP server for the provider's webhooks: POST /reports (delivery reports),
POST /replies (what recipients sent back), GET /healthz. It serves the project
of the current folder (or --project), reads bodies (JSON, or form-encoded) with
the project file's provider.reports and provider.replies, and authenticates
every post as receive: says (hmac-sha256, basic, bearer or query) with the
secret in SMSFORM_RECEIVE_SECRET; it refuses to start without one.

A post is answered 2xx only once what it holds is durable in the state, so the
provider's retries carry the rest; the same report posted twice counts once.
Unauthenticated posts get 401, oversized ones 413, unreadable ones 400: nothing
of them is recorded. A delivery report for a recipient in doubt resolves it as
sent; a STOP reply opts the number out of every campaign. SIGTERM finishes the
requests in hand and exits 0. It listens on 127.0.0.1:8089: put a TLS proxy in
front of it (docs/reports.md). Its first line on stdout is "listening on
http://HOST:PORT".`,
		example: `  SMSFORM_RECEIVE_SECRET=... smsform receive
  smsform receive --listen 127.0.0.1:0 --project campaigns/`,
		env:   []string{"SMSFORM_RECEIVE_SECRET", "SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits: []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"reports": {
		short:   "Delivery reports: import a provider's export, show a campaign's delivery",
		long:    "Reports are read with the project file's provider.reports and kept in the project's state, beside each recipient's record.",
		example: "  smsform reports import exports/delivery-2026-03.csv",
	},
	"reports import": {
		short: "Record the delivery reports of a provider's export file (CSV or JSON lines)",
		long: `For providers without webhooks, and for backfills. A CSV file has a header row, and
each pointer of provider.reports names a column (/status: the column status); a
JSON lines file has a JSON document a line, read as smsform receive reads a
posted body. It streams the file, recording ten thousand reports at a time; a
report already recorded (received, or imported before) counts once. It stops at
the first line it cannot read, naming it, once the reports before it are
recorded: fix the line and import the file again.`,
		example: "  smsform reports import exports/delivery-2026-03.csv\n  smsform reports import webhook-log.jsonl --json",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error, exitcode.Interrupted},
		args:    []string{"csv", "jsonl", "ndjson", "json"},
	},
	"reports show": {
		short: "Show what the provider reported of a campaign's messages",
		long: `Counts the campaign's recipients by their latest delivery report: of those
recorded sent, delivered, undelivered and pending (no report yet counts as
pending); those in doubt, and how many of them have no report; anomalies (a
report for a message smsform recorded unsent, failed or suppressed) and the
state's unmatched reports. By country, with the undelivered messages grouped by
the provider's reason and what they cost (the campaign's prices:, "no price"
where none applies). Counts only: no number is shown. It changes nothing.`,
		example: "  smsform reports show campaigns/spring.yaml\n  smsform reports show campaigns/spring.yaml --format markdown\n  smsform reports show campaigns/spring.yaml --json",
		env:     []string{"SMSFORM_STATE", "PGHOST, PGUSER, PGPASSWORD, PGSSLMODE"},
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
		args:    []string{"yaml", "yml"},
	},
	"init": {
		short: "Write a new project that works at once: smsform.yaml, a campaign, lists, prices, CI workflows",
		long: `Writes into DIR (default: the current folder) a project file whose state is a
file in the git-ignored folder .smsform/, campaigns/welcome.yaml with a small
list and an opt-out list, an example price table, the two GitHub workflows
that use smsform's action, and a .gitignore for state and plan files. It never
overwrites: when any of these files exists it writes nothing and names them.`,
		example: "  smsform init\n  smsform init my-campaigns && cd my-campaigns && smsform plan campaigns/welcome.yaml",
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"man": {
		short: "Write smsform's manual page, smsform(1), in roff on stdout",
		long: `The page is made from the commands themselves: every command with its usage,
what it does, its flags, examples, the environment and the exit codes, as
their --help says them. Read it with man -l, or install it where man looks.`,
		example: "  smsform man | man -l -\n  smsform man > /usr/local/share/man/man1/smsform.1",
		exits:   []exitcode.Code{exitcode.OK, exitcode.Error},
	},
	"version": {
		short:   "Print smsform's version, commit, Go version and platform",
		example: "  smsform version --json",
		exits:   []exitcode.Code{exitcode.OK},
	},
}

// flagValues are the values of flags that take one of a few words.
var flagValues = map[string][]string{
	"format": {"table", "markdown", "json"},
	"as":     {"sent", "unsent"},
}

// document fills every command's help from helps and makes its arguments
// complete to the files it takes.
func document(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		key := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), root.Name()), " ")
		if h, ok := helps[key]; ok {
			cmd.Short, cmd.Example = h.short, h.example
			cmd.Long = h.short + ".\n\n" + h.long
			if h.long == "" {
				cmd.Long = h.short + "."
			}
			if len(h.env) > 0 {
				cmd.Long += "\n\nEnvironment:"
				for _, name := range h.env {
					cmd.Long += "\n  " + name + ": " + envHelp[name]
				}
			}
			if len(h.exits) > 0 {
				cmd.Long += "\n\nExit codes:" + exitLines(h.exits)
			}
			if len(h.args) > 0 {
				exts := h.args
				cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return exts, cobra.ShellCompDirectiveFilterFileExt
				}
			}
		}
		for flag, values := range sandbox.Shapes {
			if cmd.Name() == "sandbox" {
				cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		for flag, values := range flagValues {
			if cmd.LocalFlags().Lookup(flag) != nil {
				cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// exitLines lists codes as help shows them, one a line with its meaning,
// a long meaning folded under itself so that it reads in 80 columns.
func exitLines(codes []exitcode.Code) string {
	var b strings.Builder
	for _, c := range codes {
		head := fmt.Sprintf("  %d  ", c)
		b.WriteString("\n" + head)
		indent := strings.Repeat(" ", len(head))
		col := len(head)
		for i, w := range strings.Fields(c.Meaning()) {
			if i > 0 && col+1+len(w) > helpWidth {
				b.WriteString("\n" + indent)
				col = len(indent)
			} else if i > 0 {
				b.WriteByte(' ')
				col++
			}
			b.WriteString(w)
			col += len(w)
		}
	}
	return b.String()
}

// helpWidth is the column help text folds at: a terminal's least width.
const helpWidth = 80
