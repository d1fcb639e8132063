package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/words"
)

const (
	// maxFileSize bounds what Load reads: a campaign is a page of YAML, and
	// anything much bigger is a mistake or an attack.
	maxFileSize = 1 << 20
	// maxDepth is far more nesting than a campaign needs (recipients[0].numbers[0]
	// is four levels) and far less than would make walking the tree costly.
	maxDepth = 16
	// maxErrors keeps a hopeless file from burying the first, useful errors.
	maxErrors = 50
)

// rawCampaign is the file as written, checked by the rules of validate.go. Zero values mean "absent" only where no default applies:
// defaults are filled in before the walk, so an explicit 0 is still an error.
type rawCampaign struct {
	Version       int
	Name          string
	Sender        string
	Provider      rawProvider
	DefaultRegion string
	Recipients    []rawSource
	Exclude       []rawSource
	Body          string
	BatchSize     int
	Rate          string
	Concurrency   int
	Strict        bool
	window        rawWindow // send_window, fallback_timezone, not_before, not_after (window.go)
	Prices        string
	Budget        rawBudget
	EmptyVars     string
	FrequencyCap  *FrequencyCap
	capLine       int
	compliance    rawCompliance  // kind, compliance, opt_out_words, dlt (compliance.go)
	bodyNode      *yaml.Node     // for template error lines
	sourceNodes   [2][]sourcePos // recipients, exclude
}

// rawBudget is budget: as written; max_total keeps its text, so that no
// float ever stands between the file and the decimal.
type rawBudget struct {
	MaxTotal      string
	MaxSegments   int
	MaxRecipients int
}

type rawSource struct {
	Numbers     []string
	File        string
	PhoneColumn string
}

// sourcePos is what the walk learns about a source besides its values.
type sourcePos struct {
	line        int
	numberLines []int
	hasNumbers  bool
	hasFile     bool
	hasColumn   bool
	bad         bool // the walk already reported a problem in this source
}

func defaults() rawCampaign {
	return rawCampaign{
		Provider:    defaultProvider(),
		BatchSize:   100,
		Concurrency: 1,
		EmptyVars:   "warn",
	}
}

// loader collects the problems of one campaign file.
type loader struct {
	file    string
	project *Project // the campaign's project, nil outside one
	errs    []*Error
	lines   map[string]int  // dotted path -> line of its key (or list item)
	bad     map[string]bool // paths the walk already reported, so validation keeps quiet about them
}

func (l *loader) add(line int, field, hint, format string, args ...any) {
	if l.addErr(&Error{File: l.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...), Hint: hint}) && field != "" {
		l.bad[field] = true
	}
}

// addErr adds a problem of the campaign or of a file it names, unless there
// are too many already; it reports whether it did.
func (l *loader) addErr(e *Error) bool {
	if len(l.errs) == maxErrors {
		l.errs = append(l.errs, &Error{File: l.file, Line: e.Line, Msg: "too many errors; fix the ones above first"})
	}
	if len(l.errs) > maxErrors {
		return false
	}
	l.errs = append(l.errs, e)
	return true
}

