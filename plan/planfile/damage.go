package planfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// syntaxError is a plan file whose JSON breaks off where a scan of it
// found what no JSON document holds there.
type syntaxError struct {
	at  int64 // where, in bytes from the start of the decompressed content
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// words says where the JSON breaks off, counting from 1.
func (e *syntaxError) words() string {
	return fmt.Sprintf("not valid JSON at byte %d of its decompressed content: %s", e.at+1, e.msg)
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// decodeFields decodes fields, the raw values of an object's keys (named
// prefix+key in errors), into v, a pointer to a struct. What stops it is
// said in plain words: which field, and what it holds where what should
// be; never Go's types.
func decodeFields(prefix string, fields map[string]json.RawMessage, v any) error {
	keys := slices.Sorted(maps.Keys(fields))
	for _, k := range keys {
		if !json.Valid(fields[k]) {
			return errors.New(fieldProblem(prefix+k, json.Unmarshal(fields[k], new(any))))
		}
	}
	err := unmarshalFields(fields, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return errors.New(fieldProblem(prefix+te.Field, err))
	}
	// Which key: each decoded alone, into a value of its own.
	for _, k := range keys {
		one := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if kerr := unmarshalFields(map[string]json.RawMessage{k: fields[k]}, one); kerr != nil {
			return errors.New(fieldProblem(prefix+k, kerr))
		}
	}
	return errors.New("its content is damaged: a field holds a value smsform never writes")
}

// fieldProblem words err, from decoding the field named field ("" for a
// whole value: a batch).
func fieldProblem(field string, err error) string {
	it := "it"
	if field != "" {
		it = "its " + field
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%s is not valid JSON (%s, at byte %d of it)", it, se.Error(), se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s holds %s where %s should be", it, jsonWords(te.Value), typeWords(te.Type))
	case errors.As(err, &pe):
		return fmt.Sprintf("%s holds %q where a time (RFC 3339) should be", it, pe.Value)
	}
	return fmt.Sprintf("%s holds a value smsform never writes", it)
}

// batchProblem words err, from decoding a batch.
func batchProblem(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return fieldProblem(te.Field, err)
	}
	return fieldProblem("", err)
}

// jsonWords names a kind of JSON value as encoding/json's errors spell it
// ("string", "number 1.5", "array", …).
func jsonWords(v string) string {
	switch {
	case v == "string":
		return "text"
	case strings.HasPrefix(v, "number"):
		return "a number"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	}
	return "a value"
}

// typeWords names what a Go type holds in JSON.
func typeWords(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeWords(t.Elem())
	case reflect.String:
		return "text"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another value"
}
