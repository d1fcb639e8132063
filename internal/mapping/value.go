package mapping

import (
	"strconv"
	"strings"

	"github.com/smsform/smsform/internal/rawjson"
)

// Value is a status as it is compared: by value, not by spelling. A number
// equals the same number however either side writes it (1, 1.0, 1e0, or
// the string "1"), a boolean equals true or false (or the string "true" or
// "false"), and any other string equals only itself, case included: a
// provider's "Accepted" is not "ACCEPTED", and guessing that it is would
// put a meaning on a word nobody named.
type Value struct {
	kind  valueKind
	canon string // the comparable form: a number's digits and exponent, "true"/"false", or the string
}

type valueKind uint8

const (
	noValue valueKind = iota
	stringValue
	numberValue
	boolValue
)

// IsZero reports whether v is no value at all (absent, null, an object or
// a list: nothing a status list can name).
func (v Value) IsZero() bool { return v.kind == noValue }

// String is v as it reads in a message: a string as it is, a number in a
// normal form (1.0 reads 1), true or false.
func (v Value) String() string {
	if v.kind != numberValue {
		return v.canon
	}
	return numberText(v.canon)
}

// StringValue is the value of the status text s: a number when s is
// written as a JSON number, a boolean when it is "true" or "false", the
// string itself otherwise.
func StringValue(s string) Value {
	if c, ok := canonNumber(s); ok {
		return Value{kind: numberValue, canon: c}
	}
	if s == "true" || s == "false" {
		return Value{kind: boolValue, canon: s}
	}
	return Value{kind: stringValue, canon: s}
}

// NumberValue is the value of a number written s (JSON number syntax, or
// YAML's decimal integers and floats); ok is false when s is none.
func NumberValue(s string) (Value, bool) {
	c, ok := canonNumber(strings.TrimPrefix(s, "+"))
	return Value{kind: numberValue, canon: c}, ok
}

// BoolValue is true or false.
func BoolValue(b bool) Value { return Value{kind: boolValue, canon: strconv.FormatBool(b)} }

// ValueOfJSON is the value of the JSON text raw (valid JSON, nil when
// absent): a string, a number or a boolean. For anything else (null, an
// object, a list, nothing) it returns the zero Value and what it was, for
// messages.
func ValueOfJSON(raw []byte) (Value, string) {
	switch {
	case raw == nil:
		return Value{}, "absent"
	case raw[0] == '"':
		return StringValue(rawjson.Text(raw)), ""
	case raw[0] == 't':
		return BoolValue(true), ""
	case raw[0] == 'f':
		return BoolValue(false), ""
	case raw[0] == 'n':
		return Value{}, "null"
	case raw[0] == '{':
		return Value{}, "an object"
	case raw[0] == '[':
		return Value{}, "a list"
	}
	v, _ := NumberValue(string(raw))
	return v, ""
}

// canonNumber is s, a number in JSON's syntax, in one form for every way
// of writing it: sign, significant digits, "e", exponent ("15e-1" for 1.5
// and 1.50 and 0.15e1; "0" for zero). It is exact: no float rounds two
// ids into one.
func canonNumber(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(strings.TrimPrefix(s[i+1:], "+"), 10, 32)
		if err != nil || i+1 == len(s) {
			return "", false
		}
		mant, exp = s[:i], e
	}
	intPart, frac, dot := strings.Cut(mant, ".")
	if intPart == "" || (dot && frac == "") || !digits(intPart) || !digits(frac) ||
		(len(intPart) > 1 && intPart[0] == '0') {
		return "", false
	}
	ds := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	if ds == "" {
		return "0", true
	}
	trimmed := strings.TrimRight(ds, "0")
	exp += int64(len(ds) - len(trimmed))
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.FormatInt(exp, 10), true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// numberText writes a canonical number back as a person would: 15e-1 as
// 1.5, 2e2 as 200, and very large or small ones as digits e exponent.
func numberText(c string) string {
	if c == "0" {
		return c
	}
	m, e, _ := strings.Cut(c, "e")
	exp, _ := strconv.Atoi(e)
	sign := ""
	if strings.HasPrefix(m, "-") {
		sign, m = "-", m[1:]
	}
	switch {
	case exp >= 0 && exp <= 20:
		return sign + m + strings.Repeat("0", exp)
	case exp < 0 && -exp < len(m):
		return sign + m[:len(m)+exp] + "." + m[len(m)+exp:]
	case exp < 0 && -exp-len(m) <= 20:
		return sign + "0." + strings.Repeat("0", -exp-len(m)) + m
	}
	return sign + m + "e" + e
}