// err returns nil, the only *Error, or every *Error joined in file order.
func (l *loader) err() error {
	switch len(l.errs) {
	case 0:
		return nil
	case 1:
		return l.errs[0]
	}
	// The walk finds structural problems before validation finds value
	// problems; a reader wants them in the order of the file.
	// Problems of a file the campaign names (its price table) follow those
	// of the campaign file, in their own order.
	slices.SortStableFunc(l.errs, func(a, b *Error) int {
		switch {
		case a.File == l.file && b.File == l.file:
			return a.Line - b.Line
		case a.File == l.file:
			return -1
		case b.File == l.file:
			return 1
		}
		return 0
	})
	errs := make([]error, len(l.errs))
	for i, e := range l.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

func (l *loader) load() *Campaign {
	l.lines = map[string]int{}
	l.bad = map[string]bool{}
	data, ok := l.read()
	if !ok {
		return nil
	}
	root, ok := l.parse(data)
	if !ok {
		return nil
	}
	if !l.checkTree(root, "", 0) {
		return nil
	}
	rc := defaults()
	if l.project != nil {
		l.project.provider.overlay(&rc.Provider)
	}
	l.walkCampaign(root, &rc)
	l.checkOthers(&rc.Provider, "provider")
	l.validate(&rc)
	l.checkWindow(&rc.window)
	if len(l.errs) > 0 {
		return nil
	}
	return l.build(&rc)
}

// read returns the file's bytes if they can be YAML for a campaign.
func (l *loader) read() ([]byte, bool) {
	f, err := os.Open(l.file)
	if err != nil {
		l.add(0, "", "", "%s", fileProblem(err))
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		l.add(0, "", "", "not a regular file")
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		l.add(0, "", "", "%s", fileProblem(err))
		return nil, false
	}
	switch {
	case len(data) > maxFileSize:
		l.add(0, "", "", "file is larger than %d bytes; a campaign file should be a page of YAML", maxFileSize)
	case len(bytes.TrimSpace(data)) == 0:
		l.add(0, "", "start from one of the campaigns in examples/", "file is empty")
	case bytes.IndexByte(data, 0) >= 0:
		l.add(lineAt(data, bytes.IndexByte(data, 0)), "", "", "file holds binary data (a NUL byte), not YAML")
	case !utf8.Valid(data):
		l.add(lineAt(data, invalidUTF8At(data)), "", "save the file as UTF-8", "file is not valid UTF-8 text")
	default:
		return data, true
	}
	return nil, false
}

// fileProblem words an error from the file system without repeating the path,
// which the *Error already names.
func fileProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "file does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "cannot read the file: permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "cannot read the file: " + pe.Err.Error()
	}
	return "cannot read the file: " + err.Error()
}

func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return 0
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse returns the top-level mapping of the only document in data.
func (l *loader) parse(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.add(0, "", "start from one of the campaigns in examples/", "file holds no YAML, only comments or blank lines")
			return nil, false
		}
		l.yamlError(err)
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		l.yamlError(err)
		return nil, false
	default:
		l.add(next.Line, "", "keep one campaign per file", "file holds more than one YAML document (a second \"---\")")
		return nil, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		l.add(doc.Line, "", "", "file holds no YAML document")
		return nil, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		l.add(root.Line, "", "a campaign starts with \"version: 1\" on its own line", "file must hold a mapping of keys (version, name, sender, ...), not %s", kindWords(root))
		return nil, false
	}
	return root, true
}

func (l *loader) yamlError(err error) {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		l.add(line, "", "", "invalid YAML: %s", m[2])
		return
	}
	l.add(0, "", "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// checkTree refuses what a campaign never needs and an attacker would use:
// anchors and aliases (the "billion laughs" expand a few lines into gigabytes)
// and deep nesting. It also finds secret-looking keys anywhere in the file,
// so that one never gets the milder "unknown key" error.
func (l *loader) checkTree(n *yaml.Node, path string, depth int) bool {
	if depth > maxDepth {
		l.add(n.Line, "", "", "YAML is nested more than %d levels deep; a campaign needs a few", maxDepth)
		return false
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		l.add(n.Line, "", "write the value out in full", "YAML anchors and aliases (&name, *name) are not allowed in a campaign file")
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if !l.checkTree(k, path, depth+1) {
				return false
			}
			p := join(path, k.Value)
			if k.Kind == yaml.ScalarNode && isSecretKey(k.Value) {
				l.add(k.Line, p, secretHint,
					"secrets must not be written in the campaign file, which is kept in git; remove this key and use the environment")
			}
			if !l.checkTree(v, p, depth+1) {
				return false
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if !l.checkTree(c, fmt.Sprintf("%s[%d]", path, i), depth+1) {
				return false
			}
		}
	}
	return true
}

const secretHint = "set SMSFORM_CLIENT_ID and SMSFORM_CLIENT_SECRET in the environment"

// isSecretKey reports whether a key names a credential, in any spelling:
// client_secret, clientSecret, API-KEY, access_token, db_password...
func isSecretKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' || r == '.' {
			return -1
		}
		return r
	}, strings.ToLower(key))
	for _, s := range []string{"secret", "token", "password", "passwd", "apikey", "credential"} {
		if strings.HasSuffix(k, s) || strings.HasSuffix(k, s+"s") {
			return true
		}
	}
	return false
}

func kindWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		case "!!bool":
			return "true/false"
		case "!!null":
			return "nothing"
		}
		return fmt.Sprintf("the text %q", n.Value)
	}
	return "an alias"
}

// fieldFunc decodes the value v of the known key at path; it reports false
// for a key it does not know.
type fieldFunc func(key, path string, v *yaml.Node) bool

// mapping walks a mapping's keys, reporting unknown and repeated ones.
// Null values (a key with nothing after it) are left at their default.
func (l *loader) mapping(n *yaml.Node, path string, known []string, field fieldFunc) {
	if n.Kind != yaml.MappingNode {
		l.add(n.Line, path, "", "must be a mapping of keys (%s), not %s", strings.Join(known, ", "), kindWords(n))
		return
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" && k.ShortTag() != "!!int" && k.ShortTag() != "!!bool" {
			l.add(k.Line, path, "", "keys must be plain words, not %s", kindWords(k))
			continue
		}
		p := join(path, k.Value)
		if isSecretKey(k.Value) {
			continue // checkTree has said why
		}
		if line, dup := first[k.Value]; dup {
			l.add(k.Line, p, "remove one of them", "key is repeated (first on line %d)", line)
			continue
		}
		first[k.Value] = k.Line
		l.lines[p] = k.Line
		if !slices.Contains(known, k.Value) {
			l.add(k.Line, p, unknownHint(k.Value, known), "unknown key")
			continue
		}
		if v.ShortTag() == "!!null" {
			continue
		}
		field(k.Value, p, v)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func unknownHint(key string, known []string) string {
	if strings.EqualFold(key, "client_id") || strings.EqualFold(key, "clientid") {
		return "set SMSFORM_CLIENT_ID in the environment"
	}
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "known keys here: " + strings.Join(known, ", ")
}

// editDistance is the Levenshtein distance, for "did you mean" hints on short keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var (
	budgetKeys = []string{"max_total", "max_segments_per_message", "max_recipients"}
	sourceKeys = []string{"numbers", "file", "phone_column"}
)

// A keyReader reads the value v of one key, at path, into rc.
type keyReader func(l *loader, path string, v *yaml.Node, rc *rawCampaign)

// campaignKeys is every top-level key of a campaign file, in the order
// hints list them, with how the walk reads it: the one list of the file's
// keys. Its value rules are in validate.go, and the JSON Schema's
// properties are made from it (schema_test.go).
var campaignKeys = []struct {
	name string
	read keyReader
}{
	{"version", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.int(v, path, &rc.Version) }},
	{"name", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.str(v, path, &rc.Name) }},
	{"sender", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.str(v, path, &rc.Sender) }},
	{"provider", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.provider(v, path, &rc.Provider) }},
	{"default_region", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.str(v, path, &rc.DefaultRegion) }},
	{"recipients", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
		rc.Recipients, rc.sourceNodes[0] = l.sources(v, path)
	}},
	{"exclude", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
		rc.Exclude, rc.sourceNodes[1] = l.sources(v, path)
	}},
	{"body", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
		if l.str(v, path, &rc.Body) {
			rc.bodyNode = v
		}
	}},
	{"batch_size", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.int(v, path, &rc.BatchSize) }},
	{"rate", (*loader).rate},
	{"concurrency", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.int(v, path, &rc.Concurrency) }},
	{"strict", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.bool(v, path, &rc.Strict) }},
	{"send_window", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.sendWindow(v, path, &rc.window) }},
	{"fallback_timezone", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.zone(v, path, &rc.window) }},
	{"not_before", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
		l.instant(v, path, &rc.window.spec.NotBefore)
	}},
	{"not_after", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
		l.instant(v, path, &rc.window.spec.NotAfter)
	}},
	{"prices", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.str(v, path, &rc.Prices) }},
	{"budget", (*loader).budget},
	{"empty_variables", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) { l.str(v, path, &rc.EmptyVars) }},
	{"frequency_cap", func(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
		rc.FrequencyCap, rc.capLine = l.frequencyCap(v, path), v.Line
	}},
	{"kind", readCompliance},
	{"compliance", readCompliance},
	{"opt_out_words", readCompliance},
	{"dlt", readCompliance},
}

