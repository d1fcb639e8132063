// Package tokenstore keeps issued access tokens between runs, so that apply
// reuses one token until shortly before it expires. Tokens are secrets: the
// store is a folder of mode 0700 holding files of mode 0600, and a store that
// others can read is refused.
//
// A [Store] is the [api.TokenStore] that [api.Authenticated] uses. Each
// [api.TokenKey] (base URL, client id, and a hash of the client secret) has
// one JSON file, named by a hash of the key so that none of it appears in a
// file name. The secret's hash ties a token to the credentials that issued
// it: a changed secret finds no token, so it must issue one (and fail if it
// is wrong) rather than ride on a token the right secret got. The secret
// itself is never written. Files are replaced crash-safely, so a reader sees
// the old token or the new one, never a mix.
// A file that cannot be decoded is an error naming it (delete it: the next
// run issues a new token), not a silent miss, because it means something
// other than smsform wrote there.
package tokenstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/atomicfile"
)

// EnvDir names the environment variable that, when set, replaces
// [DefaultDir]'s folder (for CI and tests).
const EnvDir = "SMSFORM_TOKEN_DIR"

// fileKey is what a token is filed under: the credentials that issued it,
// the secret only as a hash.
type fileKey struct {
	BaseURL, ClientID string
	SecretHash        string // hashSecret of the client secret
}

func keyOf(k api.TokenKey) fileKey {
	return fileKey{BaseURL: k.BaseURL, ClientID: k.ClientID, SecretHash: hashSecret(k.ClientSecret)}
}

// hashSecret is what a key holds of a client secret: a SHA-256 that says
// whether the secret changed, never the secret.
func hashSecret(secret string) string {
	h := sha256.Sum256([]byte("smsform token store\x00" + secret))
	return hex.EncodeToString(h[:])
}

// Store is a token store in one folder.
type Store struct{ dir string }

// file is a token file's content.
type file struct {
	BaseURL    string    `json:"base_url"`
	ClientID   string    `json:"client_id"`
	SecretHash string    `json:"secret_sha256"`
	Token      string    `json:"token"`
	ValidTill  time.Time `json:"valid_till"`
	Basic      string    `json:"basic,omitempty"` // the Basic form the token endpoint took
}

// DefaultDir is getenv(SMSFORM_TOKEN_DIR) when set, else the user's cache
// folder + "/smsform/tokens". getenv is the command's environment, so that
// what a command is given (a test's, say) is what it uses.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvDir); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("token store: no cache folder (%w): set %s", err, EnvDir)
	}
	return filepath.Join(cache, "smsform", "tokens"), nil
}

// Open opens (creating with mode 0700 if needed) the store in dir, and
// refuses one whose folder or files others can read.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open token store: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("open token store: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open token store: %s is not a folder", dir)
	}
	if err := private(dir, fi, "700"); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open token store: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("open token store: %w", err)
		}
		if err := private(p, fi, "600"); err != nil {
			return nil, err
		}
	}
	return &Store{dir: dir}, nil
}

// private refuses a file or folder that group or others can use, or that
// another user owns. Windows has no such modes: there the folder's ACL,
// inherited from the user's profile, is what protects it.
func private(path string, fi fs.FileInfo, chmod string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token store %s can be read by others (mode %04o), and it holds secrets; run: chmod %s %s", path, fi.Mode().Perm(), chmod, path)
	}
	if !ownedByMe(fi) {
		return fmt.Errorf("token store %s belongs to another user; remove it, or set %s to a folder of your own", path, EnvDir)
	}
	return nil
}

func (s *Store) path(k fileKey) string {
	h := sha256.Sum256([]byte(k.BaseURL + "\x00" + k.ClientID + "\x00" + k.SecretHash))
	return filepath.Join(s.dir, hex.EncodeToString(h[:16])+".json")
}

// Get returns the token stored for the credentials in tk, if any. A file
// that is not private, or not a token file, is an error that names it.
func (s *Store) Get(tk api.TokenKey) (api.Token, bool, error) {
	k := keyOf(tk)
	p := s.path(k)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return api.Token{}, false, nil
	}
	if err != nil {
		return api.Token{}, false, fmt.Errorf("read token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return api.Token{}, false, fmt.Errorf("read token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return api.Token{}, false, fmt.Errorf("read token: %s is not a regular file; delete it", p)
	}
	if err := private(p, fi, "600"); err != nil {
		return api.Token{}, false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return api.Token{}, false, fmt.Errorf("read token: %w", err)
	}
	var tf file
	if err := json.Unmarshal(b, &tf); err != nil || tf.Token == "" || tf.ValidTill.IsZero() {
		return api.Token{}, false, fmt.Errorf("read token: %s is not a valid token file; delete it (the next run issues a new token)", p)
	}
	if tf.BaseURL != k.BaseURL || tf.ClientID != k.ClientID || tf.SecretHash != k.SecretHash {
		// Another key's file under this name (copied by hand): not ours.
		return api.Token{}, false, nil
	}
	return api.Token{Value: tf.Token, ValidTill: tf.ValidTill, Basic: tf.Basic}, true, nil
}

// Put stores t for the credentials in tk, replacing any earlier one,
// crash-safely.
func (s *Store) Put(tk api.TokenKey, t api.Token) error {
	k := keyOf(tk)
	p := s.path(k)
	err := atomicfile.Write(p, 0o600, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(file{BaseURL: k.BaseURL, ClientID: k.ClientID, SecretHash: k.SecretHash,
			Token: t.Value, ValidTill: t.ValidTill.UTC(), Basic: t.Basic})
	})
	if err != nil {
		return fmt.Errorf("store token in %s: %w", s.dir, err)
	}
	return nil
}
