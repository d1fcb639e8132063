package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/smsform/smsform/plan"
)

// Version is smsform's version as the Makefile stamps it with -ldflags;
// "dev" when it did not, and then the module version of `go install …@vX`
// is used when there is one.
var Version = "dev"

// versionInfo is what `smsform version` prints.
type versionInfo struct {
	FormatVersion string `json:"format_version"`
	Version       string `json:"version"`
	Commit        string `json:"commit,omitempty"`
	Modified      bool   `json:"modified,omitempty"`
	Go            string `json:"go"`
	Platform      string `json:"platform"`
}

func buildVersion() versionInfo {
	v := versionInfo{FormatVersion: plan.FormatVersion, Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func writeVersion(w io.Writer, asJSON bool) error {
	v := buildVersion()
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	line := "smsform " + v.Version
	if v.Commit != "" {
		commit := v.Commit[:min(12, len(v.Commit))]
		if v.Modified {
			commit += " (modified)"
		}
		line += ", commit " + commit
	}
	_, err := fmt.Fprintf(w, "%s, %s %s\n", line, v.Go, v.Platform)
	return err
}

func newVersionCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "version", Args: positional(0, 0, "no arguments")}
	asJSON := cmd.Flags().Bool("json", false, "print one JSON document (version, commit, go, platform)")
	cmd.RunE = func(*cobra.Command, []string) error { return writeVersion(env.Stdout, *asJSON) }
	return cmd
}
