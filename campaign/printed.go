package campaign

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// What a body prints, for empty_variables. The parse tree gives the
// variables whose value may reach the message as it is (printedFields):
// through a field (.name, $.name), index with a written key, a variable set
// from them ($x := .name), the dot of a with, and the functions that pass
// their arguments on (upper, printf, …). A variable only tested (if, with,
// the value default replaces, the arguments or skips) is not printed by
// that test, and a variable an enclosing if or with tests is not empty where
// it is printed. That is a superset of what a given row prints, because it
// ignores which branches the row takes: BlankVariables renders the row again
// with its blank candidates replaced by markers, and keeps those whose
// marker reaches the message.

// value is what the analysis knows of one value of a body.
type value struct {
	data    bool     // the recipient's variables themselves: . at the top, $
	reaches []string // the variables whose value this one may carry as it is
	sure    []string // of reaches, those it carries whatever the values are
	truthy  []string // the variables that are not empty when this value is not (a test of it guards them)
	text    *string  // a string written in the body ("first name")
}

// scope is where the analysis stands: what dot and each $variable are, and
// which variables the enclosing tests guard.
type scope struct {
	dot     value
	vars    map[string]value
	guarded []string
	depth   int // how many if and with branches enclose this point
}

func (s *scope) clone() *scope {
	return &scope{dot: s.dot, vars: maps.Clone(s.vars), guarded: slices.Clip(s.guarded), depth: s.depth}
}

type analysis struct {
	printed []string // in the order first printed, without repeats
	// site, when set, is called with each action that prints and the
	// variables it may print blank.
	site func(n *parse.ActionNode, names []string)
	// maybe is set when whether a variable is printed depends on the
	// values: it is printed in a branch, or through default, or or and.
	maybe bool
}

// printedFields lists, without repeats, the variables whose value the body
// under n may print as it is, leaving out those that guarded (and the
// enclosing tests met on the way) say are not empty there.
func printedFields(n parse.Node, guarded []string) []string {
	a := &analysis{}
	a.node(n, topScope(guarded))
	return a.printed
}

func topScope(guarded []string) *scope {
	top := value{data: true}
	return &scope{dot: top, vars: map[string]value{"$": top}, guarded: guarded}
}

func (a *analysis) node(n parse.Node, sc *scope) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			a.node(c, sc)
		}
	case *parse.ActionNode:
		v := a.pipe(n.Pipe, sc)
		if len(n.Pipe.Decl) > 0 {
			return
		}
		var here []string
		for _, name := range v.reaches {
			if !slices.Contains(sc.guarded, name) {
				here = append(here, name)
			}
		}
		a.printed = union(a.printed, here)
		for _, name := range here {
			a.maybe = a.maybe || sc.depth > 0 || !slices.Contains(v.sure, name)
		}
		if a.site != nil {
			a.site(n, here)
		}
	case *parse.IfNode:
		a.branch(&n.BranchNode, sc, false)
	case *parse.WithNode:
		a.branch(&n.BranchNode, sc, true)
	}
	// Text and comments print no variable; range and template calls are
	// refused (checkActions).
}

// branch follows both ways of an if or with. A variable assigned in a
// branch may or may not have changed after it, so it carries both values.
func (a *analysis) branch(b *parse.BranchNode, sc *scope, with bool) {
	inner := sc.clone() // a variable declared in the test is seen by both branches
	cond := a.pipe(b.Pipe, inner)
	inner.depth++
	then := inner.clone()
	then.guarded = append(then.guarded, cond.truthy...)
	if with {
		then.dot = cond
	}
	a.node(b.List, then)
	els := inner.clone()
	if b.ElseList != nil {
		a.node(b.ElseList, els)
	}
	for name, v := range sc.vars {
		v.reaches = union(v.reaches, then.vars[name].reaches, els.vars[name].reaches)
		v.sure, v.truthy = nil, nil // which value it holds is not known
		sc.vars[name] = v
	}
}

// pipe evaluates a pipeline, declaring or assigning its variables in sc.
func (a *analysis) pipe(p *parse.PipeNode, sc *scope) value {
	if p == nil {
		return value{}
	}
	var v value
	for i, c := range p.Cmds {
		var prev *value
		if i > 0 {
			prev = &v
		}
		v = a.command(c, sc, prev)
	}
	for _, d := range p.Decl {
		sc.vars[d.Ident[0]] = v
	}
	return v
}

