package campaign

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/realpath"
	"github.com/smsform/smsform/internal/redact"
	"github.com/smsform/smsform/internal/words"
)

// ProjectFile is the name of the project file, found in a campaign's folder
// or the nearest folder above it.
const ProjectFile = "smsform.yaml"

// Project is a loaded project file: what every campaign of a project
// shares, declared in git rather than in each operator's environment, the
// way Terraform's backend block is. A campaign's own values win over the
// project's, key by key.
type Project struct {
	Path string // the project file, absolute
	Dir  string // its folder: paths in the file are relative to it

	// State is the project's state as written: a PostgreSQL URL or keyword
	// string, or a path (relative to Dir) to a state file or a folder for
	// one; "" when the file names none. StateLine is its line.
	State     string
	StateLine int
	// FrequencyCap bounds the messages to one number across every campaign
	// of the project; nil: none.
	FrequencyCap *FrequencyCap
	// TestRecipients are numbers `smsform test` may send to, as written;
	// TestRecipientLines their lines, so that `test`, which reads them
	// with a campaign's default_region, can say where one is wrong.
	TestRecipients     []string
	TestRecipientLines []int
	// Campaigns are the globs (relative to Dir) that find the project's
	// campaign files.
	Campaigns []string
	// Reports and Replies say how the provider's delivery reports and the
	// replies it forwards are read (provider.reports, provider.replies);
	// nil when the file maps none. Receive is how smsform receive takes
	// them (receive:); nil when the file has none. See receive.go.
	Reports *mapping.Reports
	Replies *mapping.Replies
	Receive *Receive

	provider   rawProvider
	compliance rawCompliance // kind, compliance and opt_out_words for every campaign (compliance.go)
}

// FrequencyCap is at most Max messages to one number in any window of Per,
// across every campaign of the project.
type FrequencyCap struct {
	Max int
	Per time.Duration
}

// String writes the cap as "3 per 24h".
func (f FrequencyCap) String() string { return fmt.Sprintf("%d per %s", f.Max, words.Duration(f.Per)) }

// AtLeastAsStrict reports whether f allows no more than g in any window:
// no more messages, over a window no shorter.
func (f FrequencyCap) AtLeastAsStrict(g FrequencyCap) bool { return f.Max <= g.Max && f.Per >= g.Per }

// DefaultCampaignGlobs find a project's campaigns unless campaigns: says.
var DefaultCampaignGlobs = []string{"campaigns/*.yaml", "*.yaml"}

// Frequency caps longer than this are refused: the cap's index keeps every
// send this long, and state prune drops what is older.
// MaxCapWindow is the longest window a frequency cap may have: pruning
// sends older than it never changes what any cap allows.
const MaxCapWindow = 90 * 24 * time.Hour

var projectKeys = []string{"version", "state", "provider", "frequency_cap", "test_recipients", "campaigns", "kind", "compliance", "opt_out_words", "receive"}

// FindProject returns the project file that governs files in dir: in dir or
// the nearest folder above it, up to the top of the git repository dir is
// in (which is looked at too) or the file system's root. The top is the
// outermost repository's root: a repository nested in another (a
// submodule, a clone, a git init in a project's folder) is part of it, and
// a .git that is no repository (an empty folder) is nothing; either would
// otherwise hide the project, and give its campaigns a fresh ledger. A
// project file above a repository that no other holds does not govern
// it. "" when there is none.
func FindProject(dir string) (string, error) {
	dir, err := realpath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", ProjectFile, err)
	}
	// The folders above are those of the real folder: a campaign reached
	// through a linked folder belongs to the project it really sits in.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	} else {
		dir = filepath.Clean(dir)
	}
	// found is a project file above a repository's root: it governs only
	// if a repository holds its folder too.
	found, crossed := "", false
	for {
		if found == "" {
			p, err := projectFileIn(dir)
			switch {
			case err != nil:
				return "", err
			case p != "" && !crossed:
				return p, nil
			}
			found = p
		}
		if isRepository(dir) {
			if found != "" {
				return found, nil
			}
			crossed = true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// FoldersUpToRepository are the folders above dir, nearest first, up to
// the root of the outermost git repository that holds it (that root
// included: a repository made inside another, a clone or a submodule,
// hides nothing above it). ok is false when no repository holds dir. dir
// is an absolute folder.
func FoldersUpToRepository(dir string) (up []string, ok bool) {
	ok = isRepository(dir)
	last := 0
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return up[:last:last], ok
		}
		dir = parent
		up = append(up, dir)
		if isRepository(dir) {
			last, ok = len(up), true
		}
	}
}

