package state

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

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

// schemeless is a connection string whose scheme was left off
// (USER:PASSWORD@HOST/DB): taken for a path, it would name a state file
// after the password. No state file is named so, and none may be.
var schemeless = regexp.MustCompile(`^[^/\\:@\s]+:[^/\\@\s]*@`)

// ErrLocation is wrapped by the error of a location that is neither a
// PostgreSQL URL, nor a keyword string, nor a plausible file path.
var ErrLocation = errors.New("not a state location")

// CheckLocation refuses a location that is neither a PostgreSQL URL, nor a
// keyword string that names a database, nor a plausible path, and a
// PostgreSQL location that leaves its database to the role (see
// namesDatabase). Its errors show the location with any password masked.
func CheckLocation(loc string) error {
	shown := Redact(loc)
	switch {
	case strings.TrimSpace(loc) == "":
		return fmt.Errorf("%w: empty", ErrLocation)
	case isURL(loc):
		if why := redact.Ambiguous(loc); why != "" {
			// Refused before pgx reads it: pgx would connect with a piece
			// of the password for a host or database, and name that piece
			// in its errors.
			return fmt.Errorf("%w: %s: %s; in a URL, percent-encode the password (@ as %%40, # as %%23, ? as %%3F, / as %%2F), or leave it out and set PGPASSWORD", ErrLocation, shown, why)
		}
		if u, err := url.Parse(loc); err == nil {
			for k := range u.Query() {
				if err := checkKeywordCase(k, shown); err != nil {
					return err
				}
			}
		}
		return namesDatabase(loc, shown)
	case isKeywords(loc):
		pairs, err := redact.ParseKeywords(loc)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrLocation, shown, err)
		}
		for _, p := range pairs {
			if err := checkKeywordCase(p.Key, shown); err != nil {
				return err
			}
		}
		for _, p := range pairs {
			switch p.Key {
			case "host", "hostaddr", "dbname", "user", "service", "port":
				return namesDatabase(loc, shown)
			}
		}
		return fmt.Errorf("%w: %s looks like a PostgreSQL connection string but names no host, dbname, user or service", ErrLocation, shown)
	case strings.Contains(loc, "://"):
		return fmt.Errorf("%w: %s is a URL, and only postgres:// and postgresql:// URLs name a state", ErrLocation, shown)
	case schemeless.MatchString(loc):
		return fmt.Errorf("%w: %s looks like a PostgreSQL URL without its postgres:// (USER:PASSWORD@HOST), not a file path", ErrLocation, shown)
	case strings.ContainsFunc(loc, func(r rune) bool { return unicode.IsControl(r) }):
		return fmt.Errorf("%w: %q holds control characters", ErrLocation, shown)
	case strings.Contains(loc, "="):
		return fmt.Errorf("%w: %s is neither a file path nor a PostgreSQL keyword string (host=… dbname=…)", ErrLocation, shown)
	}
	return nil
}

// libpqKeywords are the connection keywords libpq (and so pgx) knows,
// and smsform's schema: each only in lower case.
var libpqKeywords = []string{
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
	"channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
	"fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
	"sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslcertmode", "sslpassword",
	"sslkeylogfile", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
	"ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
	"gssdelegation", "service", "target_session_attrs", "load_balance_hosts", "schema",
	"min_read_buffer_size", "statement_cache_capacity", "description_cache_capacity",
	"default_query_exec_mode",
}

// checkKeywordCase refuses a libpq keyword written in another case
// (PASSWORD=, ?Password=, DBNAME=). libpq and pgx know keywords in lower
// case only: pgx sends any other to the server as a setting, so the
// keyword does nothing it says (a dbname or sslmode silently unused) and
// every command fails with the server's "unrecognized configuration
// parameter". Refused as the location is read, a project file's check
// says so before anything connects. A setting of the server's own
// (TimeZone) is no keyword of libpq's and goes through as written.
func checkKeywordCase(key, shown string) error {
	lower := strings.ToLower(key)
	if key == lower || !slices.Contains(libpqKeywords, lower) {
		return nil
	}
	hint := ""
	if redact.IsSecretKey(key) {
		hint = "; the password goes in PGPASSWORD (or ~/.pgpass), not the location"
	}
	return fmt.Errorf("%w: %s: %s is not a keyword: keywords are lower-case (%s)%s", ErrLocation, shown, key, lower, hint)
}