// command evaluates one command of a pipeline; prev is the value the
// pipeline passes it as its last argument.
func (a *analysis) command(c *parse.CommandNode, sc *scope, prev *value) value {
	if len(c.Args) == 0 {
		return value{}
	}
	id, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		return a.arg(c.Args[0], sc) // a field or variable: methods of a map take no arguments
	}
	args := make([]value, 0, len(c.Args))
	for _, n := range c.Args[1:] {
		args = append(args, a.arg(n, sc))
	}
	if prev != nil {
		args = append(args, *prev)
	}
	return call(id.Ident, args)
}

func (a *analysis) arg(n parse.Node, sc *scope) value {
	switch n := n.(type) {
	case *parse.DotNode:
		return sc.dot
	case *parse.FieldNode:
		return field(sc.dot, n.Ident)
	case *parse.VariableNode:
		return field(sc.vars[n.Ident[0]], n.Ident[1:])
	case *parse.ChainNode:
		return field(a.arg(n.Node, sc), n.Field)
	case *parse.PipeNode:
		return a.pipe(n, sc)
	case *parse.IdentifierNode:
		return call(n.Ident, nil)
	case *parse.StringNode:
		return value{text: &n.Text}
	}
	return value{} // numbers, booleans, nil
}

// field is base.a.b…: a variable when base is the recipient's variables;
// anything else has no fields at run time, so the error comes first.
func field(base value, idents []string) value {
	switch {
	case len(idents) == 0:
		return base
	case base.data:
		return variable(idents[0])
	}
	return value{reaches: base.reaches, sure: base.sure}
}

func variable(name string) value {
	return value{reaches: []string{name}, sure: []string{name}, truthy: []string{name}}
}

// call is what a function does with the values it is given, args[len-1]
// being the one a pipeline passes on.
func call(name string, args []value) value {
	last := value{}
	if len(args) > 0 {
		last = args[len(args)-1]
	}
	switch name {
	case "index":
		// Only {{ index . "name" }} (bodyIndex refuses anything else); a key
		// that is not written in the body is not known here.
		if len(args) == 2 && args[0].data && args[1].text != nil {
			return variable(*args[1].text)
		}
		return value{}
	case "default":
		// default tests its last argument and prints the first in its place.
		if len(args) == 2 {
			return value{reaches: args[0].reaches}
		}
		return value{}
	case "or":
		// The first argument that is not empty, else the last.
		return value{reaches: last.reaches}
	case "and":
		// The first empty argument, else the last: true only when all are.
		v := value{reaches: last.reaches}
		for _, a := range args {
			v.truthy = union(v.truthy, a.truthy)
		}
		return v
	case "upper", "lower", "title", "trim":
		if len(args) == 1 {
			return value{reaches: args[0].reaches, sure: args[0].sure, truthy: args[0].truthy}
		}
		return value{}
	case "len", "not", "eq", "ne", "lt", "le", "gt", "ge", "call":
		return value{} // a number or a truth value: never a variable's text
	}
	// print, printf, println, slice, html, js, urlquery: their arguments'
	// text goes into what they return.
	var v value
	for _, a := range args {
		v.reaches, v.sure = union(v.reaches, a.reaches), union(v.sure, a.sure)
	}
	return v
}

// union returns the names of every list, without repeats, in order.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, name := range l {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// BlankVariables returns the variables the body prints blank (empty or
// only spaces) in its message to the recipient of r, whose E.164 number is
// phone, in the order the body first prints them, and nil when there is
// none: such a message reads "Hi , your order…". See docs/campaigns.md for
// what counts as printed.
func (c *Campaign) BlankVariables(r Row, phone string) []string {
	var blank []string
	for _, name := range c.printed {
		if i := slices.Index(r.Columns, name); i >= 0 && i < len(r.Values) && strings.TrimSpace(r.Values[i]) == "" {
			blank = append(blank, name)
		}
	}
	if len(blank) == 0 {
		return nil
	}
	return c.confirmBlank(r, phone, blank)
}

