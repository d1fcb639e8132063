package campaign

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// MissingError is a body reading variables that a recipient does not have:
// its row's list has no such column. It is always an error, whether the
// body passes the variable to default or not: default fills an empty
// value, and a missing column is not one.
type MissingError struct {
	Names   []string // the variables the recipient lacks, in the order the body reads them
	guessed bool     // the message suggests a name the recipient has instead
	msg     string
}

func (e *MissingError) Error() string { return e.msg }

// maxLacking bounds how many lists a missing-variable hint names.
const maxLacking = 5

// MissingHint is what to do about err when it is (or wraps) a
// [MissingError]: add the columns, which may be empty, to every recipient
// list that lacks them, named. A .txt list and numbers: written in the
// campaign have no columns at all. "" for any other error.
func (c *Campaign) MissingHint(err error) string {
	var me *MissingError
	if !errors.As(err, &me) || len(me.Names) == 0 {
		return ""
	}
	quoted := make([]string, len(me.Names))
	for i, n := range me.Names {
		quoted[i] = Quote(n)
	}
	what, it := "the column "+quoted[0], "it"
	if len(quoted) > 1 {
		what, it = "the columns "+strings.Join(quoted, ", "), "them"
	}
	var lists, noColumns []string
	for _, s := range c.Recipients {
		switch s.Kind {
		case KindInline:
			noColumns = append(noColumns, fmt.Sprintf("the numbers: at %s:%d", Plain(c.Path), s.Line))
		case KindText:
			noColumns = append(noColumns, Plain(s.File))
		case KindCSV:
			// A list outside the campaign's folder never shows what it
			// holds, not even which columns it lacks.
			if name := Plain(s.File); !s.Escapes && s.lacks(me.Names) && !slices.Contains(lists, name) {
				lists = append(lists, name)
			}
		}
	}
	values := fmt.Sprintf("%s may be empty (default fills an empty value, never a missing column)", valuesOf(it))
	var hint string
	if len(lists) > 0 || len(noColumns) == 0 {
		hint = fmt.Sprintf("add %s to every recipient list that lacks %s", what, it)
		if len(lists) > 0 {
			hint += " (" + namesUpTo(lists, maxLacking) + ")"
		}
		hint += "; " + values
	}
	if len(noColumns) > 0 {
		if hint != "" {
			hint += "; "
		}
		hint += fmt.Sprintf("%s %s no columns: move those numbers into a .csv list with %s", namesUpTo(noColumns, maxLacking), haveOrHas(len(noColumns)), what)
		if len(lists) == 0 {
			hint += "; " + values
		}
	}
	if me.guessed {
		hint = "correct the name in the body, or " + hint
	}
	return hint
}

func valuesOf(it string) string {
	if it == "them" {
		return "their values"
	}
	return "its values"
}

func haveOrHas(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// namesUpTo joins the first max of names (the last two with "and"), and
// counts the rest.
func namesUpTo(names []string, max int) string {
	if n := len(names); n <= max {
		if n > 1 {
			return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
		}
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

// lacks reports whether the CSV list's header row lacks any of names (the
// recipient's number, .phone, it never lacks). A list whose header cannot be
// read is not said to lack anything: reading it says what is wrong.
func (s Source) lacks(names []string) bool {
	f, err := os.Open(s.path())
	if err != nil {
		return false
	}
	defer f.Close()
	r := csv.NewReader(&recordGuard{r: f})
	header, err := r.Read()
	if err != nil {
		return false
	}
	header = slices.Clone(header)
	phone, err := s.checkHeader(header, 1)
	if err != nil {
		return false
	}
	for _, n := range names {
		if n == "phone" {
			continue
		}
		if i := slices.Index(header, n); i < 0 || i == phone {
			return true
		}
	}
	return false
}
