package campaign

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/words"
)

// maxRendered caps what one body may render to: ten times the 1,600
// characters a long SMS can carry. It is what stops a template that
// multiplies its output (nested printf with widths) from eating memory.
const maxRendered = 16000

// bodyFuncs are the functions a body may call besides text/template's
// built-ins. None of them reads the environment, files or the clock, so a
// body renders the same for the same recipient, on any machine.
var bodyFuncs = template.FuncMap{
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"title": title,
	"trim":  strings.TrimSpace,
	// {{ default "friend" .name }}: the argument order reads well in a pipeline too.
	"default": func(def, v string) string {
		if strings.TrimSpace(v) == "" {
			return def
		}
		return v
	},
	// A body's own index replaces text/template's (a template's functions
	// may): see bodyIndex.
	"index": bodyIndex,
}

// errIndexUse is what index says when it is given anything but the
// recipient's variables and one name.
var errIndexUse = errors.New(`index reads one variable by its name, e.g. {{ index . "first name" }}`)

// bodyIndex is index for a body: {{ index . "first name" }} reads a variable
// whose name is not an identifier. A variable the recipient does not have is
// an error, as {{ .missing }} is; text/template's index would print "" for
// it, a blank in every message.
func bodyIndex(item any, keys ...any) (string, error) {
	vars, ok := item.(map[string]string)
	if !ok || len(keys) != 1 {
		return "", errIndexUse
	}
	name, ok := keys[0].(string)
	if !ok {
		return "", errIndexUse
	}
	v, ok := vars[name]
	if !ok {
		return "", &missingVariable{name: name}
	}
	return v, nil
}

// missingVariable is a variable that a body reads and a recipient lacks.
type missingVariable struct{ name string }

func (e *missingVariable) Error() string { return "missing variable " + Quote(e.name) }

// title upper-cases the first letter of each word and leaves the rest alone,
// so "mcDonald" stays "McDonald" (strings.Title is deprecated, and
// golang.org/x/text/cases would lower the rest).
func title(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	start := true
	for _, r := range s {
		if start {
			r = unicode.ToUpper(r)
		}
		start = unicode.IsSpace(r)
		b.WriteRune(r)
	}
	return b.String()
}

func newBodyTemplate(body string) (*template.Template, error) {
	t, err := template.New("body").Option("missingkey=error").Funcs(bodyFuncs).Parse(body)
	if err != nil {
		return nil, err
	}
	if len(t.Templates()) > 1 {
		return nil, errors.New("define and block are not allowed in a body")
	}
	if err := checkActions(t.Tree.Root); err != nil {
		return nil, err
	}
	if err := addBlankCheck(t); err != nil {
		return nil, err
	}
	return t, nil
}

var tmplLineErr = regexp.MustCompile(`^template: body:(\d+):(?:\d+:)? ?(.*)$`)

// parseBody parses the body and reports a problem at its line in the
// campaign file.
func (l *loader) parseBody(body string, n *yaml.Node) *template.Template {
	// text/template reads on past an unclosed action, so "{{ .city book now"
	// would be reported as an unknown function "book": say what is wrong.
	if line, action, ok := unclosedAction(body); ok {
		l.add(bodyLine(n, line), "body", "close every action with }}, e.g. {{ .city }}", "invalid template: %s is never closed with }}", action)
		return nil
	}
	t, err := newBodyTemplate(body)
	if err == nil {
		return t
	}
	line, msg := 0, err.Error()
	if n != nil {
		line = n.Line
	}
	var le *lineError
	if errors.As(err, &le) {
		line, msg = bodyLine(n, le.line), le.msg
	} else if m := tmplLineErr.FindStringSubmatch(msg); m != nil {
		tl, _ := strconv.Atoi(m[1])
		line, msg = bodyLine(n, tl), m[2]
	}
	l.add(line, "body", "a body may use {{ .column }}, {{ .phone }}, if/else/with, and the functions upper, lower, title, trim, default, printf",
		"invalid template: %s", Plain(msg))
	return nil
}

// unclosedAction finds the first "{{" that has no "}}" before the next "{{"
// or the end, with its line in the body (from 1) and its first characters.
func unclosedAction(body string) (line int, action string, ok bool) {
	for off := 0; ; {
		i := strings.Index(body[off:], "{{")
		if i < 0 {
			return 0, "", false
		}
		start := off + i
		rest := body[start+2:]
		end, next := strings.Index(rest, "}}"), strings.Index(rest, "{{")
		if end < 0 || (next >= 0 && next < end) {
			action = body[start:]
			if j := strings.IndexAny(action, "\n"); j >= 0 {
				action = action[:j]
			}
			return strings.Count(body[:start], "\n") + 1, Quote(strings.TrimSpace(words.Clip(action, 20))), true
		}
		off = start + 2 + end + 2
	}
}