// readCompliance reads the keys that compliance.go reads.
func readCompliance(l *loader, path string, v *yaml.Node, rc *rawCampaign) {
	l.complianceKey(lastKey(path), path, v, &rc.compliance)
}

// topKeys are the names of campaignKeys, for the walk's "unknown key" hints.
func topKeys() []string {
	names := make([]string, len(campaignKeys))
	for i, k := range campaignKeys {
		names[i] = k.name
	}
	return names
}

func (l *loader) walkCampaign(root *yaml.Node, rc *rawCampaign) {
	l.mapping(root, "", topKeys(), func(key, path string, v *yaml.Node) bool {
		for _, k := range campaignKeys {
			if k.name == key {
				k.read(l, path, v, rc)
			}
		}
		return true
	})
}

// rate reads rate:, which needs a unit: a bare number is not a rate.
func (l *loader) rate(path string, v *yaml.Node, rc *rawCampaign) {
	if v.Kind == yaml.ScalarNode && (v.ShortTag() == "!!int" || v.ShortTag() == "!!float") {
		l.add(v.Line, path, fmt.Sprintf("write %s/s for %s per second (or /m, /h)", v.Value, v.Value), "a rate needs a unit")
		return
	}
	l.str(v, path, &rc.Rate)
}

// budget reads budget:, a mapping of bounds.
func (l *loader) budget(path string, v *yaml.Node, rc *rawCampaign) {
	l.mapping(v, path, budgetKeys, func(key, path string, v *yaml.Node) bool {
		switch key {
		case "max_total":
			l.amount(v, path, &rc.Budget.MaxTotal)
		case "max_segments_per_message":
			l.positive(v, path, &rc.Budget.MaxSegments)
		case "max_recipients":
			l.positive(v, path, &rc.Budget.MaxRecipients)
		}
		return true
	})
}

// amount reads a sum of money as written: digits with an optional decimal
// point, whether YAML took it for a number or text.
func (l *loader) amount(v *yaml.Node, path string, dst *string) {
	if v.Kind == yaml.ScalarNode && priceRE.MatchString(strings.TrimSpace(v.Value)) {
		*dst = strings.TrimSpace(v.Value)
		return
	}
	hint := "write the amount in the price table's currency as digits, e.g. 250 or 99.50"
	if v.Kind == yaml.ScalarNode && strings.Count(v.Value, ",") == 1 && priceRE.MatchString(strings.Replace(v.Value, ",", ".", 1)) {
		hint = "write decimals with a dot: " + strings.Replace(v.Value, ",", ".", 1)
	}
	l.add(v.Line, path, hint, "must be an amount of money, not %s", kindWords(v))
}

// positive reads a whole number of at least 1: a bound of 0 would refuse
// everything, and no bound is written by leaving the key out.
func (l *loader) positive(v *yaml.Node, path string, dst *int) {
	l.atLeastOne(v, path, dst, "leave the key out for no bound")
}

// atLeastOne reads a whole number of at least 1; hint says what to write
// instead of a smaller one.
func (l *loader) atLeastOne(v *yaml.Node, path string, dst *int, hint string) {
	var n int
	if !l.int(v, path, &n) {
		return
	}
	if n < 1 {
		l.add(v.Line, path, hint, "%d is too small: the least allowed is 1", n)
		return
	}
	*dst = n
}