// namesDatabase refuses a PostgreSQL location that does not name its
// database itself (its path, dbname, or a service). The server then takes
// the role's name for the database (libpq's rule; the role is the OS user
// when none is given either): postgres://smsform@db/ and
// postgres://reader@db/ would be two ledgers, as would one such location
// used with two PGUSERs, and every recipient would be messaged once from
// each. PGDATABASE does not count: a project file's state must be one
// database on every machine that reads it, whatever each one's
// environment. A location pgx cannot read is left to the opening of the
// state, which says why.
func namesDatabase(loc, shown string) error {
	// Read from the text alone, before the driver's reading, which also
	// reads the environment and files (a certificate missing on this
	// machine would skip it).
	if err := namesServer(loc, shown); err != nil {
		return err
	}
	cfg, err := pgx.ParseConfig(loc)
	if err != nil {
		return nil
	}
	if schema, ok := cfg.RuntimeParams["schema"]; ok {
		if err := checkSchema(schema, shown); err != nil {
			return err
		}
	}
	if namesDatabaseItself(loc) {
		return nil
	}
	role := "the role"
	if cfg.User != "" {
		role = "the role, " + cfg.User
	}
	return fmt.Errorf("%w: %s names no database, so PostgreSQL would use the one named after %s (or PGDATABASE, which each machine sets for itself), and each role would keep a ledger of its own: name the database in it (postgres://HOST/DBNAME or dbname=DBNAME)", ErrLocation, shown, role)
}

// checkSchema refuses a schema parameter that cannot hold smsform's
// tables. PostgreSQL keeps pg_ names for its own schemas (create schema
// pg_x fails with a bare "unacceptable schema name"), and
// information_schema is the SQL standard's catalogue, which the server
// lets anyone with CREATE write into: smsform's ledger would lie among the
// system views, and a dump or an upgrade of the database could drop it.
// Refused here, a project file's check says so before anything opens;
// other malformed names are left to parsePostgres.
func checkSchema(schema, shown string) error {
	if strings.HasPrefix(strings.ToLower(schema), "pg_") || strings.EqualFold(schema, "information_schema") {
		return fmt.Errorf("%w: %s: schema %q is PostgreSQL's own (pg_… and information_schema are its catalogues): name a schema of smsform's, such as schema=smsform (the default when the parameter is left out)", ErrLocation, shown, schema)
	}
	return nil
}

// namesServer refuses a PostgreSQL location that leaves its server to
// this machine's environment while the environment names one: without a
// host, PGHOST (or PGHOSTADDR, or PGSERVICE) picks it, and without a port,
// PGPORT. Each machine sets those for itself, so one project file would
// name a server on a laptop and another in CI: two ledgers, and everyone
// messaged once from each. Where they are unset, libpq's defaults (the
// local socket, port 5432) are no variable of this machine's to vary. A
// service the location names takes its host, port and database from each
// machine's service file (PGSERVICEFILE, ~/.pg_service.conf): two machines
// with two files kept two ledgers, so with a service the location must
// name those three itself (the service may still bring the rest: the
// user, sslmode).
func namesServer(loc, shown string) error {
	var host, port, service bool
	if u, err := url.Parse(loc); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		host = u.Hostname() != "" || q.Get("host") != "" || q.Get("hostaddr") != ""
		port = u.Port() != "" || q.Get("port") != ""
		service = q.Get("service") != ""
	} else if pairs, err := redact.ParseKeywords(loc); err == nil {
		for _, p := range pairs {
			if p.Value == "" {
				continue
			}
			switch p.Key {
			case "host", "hostaddr":
				host = true
			case "port":
				port = true
			case "service":
				service = true
			}
		}
	}
	if service {
		if !host || !port || !namesDatabaseItself(loc) {
			return fmt.Errorf("%w: %s names a service, whose host, port and database come from each machine's service file (PGSERVICEFILE, ~/.pg_service.conf): one project file would name a database per machine, and a ledger in each; name the host, the port and the database in it (postgres://HOST:PORT/DBNAME?service=…)", ErrLocation, shown)
		}
		return nil
	}
	if !host {
		for _, v := range []string{"PGHOST", "PGHOSTADDR", "PGSERVICE"} {
			if os.Getenv(v) != "" {
				return fmt.Errorf("%w: %s names no host, so this machine's %s picks the server, which each machine sets for itself: one project file would name two servers, and two ledgers; name the host in it (postgres://HOST/DBNAME or host=HOST)", ErrLocation, shown, v)
			}
		}
	}
	if !port && (os.Getenv("PGPORT") != "" || os.Getenv("PGSERVICE") != "") {
		return fmt.Errorf("%w: %s names no port, so this machine's PGPORT (or PGSERVICE's service) picks it, which each machine sets for itself: one project file would name two servers, and two ledgers; name the port in it (postgres://HOST:PORT/DBNAME or port=PORT)", ErrLocation, shown)
	}
	return nil
}

