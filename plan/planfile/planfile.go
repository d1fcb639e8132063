// Package planfile reads and writes saved plans: what `smsform plan --out`
// writes, reviewed, and `smsform apply PLANFILE` checks before sending. A
// saved plan is gzip-compressed JSON; it is written and read a batch at a
// time, so that ten million recipients are never whole in memory, and
// checked whole before anything is sent.
//
// This package checks that a file is one smsform wrote and whole (gzip's
// checksum, a bound on how much it decompresses to, each batch's id against
// its content, the plan's id against the rest of the file, the summary
// against the batches) and that the files it was made from are unchanged
// ([Saved.CheckFiles]). It does not know what a plan means: apply derives
// the batches again from those files and refuses a plan whose batches
// differ, since anyone who can write the file can recompute its ids.
package planfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/smsform/smsform/internal/atomicfile"
	"github.com/smsform/smsform/plan"
)

// Saved is a plan written to a file by `plan --out`, to be applied exactly as
// it was reviewed. It holds the recipients' numbers (personal data) but never
// a token or secret.
//
// In memory, CampaignPath and the Files' paths are usable from the working
// folder. In the file they are relative to the plan file's own folder
// (PathsFrom is [PathsFromPlanFile]), so that the plan applies from any
// folder; [Open] and [Load] turn them back.
type Saved struct {
	FormatVersion  string `json:"format_version"`
	SmsformVersion string `json:"smsform_version"`
	// ID is derived from the rest of the file by [Save] (see [DocumentID]):
	// it names the plan in the state, which applies it at most once.
	ID           string    `json:"id"`
	CreatedAt    time.Time `json:"created_at"`
	CampaignPath string    `json:"campaign_path"`
	// PathsFrom says what the stored paths are relative to: the plan
	// file's folder, or (absent: plan files of smsform before it) the
	// folder plan was run in.
	PathsFrom string `json:"paths_from,omitempty"`
	// StatePath is where the state is: a URL (without its password), or a
	// file when StateIsFile, whose path is then stored like the others.
	StatePath   string `json:"state_path"`
	StateIsFile bool   `json:"state_is_file,omitempty"`
	// OptOutSeq is the plan's StateStamp.OptOutSeq, in the header: apply
	// makes the plan again with the opt-outs as of it before it reads the
	// batches (and then checks it is the plan's).
	OptOutSeq int64      `json:"opt_out_seq,omitempty"`
	Files     []FileSum  `json:"files"` // the campaign file and every file it reads
	Plan      *plan.Plan `json:"plan"`

	file *os.File // the file Open reads the batches from
	src  *source  // how it is read
}

// PathsFromPlanFile is the PathsFrom of a plan file whose paths are
// relative to its own folder.
const PathsFromPlanFile = "plan_file"

// FileSum is a file's SHA-256 at plan time.
type FileSum struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Keys, for a YAML file, holds a digest of each top-level key's value,
	// so that a refusal names the keys that changed (see keysChanged).
	Keys map[string]string `json:"keys,omitempty"`
}

// NewSaved wraps p for saving, with checksums of files: every file the
// campaign reads (campaign.Campaign.Files), which apply checks again.
// statePath is a file when stateIsFile, else a URL without its password.
func NewSaved(ctx context.Context, p *plan.Plan, version, campaignPath, statePath string, stateIsFile bool, files []string) (*Saved, error) {
	sums, err := HashFiles(ctx, files)
	if err != nil {
		return nil, err
	}
	return &Saved{
		FormatVersion:  plan.FormatVersion,
		SmsformVersion: version,
		CreatedAt:      time.Now().UTC().Truncate(time.Second),
		CampaignPath:   campaignPath,
		StatePath:      statePath,
		StateIsFile:    stateIsFile && statePath != "",
		OptOutSeq:      p.State.OptOutSeq,
		Files:          sums,
		Plan:           p,
	}, nil
}

// HashFiles returns the SHA-256 of each file.
func HashFiles(ctx context.Context, paths []string) ([]FileSum, error) {
	sums := make([]FileSum, 0, len(paths))
	for _, p := range paths {
		sum, err := hashFile(ctx, p)
		if err != nil {
			return nil, err
		}
		sums = append(sums, FileSum{Path: p, SHA256: sum, Keys: yamlKeys(p)})
	}
	return sums, nil
}