func (l *loader) sources(n *yaml.Node, path string) ([]rawSource, []sourcePos) {
	if n.Kind != yaml.SequenceNode {
		l.add(n.Line, path, "write each source as a list item: \"- file: lists/customers.csv\"", "must be a list of sources, not %s", kindWords(n))
		return nil, nil
	}
	srcs := make([]rawSource, len(n.Content))
	pos := make([]sourcePos, len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		l.lines[p] = item.Line
		pos[i].line = item.Line
		errsBefore := len(l.errs)
		if item.Kind == yaml.ScalarNode && item.ShortTag() == "!!str" {
			l.add(item.Line, p, fmt.Sprintf("write \"- file: %s\", or \"- numbers: [...]\" for numbers", item.Value), "each source must be a mapping with numbers: or file:, not %s", kindWords(item))
			pos[i].bad = true
			continue
		}
		s, sp := &srcs[i], &pos[i]
		l.mapping(item, p, sourceKeys, func(key, path string, v *yaml.Node) bool {
			switch key {
			case "numbers":
				sp.hasNumbers = true
				s.Numbers, sp.numberLines = l.numbers(v, path)
			case "file":
				sp.hasFile = true
				l.str(v, path, &s.File)
			case "phone_column":
				sp.hasColumn = true
				l.str(v, path, &s.PhoneColumn)
			}
			return true
		})
		if len(l.errs) > errsBefore {
			pos[i].bad = true
		}
	}
	return srcs, pos
}

func (l *loader) numbers(n *yaml.Node, path string) ([]string, []int) {
	if n.Kind != yaml.SequenceNode {
		l.add(n.Line, path, "write numbers: [\"+14155550101\", \"+447700900123\"]", "must be a list of phone numbers, not %s", kindWords(n))
		return nil, nil
	}
	nums := make([]string, 0, len(n.Content))
	lines := make([]int, 0, len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if item.Kind == yaml.ScalarNode && (item.ShortTag() == "!!int" || item.ShortTag() == "!!float") {
			l.add(item.Line, p, "quote it with its leading + or 0: "+quotedNumber(item.Value),
				"phone number %s is written as a YAML number, which loses a leading + or 0", item.Value)
			continue
		}
		var s string
		if l.str(item, p, &s) {
			nums = append(nums, s)
			lines = append(lines, item.Line)
		}
	}
	return nums, lines
}

// quotedNumber is how to write a phone number that YAML read as a number,
// from its text as written (the node keeps it): quoted as it stands when
// it starts with + or 0 (a national number such as 0740012345 stays one),
// with a + in front otherwise.
func quotedNumber(written string) string {
	if strings.HasPrefix(written, "+") || strings.HasPrefix(written, "0") {
		return `"` + written + `"`
	}
	return `"+` + written + `"`
}

func (l *loader) str(v *yaml.Node, path string, dst *string) bool {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
		*dst = v.Value
		return true
	}
	hint := ""
	if v.Kind == yaml.ScalarNode {
		hint = fmt.Sprintf("quote it: %q", v.Value)
	}
	l.add(v.Line, path, hint, "must be text, not %s", kindWords(v))
	return false
}

func (l *loader) int(v *yaml.Node, path string, dst *int) bool {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" {
		// 32 bits are plenty for every count a campaign holds, and keep
		// huge literals from wrapping around into valid-looking values.
		if n, err := strconv.ParseInt(v.Value, 0, 32); err == nil {
			*dst = int(n)
			return true
		}
		l.add(v.Line, path, "", "number %s is out of range", v.Value)
		return false
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!float" && wholeRE.MatchString(v.Value) {
		l.add(v.Line, path, "", "number %s is out of range", v.Value) // YAML reads integers too big for 64 bits as floats
		return false
	}
	l.add(v.Line, path, "write a whole number without quotes, e.g. "+lastKey(path)+": 100", "must be a whole number, not %s", kindWords(v))
	return false
}

// lastKey is the last key of a dotted path: "send_window.days" -> "days".
func lastKey(path string) string {
	return path[strings.LastIndex(path, ".")+1:]
}