// namesDatabaseItself reports whether the text of a PostgreSQL location
// names its database: a URL's path or dbname, a keyword string's dbname
// (a service's is each machine's own: see namesServer).
func namesDatabaseItself(loc string) bool {
	if u, err := url.Parse(loc); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		return strings.Trim(u.Path, "/") != "" || q.Get("dbname") != ""
	}
	pairs, err := redact.ParseKeywords(loc)
	if err != nil {
		return true // left to the opening, which says why
	}
	for _, p := range pairs {
		if p.Key == "dbname" && p.Value != "" {
			return true
		}
	}
	return false
}

// Location is where a state lives: a file path, or a PostgreSQL database
// (a postgres:// or postgresql:// URL, or a libpq keyword/value string).
// [ParseLocation] makes one, and it is safe by default: [Location.String],
// every fmt verb (%v, %+v, %#v, %s, %q), slog and encoding/json show it
// with each password masked, so no message, log line or JSON document can
// forget to. Only [Location.Unmasked] gives the text as written, for
// opening the state.
type Location struct {
	raw      string
	postgres bool
	shown    string // raw with every password masked
	bare     string // raw with every password left out
	password bool
}

// ParseLocation reads a state location, refusing what [CheckLocation]
// refuses. What pgx reads of a PostgreSQL location (the environment's PG…
// variables, ~/.pgpass) is read again when the state is opened: here it
// only tells which database the location names.
func ParseLocation(s string) (Location, error) {
	if err := CheckLocation(s); err != nil {
		return Location{}, err
	}
	return newLocation(s), nil
}

// newLocation derives what a location shows, unchecked: Redact and
// WithoutPassword use it on what may not be a location at all.
func newLocation(s string) Location {
	l := Location{raw: s, postgres: IsPostgres(s), shown: s, bare: s}
	if m := schemeless.FindStringIndex(s); m != nil {
		// Shown, though refused: the password between the first : and
		// the @ is masked.
		user, _, _ := strings.Cut(s, ":")
		l.shown = user + ":" + redact.Mask + s[m[1]-1:]
		l.bare = user + s[m[1]-1:]
		l.password = true
	}
	if l.postgres {
		l.password = redact.HasPassword(s)
		l.shown = maskPostgres(s)
		l.bare = withoutPassword(s)
	}
	return l
}

// String is the location with every password masked: a password in a
// URL's user information or parameters, or a keyword string's, becomes
// xxxxx; a path is as written.
func (l Location) String() string { return l.shown }

// Format makes every fmt verb show [Location.String]: %q quotes it, %#v
// names the type.
func (l Location) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'q':
		fmt.Fprintf(f, "%q", l.shown)
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, l.GoString())
	default:
		io.WriteString(f, l.shown)
	}
}

// GoString is how %#v shows the location: masked too.
func (l Location) GoString() string { return fmt.Sprintf("state.Location(%q)", l.shown) }

// LogValue makes slog log the masked location.
func (l Location) LogValue() slog.Value { return slog.StringValue(l.shown) }

// MarshalText makes encoding/json (and every text encoder) write the
// masked location.
func (l Location) MarshalText() ([]byte, error) { return []byte(l.shown), nil }

