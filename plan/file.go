package plan

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/smsform/smsform/internal/atomicfile"
	"github.com/smsform/smsform/internal/window"
)

// Saved is a plan written to a file by `plan --out`, to be applied exactly as
// it was reviewed. It holds the recipients' numbers (personal data) but never
// a token or secret.
type Saved struct {
	FormatVersion  string    `json:"format_version"`
	SmsformVersion string    `json:"smsform_version"`
	ID             string    `json:"id"` // random: a saved plan is applied at most once
	CreatedAt      time.Time `json:"created_at"`
	CampaignPath   string    `json:"campaign_path"` // as given to plan
	StatePath      string    `json:"state_path"`
	Files          []FileSum `json:"files"` // the campaign file and every list it reads
	Plan           *Plan     `json:"plan"`
}

// FileSum is a file's SHA-256 at plan time.
type FileSum struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// maxSavedSize bounds what reading a plan file may decompress, so that a
// hostile file cannot exhaust memory. A million-recipient plan is well under.
const maxSavedSize = 1 << 30

// NewSaved wraps p for saving, with checksums of files.
func NewSaved(p *Plan, version, campaignPath, statePath string, files []string) (*Saved, error) {
	sums, err := HashFiles(files)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	return &Saved{
		FormatVersion:  FormatVersion,
		SmsformVersion: version,
		ID:             hex.EncodeToString(id),
		CreatedAt:      time.Now().UTC().Truncate(time.Second),
		CampaignPath:   campaignPath,
		StatePath:      statePath,
		Files:          sums,
		Plan:           p,
	}, nil
}

// HashFiles returns the SHA-256 of each file.
func HashFiles(paths []string) ([]FileSum, error) {
	sums := make([]FileSum, 0, len(paths))
	for _, p := range paths {
		sum, err := hashFile(p)
		if err != nil {
			return nil, err
		}
		sums = append(sums, FileSum{Path: p, SHA256: sum})
	}
	return sums, nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrCampaignChanged is wrapped by the error CheckFiles returns.
var ErrCampaignChanged = errors.New("campaign changed after plan")

// CheckFiles reports the first file that changed (or vanished) since the
// plan was made.
func (s *Saved) CheckFiles() error {
	for _, f := range s.Files {
		sum, err := hashFile(f.Path)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s is gone", ErrCampaignChanged, f.Path)
		}
		if err != nil {
			return err
		}
		if sum != f.SHA256 {
			return fmt.Errorf("%w: %s", ErrCampaignChanged, f.Path)
		}
	}
	return nil
}

// Save writes s to path crash-safely, readable by its owner only.
func Save(path string, s *Saved) error {
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		if err := encodeSaved(zw, s); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	return nil
}

// encodeSaved writes what json.NewEncoder(w).Encode(s) writes, byte for
// byte, but encodes the plan's batches (a million for a personalised
// campaign) one at a time into the frame's empty list, so that the
// document is never whole in memory.
func encodeSaved(w io.Writer, s *Saved) error {
	if s.Plan == nil || len(s.Plan.Batches) == 0 {
		return json.NewEncoder(w).Encode(s)
	}
	p := *s.Plan
	p.Batches = []Batch{}
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
	for i := range s.Plan.Batches {
		buf.Reset()
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(&s.Plan.Batches[i]); err != nil {
			return err
		}
		// Encode ends each value with a newline; in the list a comma
		// separates them.
		if _, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))); err != nil {
			return err
		}
	}
	_, err := w.Write(rest)
	return err
}

// ErrNotPlan is wrapped by the errors Load returns for a file that is not a
// readable plan.
var ErrNotPlan = errors.New("not a readable smsform plan file")

// Load reads a plan file written by Save. gzip's checksum catches a
// truncated or corrupted file.
func Load(path string) (*Saved, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open plan: %w", err)
	}
	defer f.Close()
	return decodeSaved(path, f)
}

func decodeSaved(path string, r io.Reader) (*Saved, error) {
	bad := func(why string) error { return fmt.Errorf("%s: %w: %s", path, ErrNotPlan, why) }
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, bad("it was not written by smsform plan --out")
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxSavedSize+1))
	if err != nil {
		return nil, bad("it is truncated or corrupted (" + err.Error() + ")")
	}
	if len(data) > maxSavedSize {
		return nil, bad("it is larger than any plan smsform writes")
	}
	var s Saved
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, bad("its content is damaged (" + err.Error() + ")")
	}
	switch {
	case s.FormatVersion != FormatVersion:
		return nil, bad(fmt.Sprintf("format version %q; this smsform reads %q", s.FormatVersion, FormatVersion))
	case s.Plan == nil || s.ID == "":
		return nil, bad("it holds no plan")
	}
	for _, b := range s.Plan.Batches {
		if b.ID == "" || len(b.Recipients) == 0 {
			return nil, bad("a batch has no id or no recipients")
		}
	}
	if _, err := window.Compile(s.Plan.Window); err != nil {
		return nil, bad("its send window is damaged (" + err.Error() + ")")
	}
	return &s, nil
}