// bodyLine maps a line of the body to a line of the campaign file. Only a
// literal block (|) keeps the body's lines as they are, starting on the line
// after its key; folded and quoted bodies join lines, so their errors point
// at the body's first line.
func bodyLine(n *yaml.Node, line int) int {
	switch {
	case n == nil:
		return line
	case n.Style&yaml.LiteralStyle != 0:
		return n.Line + line
	}
	return n.Line
}

type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

// checkActions refuses the actions that can make rendering run unbounded:
// range (Go templates range over integers, so {{ range 1000000000 }} spins)
// and template calls (which can recurse). An SMS body needs neither.
func checkActions(n parse.Node) error {
	var walk func(n parse.Node) error
	walk = func(n parse.Node) error {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return nil
			}
			for _, c := range n.Nodes {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *parse.IfNode:
			return walkBranch(&n.BranchNode, walk)
		case *parse.WithNode:
			return walkBranch(&n.BranchNode, walk)
		case *parse.RangeNode:
			return &lineError{line: n.Line, msg: "range is not allowed in a body"}
		case *parse.TemplateNode:
			return &lineError{line: n.Line, msg: "template calls are not allowed in a body"}
		}
		return nil
	}
	return walk(n)
}

func walkBranch(b *parse.BranchNode, walk func(parse.Node) error) error {
	if err := walk(b.List); err != nil {
		return err
	}
	if b.ElseList != nil {
		return walk(b.ElseList)
	}
	return nil
}

// template returns the parsed body; a Campaign built by hand rather than by
// Load has none, so its body is parsed on each use.
func (c *Campaign) template() (*template.Template, error) {
	if c.tmpl != nil {
		return c.tmpl, nil
	}
	return newBodyTemplate(c.Body)
}

// Pools keep Render from allocating a map and a buffer for each of up to a
// million recipients: the caller's map is copied into a pooled one (with
// "phone" added) rather than changed, so callers may share theirs.
var (
	dataPool = sync.Pool{New: func() any { return make(map[string]string, 8) }}
	bufPool  = sync.Pool{New: func() any { return &capWriter{buf: make([]byte, 0, 256)} }}
)

var errRenderTooLong = fmt.Errorf("body renders to more than %d characters", maxRendered)

// capWriter stops a template as soon as its output is certainly too long
// (a character is at most 4 bytes).
type capWriter struct{ buf []byte }