func hashFile(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Save writes s to path crash-safely, readable by its owner only, its paths
// relative to path's folder, and sets s.ID to the id its content makes. It
// replaces only a plan file: see
// [CheckOverwrite], which the caller runs first, before the work of making
// the plan.
func Save(path string, s *Saved) error {
	_, err := SaveSum(path, s)
	return err
}

// SaveSum is [Save], and returns the SHA-256 of the file as written (a
// folder's manifest lists it: see [WriteManifest]).
func SaveSum(path string, s *Saved) (string, error) {
	if err := CheckOverwrite(path); err != nil {
		return "", err
	}
	frame, err := s.relativeTo(filepath.Dir(path))
	if err == nil {
		frame, err = withID(frame)
	}
	if err != nil {
		return "", fmt.Errorf("save plan %s: %w", path, err)
	}
	h := sha256.New()
	err = atomicfile.Write(path, 0o600, func(w io.Writer) error {
		zw := gzip.NewWriter(io.MultiWriter(w, h))
		if err := encodeSaved(zw, frame); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return "", fmt.Errorf("save plan %s: %w", path, writeError(path, err))
	}
	s.ID = frame.ID
	return hex.EncodeToString(h.Sum(nil)), nil
}

// relativeTo returns a copy of s whose paths are relative to dir, as the
// file stores them.
func (s *Saved) relativeTo(dir string) (*Saved, error) {
	c := *s
	c.PathsFrom = PathsFromPlanFile
	var err error
	if c.CampaignPath, err = relPath(dir, s.CampaignPath); err != nil {
		return nil, err
	}
	if s.StateIsFile {
		if c.StatePath, err = relPath(dir, s.StatePath); err != nil {
			return nil, err
		}
	}
	c.Files = make([]FileSum, len(s.Files))
	for i, f := range s.Files {
		c.Files[i] = f
		if c.Files[i].Path, err = relPath(dir, f.Path); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// relPath is path relative to dir, with forward slashes; an absolute path
// where there is no relative one (another volume).
func relPath(dir, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, abs)
	if err != nil {
		return filepath.ToSlash(abs), nil
	}
	return filepath.ToSlash(rel), nil
}

// resolve turns the paths of a plan file read from planPath back into paths
// usable from the working folder. A plan file without PathsFrom (smsform
// before it) stored them relative to the folder plan ran in: they are used
// as they are, which works from that folder, as it always did.
func (s *Saved) resolve(planPath string) {
	if s.PathsFrom != PathsFromPlanFile {
		return
	}
	dir := filepath.Dir(planPath)
	at := func(p string) string {
		if p == "" || filepath.IsAbs(filepath.FromSlash(p)) {
			return filepath.FromSlash(p)
		}
		return filepath.Join(dir, filepath.FromSlash(p))
	}
	s.CampaignPath = at(s.CampaignPath)
	if s.StateIsFile {
		s.StatePath = at(s.StatePath)
	}
	for i := range s.Files {
		s.Files[i].Path = at(s.Files[i].Path)
	}
}

// encodeSaved writes what json.NewEncoder(w).Encode(s) writes, byte for
// byte, but encodes the plan's batches (a million for a personalised
// campaign) one at a time into the frame's empty list, so that the
// document is never whole in memory.
func encodeSaved(w io.Writer, s *Saved) error {
	if s.Plan == nil || s.Plan.NumBatches() == 0 {
		return json.NewEncoder(w).Encode(s)
	}
	p := *s.Plan
	p.Batches = []plan.Batch{}
	frame := *s
	frame.Plan = &p
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(&frame); err != nil {
		return err
	}
	// Only the plan's list can read so (the summary's "batches" is a
	// count, and a quote inside a string is always escaped). The frame is
	// written up to its "[", then the batches, then the rest from its "]".
	i := bytes.Index(buf.Bytes(), []byte(`"batches":[]`))
	if i < 0 {
		return errors.New("plan file: batches missing from the frame")
	}
	split := i + len(`"batches":[`)
	if _, err := w.Write(buf.Bytes()[:split]); err != nil {
		return err
	}
	rest := bytes.Clone(buf.Bytes()[split:]) // buf is reused for the batches
	err := s.Plan.EachBatch(func(i int, b plan.Batch) error {
		buf.Reset()
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(&b); err != nil {
			return err
		}
		// Encode ends each value with a newline; in the list a comma
		// separates them.
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(rest)
	return err
}
