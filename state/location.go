package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/smsform/smsform/internal/realpath"
	"github.com/smsform/smsform/internal/redact"
)

// A state's location is a PostgreSQL database (a postgres:// or
// postgresql:// URL, or a libpq keyword/value string such as "host=db
// dbname=sms") or a file path. Anything else is refused rather than
// guessed: a connection string taken for a path would become a new, empty
// state file whose name holds the password.

// IsPostgres reports whether loc names a PostgreSQL database rather than a
// file: a URL or a keyword string ([CheckLocation] says whether it is well
// formed).
func IsPostgres(loc string) bool { return isURL(loc) || isKeywords(loc) }

func isURL(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// keywordStart is how a libpq keyword/value string begins: a keyword, an
// equals sign.
var keywordStart = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)

func isKeywords(loc string) bool { return !isURL(loc) && keywordStart.MatchString(loc) }

// ErrLocation is wrapped by the error of a location that is neither a
// PostgreSQL URL, nor a keyword string, nor a plausible file path.
var ErrLocation = errors.New("not a state location")

// CheckLocation refuses a location that is neither a PostgreSQL URL, nor a
// keyword string that names a database, nor a plausible path. Its errors
// show the location with any password masked.
func CheckLocation(loc string) error {
	shown := Redact(loc)
	switch {
	case strings.TrimSpace(loc) == "":
		return fmt.Errorf("%w: empty", ErrLocation)
	case isURL(loc):
		return nil
	case isKeywords(loc):
		kv, err := parseKeywords(loc)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrLocation, shown, err)
		}
		for _, k := range []string{"host", "hostaddr", "dbname", "user", "service", "port"} {
			if _, ok := kv[k]; ok {
				return nil
			}
		}
		return fmt.Errorf("%w: %s looks like a PostgreSQL connection string but names no host, dbname, user or service", ErrLocation, shown)
	case strings.Contains(loc, "://"):
		return fmt.Errorf("%w: %s is a URL, and only postgres:// and postgresql:// URLs name a state", ErrLocation, shown)
	case strings.ContainsFunc(loc, func(r rune) bool { return unicode.IsControl(r) }):
		return fmt.Errorf("%w: %q holds control characters", ErrLocation, shown)
	case strings.Contains(loc, "="):
		return fmt.Errorf("%w: %s is neither a file path nor a PostgreSQL keyword string (host=… dbname=…)", ErrLocation, shown)
	}
	return nil
}

// parseKeywords reads a libpq keyword/value string: keyword = value pairs
// separated by blanks, a value single-quoted when it holds blanks, \ an
// escape inside quotes.
func parseKeywords(s string) (map[string]string, error) {
	kv := map[string]string{}
	rest := strings.TrimSpace(s)
	for rest != "" {
		m := keywordStart.FindString(rest)
		if m == "" {
			return nil, fmt.Errorf("expected keyword=value at %q", clipText(rest, 20))
		}
		key := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m), "="))
		rest = strings.TrimLeft(rest[len(m):], " \t\r\n")
		var val strings.Builder
		if strings.HasPrefix(rest, "'") {
			i, closed := 1, false
			for ; i < len(rest); i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					val.WriteByte(rest[i])
					continue
				}
				if rest[i] == '\'' {
					closed = true
					break
				}
				val.WriteByte(rest[i])
			}
			if !closed {
				return nil, fmt.Errorf("the value of %s has no closing quote", key)
			}
			rest = rest[i+1:]
		} else {
			end := strings.IndexAny(rest, " \t\r\n")
			if end < 0 {
				end = len(rest)
			}
			val.WriteString(rest[:end])
			rest = rest[end:]
		}
		kv[key] = val.String()
		rest = strings.TrimLeft(rest, " \t\r\n")
	}
	return kv, nil
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Redact is loc as it may be shown: a password, in a URL's user
// information or parameters or in a keyword string, is masked. A path is
// returned as it is.
func Redact(loc string) string {
	switch {
	case isKeywords(loc):
		return redact.Keywords(loc)
	case !isURL(loc):
		return loc
	}
	u, ok := parseURL(loc)
	if !ok {
		return redact.URL(loc)
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// ResolveFile is the real file a state path names: absolute, with every
// symbolic link resolved, so that two spellings of one file (a link, "..",
// relative and absolute) are one state. A path whose file does not exist
// yet resolves its folder; a link to a missing file is refused, since where
// the state would be created is then a guess.
func ResolveFile(path string) (string, error) {
	abs, err := realpath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return "", fmt.Errorf("%s is a symbolic link to %s, which does not exist: point it at the state file, or name the state's real path", path, target)
	}
	folder, file := realpath.Split(abs)
	dir, err := filepath.EvalSymlinks(folder)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("folder %s does not exist", folder)
		}
		return "", err
	}
	return filepath.Join(dir, file), nil
}

// SameState reports whether a and b name the same state: the same file
// (whatever the spelling of its path, hard links included), or the same
// PostgreSQL database and schema (whatever the role and other options).
func SameState(a, b string) (bool, error) {
	if IsPostgres(a) != IsPostgres(b) {
		return false, nil
	}
	if IsPostgres(a) {
		ta, err := parsePostgres(a)
		if err != nil {
			return false, err
		}
		tb, err := parsePostgres(b)
		if err != nil {
			return false, err
		}
		return ta.cfg.Host == tb.cfg.Host && ta.cfg.Port == tb.cfg.Port && ta.cfg.Database == tb.cfg.Database && ta.schema == tb.schema, nil
	}
	ra, err := ResolveFile(a)
	if err != nil {
		return false, err
	}
	rb, err := ResolveFile(b)
	if err != nil {
		return false, err
	}
	if ra == rb {
		return true, nil
	}
	fa, errA := os.Stat(ra)
	fb, errB := os.Stat(rb)
	return errA == nil && errB == nil && os.SameFile(fa, fb), nil
}