// confirmBlank keeps the candidates whose value reaches the message of r:
// it renders r with each of them replaced by a marker, through the body's
// blank check (see addBlankCheck), so that neither a branch the row does
// not take nor an action where a test guards the variable counts.
func (c *Campaign) confirmBlank(r Row, phone string, candidates []string) []string {
	var check *template.Template
	if c.tmpl != nil {
		check = c.tmpl.Lookup(blankCheck)
	}
	if check == nil {
		return candidates
	}
	data := dataPool.Get().(map[string]string)
	defer func() {
		clear(data)
		dataPool.Put(data)
	}()
	for i, name := range r.Columns {
		data[name] = r.Values[i]
	}
	markers := make([]string, len(candidates))
	for i, name := range candidates {
		markers[i] = blankMarker(name)
		data[name] = markers[i]
	}
	out, err := runBody(check, data, phone)
	if err != nil {
		return candidates // it cannot tell: every candidate may be printed
	}
	out = strings.ToLower(out)
	var printed []string
	for i, name := range candidates {
		if strings.Contains(out, markers[i]) {
			printed = append(printed, name)
		}
	}
	return printed
}

// blankCheck names the copy of a body that BlankVariables renders.
const blankCheck = "blank check"

// addBlankCheck adds to t a copy of its body in which every action that
// prints passes what it prints through blankSite, with the variables it
// may print blank there, so that a marker of any other variable is dropped;
// and in which the test of every if and with sees a marker as the blank it
// stands for (unmark), so that the row takes the branches it really takes.
func addBlankCheck(t *template.Template) error {
	tree := t.Tree.Copy()
	var err error
	a := &analysis{site: func(n *parse.ActionNode, names []string) {
		if !usesData(n.Pipe) {
			return // it prints no variable, so no marker
		}
		hexes := make([]string, len(names))
		for i, name := range names {
			hexes[i] = hex.EncodeToString([]byte(name))
		}
		err = errors.Join(err, appendCommand(n.Pipe, "blankSite "+strconv.Quote(","+strings.Join(hexes, ",")+",")))
	}}
	a.node(tree.Root, topScope(nil))
	if !a.maybe {
		return nil // a blank variable the body prints is printed whatever the row: no check is needed
	}
	walkBranches(tree.Root, func(b *parse.BranchNode) {
		err = errors.Join(err, appendCommand(b.Pipe, "unmark"))
	})
	if err != nil {
		return err
	}
	_, err = t.Funcs(checkFuncs).AddParseTree(blankCheck, tree)
	return err
}

// appendCommand adds the command written in text (a call of checkFuncs) at
// the end of p: it is given what p would have returned.
func appendCommand(p *parse.PipeNode, text string) error {
	trees, err := parse.Parse("check", "{{ "+text+" }}", "{{", "}}", checkFuncs)
	if err != nil {
		return err
	}
	p.Cmds = append(p.Cmds, trees["check"].Root.Nodes[0].(*parse.ActionNode).Pipe.Cmds[0])
	return nil
}

func walkBranches(n parse.Node, fn func(*parse.BranchNode)) {
	var b *parse.BranchNode
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				walkBranches(c, fn)
			}
		}
		return
	case *parse.IfNode:
		b = &n.BranchNode
	case *parse.WithNode:
		b = &n.BranchNode
	default:
		return
	}
	fn(b)
	walkBranches(b.List, fn)
	if b.ElseList != nil {
		walkBranches(b.ElseList, fn)
	}
}

// checkFuncs are the functions only a blank check calls: a body cannot,
// since they are added after it is parsed.
var checkFuncs = template.FuncMap{"blankSite": blankSite, "unmark": unmark}

// unmark returns v without any marker when it is text, as it is otherwise.
func unmark(v any) any {
	if s, ok := v.(string); ok && hasMarker(s) {
		return markerRE.ReplaceAllString(s, "")
	}
	return v
}

// hasMarker reports whether s may hold a marker: a quick look, as most
// of what a body prints holds none.
func hasMarker(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i]|0x20 == 'z' && s[i+1]|0x20 == 'q' {
			return true
		}
	}
	return false
}

// blankMarker stands for name in a blank check: letters and digits, so
// that upper, title, html, js and urlquery keep it, found whatever its case.
func blankMarker(name string) string {
	return "zq" + hex.EncodeToString([]byte(name)) + "qz"
}

var markerRE = regexp.MustCompile(`(?i)zq([0-9a-f]+)qz`)

// blankSite returns v as printed, without the markers of the variables
// that allowed (",hex,hex,") does not list.
func blankSite(allowed string, v any) string {
	s, ok := v.(string)
	if !ok {
		s = fmt.Sprint(v)
	}
	if !hasMarker(s) {
		return s
	}
	return markerRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Contains(allowed, ","+strings.ToLower(m[2:len(m)-2])+",") {
			return m
		}
		return ""
	})
}
