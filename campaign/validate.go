package campaign

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"

	"github.com/smsform/smsform/internal/baseurl"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/redact"
	"github.com/smsform/smsform/internal/sms"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9\-_.]{0,63}$`)

// newValidator is built once: validator caches what it learns about each
// struct, and a *Validate is safe for concurrent use once set up.
var newValidator = sync.OnceValue(func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	// Name fields as the file does, so that errors map back to YAML paths.
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		return name
	})
	rules := map[string]func(string) bool{
		"campaign_name": nameRE.MatchString,
		"sender":        func(s string) bool { return sms.CheckSender(s) == nil },
		"region":        e164.ValidRegion,
		"base_url":      func(s string) bool { _, err := baseurl.Check(s); return err == nil },
		"rate":          func(s string) bool { _, ok := parseRate(s); return ok },
	}
	for tag, ok := range rules {
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return ok(fl.Field().String()) }); err != nil {
			panic(err) // a programming error: the tags above are constants
		}
	}
	return v
})

// validate applies the value rules of rawCampaign's tags, then the rules that
// tie several keys together (what a source is).
func (l *loader) validate(rc *rawCampaign) {
	l.validateStruct(rc)
	l.validateSources("recipients", rc.Recipients, rc.sourceNodes[0])
	l.validateSources("exclude", rc.Exclude, rc.sourceNodes[1])
}

// validateStruct applies the value rules of a raw file's tags, reporting
// each failure at the line of its key.
func (l *loader) validateStruct(raw any) {
	err := newValidator().Struct(raw)
	var verrs validator.ValidationErrors
	if err != nil && !errors.As(err, &verrs) {
		l.add(0, "", "", "check %s: %v", l.file, err)
		return
	}
	for _, fe := range verrs {
		_, path, _ := strings.Cut(fe.Namespace(), ".") // drop the struct's name
		if l.bad[path] {
			continue
		}
		line, present := l.lines[path]
		if !present {
			line = 1 // a missing key has no line of its own; the top of the file is where it goes
		}
		msg, hint := ruleWords(fe, present)
		l.add(line, path, hint, "%s", msg)
	}
}

// ruleWords turns a validator failure into a sentence for the person who wrote
// the file, and a hint when there is something specific to do.
func ruleWords(fe validator.FieldError, present bool) (msg, hint string) {
	v := fe.Value()
	switch fe.Tag() {
	case "required":
		if fe.Field() == "version" && present {
			return fmt.Sprintf("unsupported version %v: this smsform reads version 1", v), "set version: 1"
		}
		if !present {
			return "required key is missing", requiredHint[fe.Field()]
		}
		return "must not be empty", requiredHint[fe.Field()]
	case "eq":
		return fmt.Sprintf("unsupported version %v: this smsform reads version %s", v, fe.Param()), "set version: 1"
	case "min":
		if fe.Kind() == reflect.Slice {
			return fmt.Sprintf("must list at least %s source", fe.Param()), requiredHint[fe.Field()]
		}
		return fmt.Sprintf("%v is too small: the least allowed is %s", v, fe.Param()), ""
	case "max":
		if fe.Kind() == reflect.String {
			return fmt.Sprintf("is longer than %s characters", fe.Param()), ""
		}
		return fmt.Sprintf("%v is too large: the most allowed is %s", v, fe.Param()), ""
	case "oneof":
		return fmt.Sprintf("%q is not one of: %s", v, strings.ReplaceAll(fe.Param(), " ", ", ")), ""
	case "campaign_name":
		return fmt.Sprintf("%q is not a valid name", v), "use 1-64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit, e.g. spring-sale-2026"
	case "sender":
		// CheckSender's words already say what is wrong and what would do.
		return sms.CheckSender(fmt.Sprint(v)).Error(), ""
	case "region":
		s := fmt.Sprint(v)
		if up := strings.ToUpper(s); up != s && e164.ValidRegion(up) {
			return fmt.Sprintf("%q is not a known region code", s), fmt.Sprintf("write it in capitals: %s", up)
		}
		return fmt.Sprintf("%q is not a known region code", s), "use a two-letter ISO 3166 code such as GB, US or DE"
	case "base_url":
		s := fmt.Sprint(v)
		_, err := baseurl.Check(s)
		hint := "e.g. https://sms.example.com (credentials come from the environment, never the URL)"
		if errors.Is(err, baseurl.ErrCredentials) {
			hint = "remove them: credentials come from SMSFORM_CLIENT_ID and SMSFORM_CLIENT_SECRET, never the file"
		}
		return fmt.Sprintf("%q %v", redact.URL(s), err), hint
	case "rate":
		return fmt.Sprintf("%q is not a rate", v), "write N/s, N/m or N/h with N a positive number, e.g. 5/s"
	case "startswith":
		return fmt.Sprintf("%q is not a JSON pointer", v), "write a JSON pointer (RFC 6901) to the id in the provider's success answer, e.g. /data/message_id"
	}
	return fmt.Sprintf("fails the %q rule", fe.Tag()), ""
}

var requiredHint = map[string]string{
	"version":    "add \"version: 1\"",
	"name":       "add a name such as \"name: spring-sale-2026\": state is kept under it",
	"sender":     "add the sender the messages come from, e.g. \"sender: ACME\"",
	"recipients": "add at least one source, e.g. \"recipients: [{file: lists/customers.csv}]\"",
	"body":       "add the message text, e.g. \"body: Hi {{ .name }}\"",
}

// validateSources checks that each source is exactly one kind.
func (l *loader) validateSources(list string, srcs []rawSource, pos []sourcePos) {
	for i := range srcs {
		s, p := srcs[i], pos[i]
		if p.bad {
			continue
		}
		path := fmt.Sprintf("%s[%d]", list, i)
		switch {
		case p.hasNumbers && p.hasFile:
			l.add(p.line, path, "split it into two list items", "a source has either numbers: or file:, not both")
		case !p.hasNumbers && !p.hasFile:
			l.add(p.line, path, "write \"- file: lists/customers.csv\" or \"- numbers: [\\\"+14155550101\\\"]\"", "source needs numbers: or file:")
		case p.hasNumbers && p.hasColumn:
			l.add(l.lines[path+".phone_column"], path+".phone_column", "remove it", "phone_column applies only to CSV files")
		case p.hasNumbers && len(s.Numbers) == 0:
			l.add(l.lines[path+".numbers"], path+".numbers", "list at least one number, or remove the source", "list is empty")
		case p.hasFile && s.File == "":
			l.add(l.lines[path+".file"], path+".file", "", "must not be empty")
		case p.hasFile && p.hasColumn && s.PhoneColumn == "":
			l.add(l.lines[path+".phone_column"], path+".phone_column", "remove it to use the default, phone", "must not be empty")
		}
	}
}