// isRepository reports whether dir is a git repository's root: its .git
// is a folder holding HEAD, or a file naming the repository's folder
// elsewhere ("gitdir: …", a submodule's or a worktree's). Git itself
// looks further up from any other .git, and so does [FindProject].
func isRepository(dir string) bool {
	git := filepath.Join(dir, ".git")
	fi, err := os.Stat(git)
	switch {
	case err != nil:
		return false
	case fi.IsDir():
		_, err := os.Stat(filepath.Join(git, "HEAD"))
		return err == nil
	case !fi.Mode().IsRegular():
		return false
	}
	f, err := os.Open(git)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len("gitdir:"))
	n, _ := io.ReadFull(f, b)
	return string(b[:n]) == "gitdir:"
}

// LoadProject reads and checks the project file at path. Like [Load], every
// problem is an [*Error] with the file and line.
func LoadProject(path string) (*Project, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	l := &loader{file: path, lines: map[string]int{}, bad: map[string]bool{}}
	p := l.loadProject(abs)
	if err := l.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// ProjectOfFile finds and loads the project of the file at path (a
// campaign file): the project of the folder the file really sits in, even
// when path goes through a link and up again ("link/../spring.yaml") or
// is itself a link: a campaign reached through a link keeps its project,
// and so its ledger.
func ProjectOfFile(path string) (*Project, error) {
	dir, err := realpath.Dir(path)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", ProjectFile, err)
	}
	return ProjectFor(dir)
}

// Followed is the campaign file at path where it really is when path
// names a link to it, else path as given (so that messages show it as it
// was written): a linked campaign's lists and its state next to it are
// those beside its target, as its project is.
func Followed(path string) string {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return path
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// ProjectFor finds and loads the project of the files in dir; nil when
// there is none.
func ProjectFor(dir string) (*Project, error) {
	path, err := FindProject(dir)
	if err != nil || path == "" {
		return nil, err
	}
	return LoadProject(path)
}

// EnclosingProjects are the project files above the project whose folder
// is dir, nearest first, up to the file system's root: a project nested in
// another may hold a campaign the outer one once sent, whose ledger is
// then the outer project's state. Unlike [FindProject], no .git stops the
// search: a repository between the two (a submodule, a clone, a git init)
// hides no ledger. None when dir's project is the outermost.
func EnclosingProjects(dir string) ([]string, error) {
	var found []string
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return found, nil
		}
		dir = parent
		p, err := projectFileIn(dir)
		if err != nil {
			return found, err
		}
		if p != "" {
			found = append(found, p)
		}
	}
}

// projectFileIn is the project file in dir, "" when there is none; one
// that is not a regular file is an error.
func projectFileIn(dir string) (string, error) {
	p := filepath.Join(dir, ProjectFile)
	switch fi, err := os.Stat(p); {
	case err == nil && fi.Mode().IsRegular():
		return p, nil
	case err == nil:
		return "", fmt.Errorf("find %s: %s is not a regular file", ProjectFile, Plain(p))
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("find %s: %w", ProjectFile, err)
	}
	return "", nil
}

// rawProject is a project file as written.
type rawProject struct {
	Version  int
	State    string
	Provider rawProvider
}

func (l *loader) loadProject(abs string) *Project {
	data, ok := l.read()
	if !ok {
		return nil
	}
	root, ok := l.parse(data)
	if !ok || !l.checkTree(root, "", 0) {
		return nil
	}
	// The provider starts from the defaults so that its values validate;
	// only the keys it writes (set) lie under a campaign's.
	p := &Project{Path: abs, Dir: filepath.Dir(abs), Campaigns: DefaultCampaignGlobs, provider: defaultProvider()}
	var rp rawProject
	l.mapping(root, "", projectKeys, func(key, path string, v *yaml.Node) bool {
		switch key {
		case "version":
			l.int(v, path, &rp.Version)
		case "state":
			if l.str(v, path, &rp.State) {
				p.State, p.StateLine = strings.TrimSpace(rp.State), v.Line
				l.checkProjectState(p.State, v.Line)
			}
		case "provider":
			l.projectProvider(v, path, p)
		case "receive":
			p.Receive = l.receive(v, path)
		case "frequency_cap":
			p.FrequencyCap = l.frequencyCap(v, path)
		case "test_recipients":
			p.TestRecipients, p.TestRecipientLines = l.numbers(v, path)
		case "campaigns":
			p.Campaigns = l.globs(v, path)
		case "kind", "compliance", "opt_out_words":
			l.complianceKey(key, path, v, &p.compliance)
		}
		return true
	})
	rp.Provider = p.provider
	l.checkOthers(&p.provider, "provider")
	applyRules(l, projectRules(), &rp)
	l.checkProjectReceive(p)
	if len(l.errs) > 0 {
		return nil
	}
	return p
}