func (l *loader) bool(v *yaml.Node, path string, dst *bool) bool {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
		*dst = v.Value == "true" || v.Value == "True" || v.Value == "TRUE"
		return true
	}
	l.add(v.Line, path, "write true or false, without quotes", "must be true or false, not %s", kindWords(v))
	return false
}

// build turns a valid rawCampaign into a Campaign, checking what needs the
// file system (list files) and the template.
func (l *loader) build(rc *rawCampaign) *Campaign {
	c := &Campaign{
		Path:           l.file,
		Dir:            filepath.Dir(Followed(l.file)),
		Version:        rc.Version,
		Name:           rc.Name,
		Sender:         rc.Sender,
		Provider:       rc.Provider.provider(),
		DefaultRegion:  rc.DefaultRegion,
		Body:           strings.TrimRight(rc.Body, "\r\n"),
		BatchSize:      rc.BatchSize,
		Concurrency:    rc.Concurrency,
		Strict:         rc.Strict,
		EmptyVariables: rc.EmptyVars,
		Budget: Budget{
			MaxSegmentsPerMessage: rc.Budget.MaxSegments,
			MaxRecipients:         rc.Budget.MaxRecipients,
		},
	}
	c.Rate, _ = parseRate(rc.Rate) // validated
	c.Project = l.project
	c.FrequencyCap = l.checkCap(rc.FrequencyCap, rc.capLine)
	c.Window, c.WindowLine = rc.window.spec, rc.window.line
	c.Compliance = l.buildCompliance(&rc.compliance)
	if rc.Budget.MaxTotal != "" {
		d := decimal.RequireFromString(rc.Budget.MaxTotal) // amount checked its pattern
		c.Budget.MaxTotal = &d
		if rc.Prices == "" {
			l.add(l.lines["budget.max_total"], "budget.max_total", "add prices: FILE.csv (country,prefix,price_per_segment,currency) to the campaign",
				"a cost budget needs a price table")
		}
	}
	if rc.Prices != "" {
		c.Prices = l.loadPrices(c, rc.Prices, l.lines["prices"])
	}
	c.Recipients = l.buildSources(c, "recipients", rc.Recipients, rc.sourceNodes[0])
	c.Exclude = l.buildSources(c, "exclude", rc.Exclude, rc.sourceNodes[1])
	if rc.bodyNode != nil {
		c.BodyLine = rc.bodyNode.Line
	}
	c.tmpl = l.parseBody(c.Body, rc.bodyNode)
	if c.tmpl != nil {
		c.printed = printedFields(c.tmpl.Tree.Root, nil)
	}
	if len(l.errs) > 0 {
		return nil
	}
	return c
}

var wholeRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

var rateRE = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*/\s*([smh])\s*$`)

// parseRate reads "N/s", "N/m" or "N/h"; "" is unlimited.
func parseRate(s string) (Rate, bool) {
	if s == "" {
		return Rate{}, true
	}
	m := rateRE.FindStringSubmatch(s)
	if m == nil {
		return Rate{}, false
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n <= 0 {
		return Rate{}, false
	}
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[m[2]]
	return Rate{N: n, Per: per}, true
}

// checkCap refuses a campaign's frequency_cap outside a project, or looser
// than the project's: caps concern people, so the project's holds for every
// campaign, and a campaign may only ask for less.
func (l *loader) checkCap(f *FrequencyCap, line int) *FrequencyCap {
	switch {
	case f == nil:
		return nil
	case l.project == nil:
		l.add(line, "frequency_cap", "create "+ProjectFile+" with a state beside or above the campaign: caps are kept across the campaigns of a project",
			"a frequency cap needs a project file")
	case l.project.FrequencyCap != nil && !f.AtLeastAsStrict(*l.project.FrequencyCap):
		l.add(line, "frequency_cap", fmt.Sprintf("set at most %d per at least %s, or leave it out to use the project's", l.project.FrequencyCap.Max, words.Duration(l.project.FrequencyCap.Per)),
			"%s is looser than the project's %s (%s): a campaign may only be stricter", f, l.project.FrequencyCap, l.project.Path)
	}
	return f
}
