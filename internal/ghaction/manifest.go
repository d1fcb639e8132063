package ghaction

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/smsform/smsform/plan/planfile"
)

// The pull-request comment names the plans the merge applies as the folder's
// manifest lists them (smsform apply DIR applies exactly those, and refuses
// a folder that holds anything else), so that what a reviewer approves and
// what is sent are one list.

// shownRE is what a name or digest may be to go into the comment as it is:
// campaign names and their plan files, hex digests and ids.
var shownRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// shown is s for the comment's markdown: itself when it is a plain name,
// else a placeholder (smsform writes no other; nothing from a file is
// pasted into markup).
func shown(s string) string {
	if shownRE.MatchString(s) {
		return s
	}
	return "(unreadable)"
}

// plansSection is the comment's list of the plans saved in dir, from its
// manifest: "" when it lists none, or there is none (smsform stopped before
// saving).
func plansSection(dir string) (string, error) {
	m, err := planfile.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if len(m.Plans) == 0 {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n**Plan files** (`%s`): after the merge, exactly these are applied.\n\n", planfile.ManifestName)
	b.WriteString("| plan file | campaign | SHA-256 |\n|---|---|---|\n")
	for _, p := range m.Plans {
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` |\n", shown(p.File), shown(p.Campaign), shown(p.SHA256))
	}
	return b.String(), nil
}