// checkProjectState refuses a state location that holds a password: the
// project file is kept in git.
func (l *loader) checkProjectState(s string, line int) {
	switch {
	case s == "":
		l.add(line, "state", "name a PostgreSQL database (postgres://…) or a folder for the state file, or leave the key out", "must not be empty")
	case redact.HasPassword(s):
		l.add(line, "state", "remove the password: give it in PGPASSWORD or ~/.pgpass, or in SMSFORM_STATE (the same database with the password)",
			"a password must not be written in the project file, which is kept in git")
	}
}

// frequencyCap reads a frequency_cap block: max and per, both required.
func (l *loader) frequencyCap(v *yaml.Node, path string) *FrequencyCap {
	f := &FrequencyCap{}
	var hasMax, hasPer bool
	before := len(l.errs)
	l.mapping(v, path, []string{"max", "per"}, func(key, path string, v *yaml.Node) bool {
		switch key {
		case "max":
			hasMax = true
			// Left out, max is an error, not no bound.
			l.atLeastOne(v, path, &f.Max, "write the most messages a number may get in the window, e.g. max: 3; remove frequency_cap for no cap")
		case "per":
			hasPer = true
			l.duration(v, path, time.Minute, MaxCapWindow, "e.g. 24h: the window, in hours (h) or minutes (m), at most 2160h", &f.Per)
		}
		return true
	})
	if v.Kind == yaml.MappingNode && (!hasMax || !hasPer) {
		l.add(v.Line, path, "write frequency_cap: {max: 3, per: 24h}", "needs both max and per")
	}
	if len(l.errs) > before {
		return nil
	}
	return f
}

// globs reads a list of file patterns.
func (l *loader) globs(v *yaml.Node, path string) []string {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		l.add(v.Line, path, "write campaigns: [\"campaigns/*.yaml\"]", "must be a non-empty list of file patterns, not %s", kindWords(v))
		return nil
	}
	var out []string
	for i, item := range v.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		var s string
		if !l.str(item, p, &s) {
			continue
		}
		if _, err := filepath.Match(s, ""); err != nil || s == "" || filepath.IsAbs(s) {
			l.add(item.Line, p, "write a pattern relative to the project file, e.g. campaigns/*.yaml", "%s is not a file pattern", Quote(s))
			continue
		}
		out = append(out, s)
	}
	return out
}

// CampaignFiles lists the project's campaign files, sorted: what its globs
// match, the project file itself excepted.
func (p *Project) CampaignFiles() ([]string, error) {
	var files []string
	for _, g := range p.Campaigns {
		matches, err := filepath.Glob(filepath.Join(p.Dir, g))
		if err != nil {
			return nil, fmt.Errorf("%s: campaigns: %w", p.Path, err)
		}
		for _, m := range matches {
			if fi, err := os.Stat(m); err != nil || !fi.Mode().IsRegular() || m == p.Path || slices.Contains(files, m) {
				continue
			}
			files = append(files, m)
		}
	}
	slices.Sort(files)
	return files, nil
}

// maxNameRead bounds what NameOf reads: a campaign file is a page of YAML.
const maxNameRead = 1 << 20

// NameOf is the name: a campaign file says, read without the rest of the
// campaign (its lists, its provider): "" when the file holds none, or is
// no campaign file that can be read. Commands that look for a campaign's
// state beside other campaign files use it to tell theirs from others'.
func NameOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var doc struct {
		Name any `yaml:"name"`
	}
	if yaml.NewDecoder(io.LimitReader(f, maxNameRead)).Decode(&doc) != nil {
		return ""
	}
	name, _ := doc.Name.(string)
	return name
}
