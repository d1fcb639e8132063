package planfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smsform/smsform/internal/atomicfile"
	"github.com/smsform/smsform/plan"
)

// A folder of plans (smsform plan --out DIR/) holds a manifest beside them:
// which plan files that plan wrote, each with its SHA-256. smsform apply DIR
// applies exactly those, and refuses the folder before anything is asked of
// anyone when a plan it lists is missing or changed, or a plan file is there
// that it does not list: a plan dropped into the folder after the review
// (a genuine plan of another campaign, say) is never sent with the others.
// The pull-request comment lists the same names and digests.

// ManifestName is the manifest's name in the folder of plans.
const ManifestName = "plans.manifest.json"

// Manifest lists the plans one smsform plan --out DIR/ wrote.
type Manifest struct {
	FormatVersion  string `json:"format_version"`
	SmsformVersion string `json:"smsform_version"`
	// Plans are in name order, as apply DIR applies them.
	Plans []ManifestPlan `json:"plans"`
}

// ManifestPlan is one plan file of a folder.
type ManifestPlan struct {
	File     string `json:"file"`     // its name in the folder: NAME.plan
	Campaign string `json:"campaign"` // the campaign's name
	ID       string `json:"id"`       // the plan's id (see DocumentID)
	SHA256   string `json:"sha256"`   // of the plan file, as written
}

// ErrManifest is wrapped by the errors of reading or checking a folder's
// manifest.
var ErrManifest = errors.New("the folder of plans is not what plan --out wrote")

// maxManifest bounds the manifest read: a line per plan.
const maxManifest = 16 << 20

// WriteManifest writes dir's manifest, listing plans, crash-safely: a crash
// leaves the earlier manifest or this one, and an earlier one does not list
// the plans now in the folder, so the folder is refused rather than half
// believed.
func WriteManifest(dir, version string, plans []ManifestPlan) error {
	m := Manifest{FormatVersion: plan.FormatVersion, SmsformVersion: version, Plans: slices.Clone(plans)}
	if m.Plans == nil {
		m.Plans = []ManifestPlan{}
	}
	slices.SortFunc(m.Plans, func(a, b ManifestPlan) int { return strings.Compare(a.File, b.File) })
	for _, p := range m.Plans {
		if err := checkPlanName(p.File); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, ManifestName), err)
		}
	}
	file := filepath.Join(dir, ManifestName)
	err := atomicfile.Write(file, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(&m)
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", file, writeError(file, err))
	}
	return nil
}

// ReadManifest reads dir's manifest. A manifest that is missing wraps
// fs.ErrNotExist; any that is not one plan --out wrote is refused.
func ReadManifest(dir string) (*Manifest, error) {
	file := filepath.Join(dir, ManifestName)
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrManifest, file, err)
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: %s is not a manifest smsform wrote: %s", ErrManifest, file, why)
	}
	if len(data) > maxManifest {
		return nil, bad("it is too large")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, bad(err.Error())
	}
	if dec.More() {
		return nil, bad("data after the manifest")
	}
	if m.FormatVersion != plan.FormatVersion {
		return nil, bad(fmt.Sprintf("format version %q; this smsform reads %q", m.FormatVersion, plan.FormatVersion))
	}
	seen := map[string]bool{}
	for _, p := range m.Plans {
		if err := checkPlanName(p.File); err != nil {
			return nil, bad(err.Error())
		}
		if seen[p.File] {
			return nil, bad(fmt.Sprintf("it lists %s twice", p.File))
		}
		seen[p.File] = true
	}
	return &m, nil
}

// checkPlanName refuses a name that is not a plain NAME.plan in the folder:
// nothing in a manifest chooses a file elsewhere.
func checkPlanName(name string) error {
	if name != path.Base(name) || name != filepath.Base(name) || !strings.HasSuffix(name, ".plan") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("%q is not the name of a plan file in the folder (NAME.plan)", name)
	}
	return nil
}

// FolderError says how a folder of plans differs from its manifest. It
// wraps [ErrManifest].
type FolderError struct {
	Manifest string   // the manifest's path
	Missing  []string // listed, not in the folder
	Changed  []string // listed, not what was written (another SHA-256)
	Added    []string // in the folder, not listed
}

func (e *FolderError) Error() string {
	var parts []string
	for _, p := range []struct {
		files []string
		what  string
	}{{e.Added, "not listed in it"}, {e.Changed, "changed since it was written"}, {e.Missing, "listed in it, missing"}} {
		if len(p.files) > 0 {
			parts = append(parts, strings.Join(p.files, ", ")+": "+p.what)
		}
	}
	return fmt.Sprintf("%v (%s): %s", ErrManifest, e.Manifest, strings.Join(parts, "; "))
}

func (e *FolderError) Unwrap() error { return ErrManifest }

// Check compares the plan files in dir (*.plan) with the manifest: every
// one it lists there with the SHA-256 it lists, and no other. The files are
// named by their path (dir joined with their name). Reading stops when ctx
// is done.
func (m *Manifest) Check(ctx context.Context, dir string) error {
	there, err := filepath.Glob(filepath.Join(dir, "*.plan"))
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	e := &FolderError{Manifest: filepath.Join(dir, ManifestName)}
	for _, p := range m.Plans {
		listed[p.File] = true
		file := filepath.Join(dir, p.File)
		sum, err := hashFile(ctx, file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			e.Missing = append(e.Missing, file)
		case err != nil:
			return err
		case sum != p.SHA256:
			e.Changed = append(e.Changed, file)
		}
	}
	for _, file := range there {
		if !listed[filepath.Base(file)] {
			e.Added = append(e.Added, file)
		}
	}
	if len(e.Missing)+len(e.Changed)+len(e.Added) > 0 {
		return e
	}
	return nil
}