func (w *capWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > 4*maxRendered {
		return 0, errRenderTooLong
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

var missingKeyErr = regexp.MustCompile(`map has no entry for key "((?:[^"\\]|\\.)*)"`)
var execErr = regexp.MustCompile(`^template: body:\d+:\d+: executing "body" at <(.*)>: (.*)$`)

func (c *Campaign) render(vars map[string]string, phone string) (string, error) {
	data := dataPool.Get().(map[string]string)
	defer func() {
		clear(data)
		dataPool.Put(data)
	}()
	maps.Copy(data, vars)
	return c.execute(data, phone)
}

// renderFields is render with the variables as names and values.
func (c *Campaign) renderFields(names, values []string, phone string) (string, error) {
	data := dataPool.Get().(map[string]string)
	defer func() {
		clear(data)
		dataPool.Put(data)
	}()
	for i, name := range names {
		data[name] = values[i]
	}
	return c.execute(data, phone)
}

// execute renders the body with data, a pooled map, plus "phone".
func (c *Campaign) execute(data map[string]string, phone string) (string, error) {
	t, err := c.template()
	if err != nil {
		return "", fmt.Errorf("render body: %w", err)
	}
	return runBody(t, data, phone)
}

// runBody executes t, a body or its blank check, with data plus "phone".
func runBody(t *template.Template, data map[string]string, phone string) (string, error) {
	data["phone"] = phone

	w := bufPool.Get().(*capWriter)
	defer func() {
		if cap(w.buf) <= 4096 { // don't keep the rare huge buffer alive
			w.buf = w.buf[:0]
			bufPool.Put(w)
		}
	}()
	w.buf = w.buf[:0]
	if err := t.Execute(w, data); err != nil {
		if name, ok := missingName(err); ok {
			return "", missingVariables(t, data, name)
		}
		return "", renderError(err)
	}
	if utf8.RuneCount(w.buf) > maxRendered {
		return "", errRenderTooLong
	}
	return string(w.buf), nil
}

// maxMissing bounds how many missing variables one error names.
const maxMissing = 20

// missingVariables names every variable the recipient of data lacks, not
// only the first: it renders again with each one found set to "", until
// none is missing. data is the pooled map: the caller clears it.
func missingVariables(t *template.Template, data map[string]string, first string) error {
	have := slices.Sorted(maps.Keys(data))
	missing := []string{first}
	for len(missing) < maxMissing {
		data[missing[len(missing)-1]] = ""
		name, ok := missingName(t.Execute(&capWriter{}, data))
		if !ok || slices.Contains(missing, name) {
			break
		}
		missing = append(missing, name)
	}
	quoted := make([]string, len(missing))
	for i, name := range missing {
		quoted[i] = Quote(name)
	}
	what := "variable"
	if len(missing) > 1 {
		what = "variables"
	}
	msg := fmt.Sprintf("missing %s %s (this recipient has: %s)", what, strings.Join(quoted, ", "), plainAll(have))
	var guesses []string
	for _, name := range missing {
		if g := closestName(name, have); g != "" {
			guesses = append(guesses, fmt.Sprintf(".%s for .%s", Plain(g), Plain(name)))
		}
	}
	if len(guesses) > 0 {
		msg += "; did you mean " + strings.Join(guesses, ", ") + "? (names are case-sensitive)"
	}
	return &MissingError{Names: missing, guessed: len(guesses) > 0, msg: msg}
}

// closestName is the variable of have that name most likely meant: the
// same but for case, else one or two letters apart; "" when none is.
func closestName(name string, have []string) string {
	best, bestD := "", 3
	for _, h := range have {
		if strings.EqualFold(h, name) {
			return h
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(h)); d < bestD && d < len(name) {
			best, bestD = h, d
		}
	}
	return best
}

// missingName returns the variable that err, from executing a body, says
// is missing: a field (.name) or an index (index . "name").
func missingName(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var mv *missingVariable
	if errors.As(err, &mv) {
		return mv.name, true
	}
	m := missingKeyErr.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	name, uerr := strconv.Unquote(`"` + m[1] + `"`)
	if uerr != nil {
		name = m[1]
	}
	return name, true
}

// renderError words a template failure for the person who wrote the body.
func renderError(err error) error {
	if errors.Is(err, errRenderTooLong) {
		return err
	}
	msg := err.Error()
	if m := execErr.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("render body: at %s: %s", Plain("{{ "+m[1]+" }}"), Plain(m[2]))
	}
	return fmt.Errorf("render body: %s", Plain(strings.TrimPrefix(msg, "template: ")))
}

// personalised reports whether the template reads its data at all: a field
// (.name), the dot itself, or $ (the data at the top). It errs towards true,
// which only costs renderings.
func (c *Campaign) personalised() bool {
	t, err := c.template()
	if err != nil {
		return true
	}
	return usesData(t.Tree.Root)
}

func usesData(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.DotNode, *parse.FieldNode:
		return true
	case *parse.VariableNode:
		return len(n.Ident) > 0 && n.Ident[0] == "$"
	case *parse.ListNode:
		if n == nil {
			return false
		}
		return slices.ContainsFunc(n.Nodes, usesData)
	case *parse.ActionNode:
		return usesData(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return false
		}
		for _, v := range n.Decl {
			if usesData(v) {
				return true
			}
		}
		return slices.ContainsFunc(n.Cmds, func(c *parse.CommandNode) bool { return usesData(c) })
	case *parse.CommandNode:
		return slices.ContainsFunc(n.Args, usesData)
	case *parse.ChainNode:
		return usesData(n.Node)
	case *parse.IfNode:
		return usesBranch(&n.BranchNode)
	case *parse.WithNode:
		return usesBranch(&n.BranchNode)
	case *parse.RangeNode:
		return usesBranch(&n.BranchNode)
	case *parse.TemplateNode:
		return true
	}
	return false // text, comments, constants, identifiers (function names)
}

func usesBranch(b *parse.BranchNode) bool {
	return usesData(b.Pipe) || usesData(b.List) || (b.ElseList != nil && usesData(b.ElseList))
}