// IsZero reports whether l is the zero Location, which names no state.
func (l Location) IsZero() bool { return l.raw == "" }

// IsPostgres reports whether l names a PostgreSQL database rather than a
// file.
func (l Location) IsPostgres() bool { return l.postgres }

// HasPassword reports whether l itself holds a password (PGPASSWORD and
// ~/.pgpass are not l's).
func (l Location) HasPassword() bool { return l.password }

// WithoutPassword is l with every password left out: what a saved plan
// keeps and what a person may be shown to paste, a password then coming
// from PGPASSWORD or ~/.pgpass. A path is as written; "" when a
// PostgreSQL location does not read well enough to tell where its
// password ends.
func (l Location) WithoutPassword() string { return l.bare }

// Unmasked is the location as written, password and all: for opening the
// state, never for showing.
func (l Location) Unmasked() string { return l.raw }

// File is the path of a state file, as written; "" for a PostgreSQL
// location (which [Location.Unmasked] alone gives whole).
func (l Location) File() string {
	if l.postgres {
		return ""
	}
	return l.raw
}

// Redact is loc as it may be shown: [Location.String] of a string that
// may not be a location.
func Redact(loc string) string { return newLocation(loc).shown }

// WithoutPassword is [Location.WithoutPassword] of a string that may not
// be a location.
func WithoutPassword(loc string) string { return newLocation(loc).bare }

// maskPostgres is a PostgreSQL location with its passwords masked: a
// URL's as url.URL.Redacted masks them (the role stays, which says who
// connects), its password parameters too; a URL that does not parse
// loses its whole user information.
func maskPostgres(loc string) string {
	if isKeywords(loc) {
		return redact.Keywords(loc)
	}
	u, ok := redact.ParseURL(loc)
	if !ok {
		return redact.URL(loc)
	}
	q, masked := u.Query(), false
	for k := range q {
		if redact.IsSecretKey(k) {
			q.Set(k, redact.Mask)
			masked = true
		}
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// withoutPassword is a PostgreSQL location with its passwords left out,
// "" when it does not read.
func withoutPassword(loc string) string {
	if isKeywords(loc) {
		pairs, err := redact.ParseKeywords(loc)
		if err != nil {
			return ""
		}
		kv := map[string]string{}
		for _, p := range pairs {
			if !redact.IsSecretKey(p.Key) {
				kv[p.Key] = p.Value
			}
		}
		return joinKeywords(kv)
	}
	u, ok := redact.ParseURL(loc)
	if !ok {
		return ""
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q, found := u.Query(), false
	for k := range q {
		if redact.IsSecretKey(k) {
			q.Del(k)
			found = true
		}
	}
	if found {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// joinKeywords writes keyword/value pairs as libpq reads them, in a fixed
// order, every value quoted. pgx reads keyword strings but cannot write
// one back, so leaving a password out needs this writer.
func joinKeywords(kv map[string]string) string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		v := strings.ReplaceAll(strings.ReplaceAll(kv[k], `\`, `\\`), `'`, `\'`)
		fmt.Fprintf(&b, "%s='%s'", k, v)
	}
	return b.String()
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
			return "", fmt.Errorf("folder %s does not exist: smsform makes no folder for a state named on the command line (a typo would start an empty ledger); create it if the state is to go there", folder)
		}
		return "", err
	}
	return filepath.Join(dir, file), nil
}

// SameState reports whether a and b name the same state: the same file
// (whatever the spelling of its path, hard links included), or the same
// PostgreSQL database and schema (whatever the role and other options).
// The database compared is the one each names; one that names none, which
// the server would take from its role, is refused (see namesDatabase), so
// two roles never compare equal by both leaving it out.
func SameState(la, lb Location) (bool, error) {
	a, b := la.Unmasked(), lb.Unmasked()
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

// MustParseLocation is [ParseLocation] of a location known to be good (a
// test's, a constant's): it panics on one ParseLocation refuses.
func MustParseLocation(s string) Location {
	l, err := ParseLocation(s)
	if err != nil {
		panic(err)
	}
	return l
}
