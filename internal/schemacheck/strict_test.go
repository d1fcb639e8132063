package schemacheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Editors' YAML support is lenient, but some validators are not: ajv (the
// JSON Schema validator of most JavaScript tooling) in strict mode refuses
// to compile a schema with a union type, a keyword of a type the schema
// does not state, a required property it does not define, or a keyword it
// does not know. TestSchemasAreStrict checks the rules of ajv's strict mode
// in Go, on every test run; TestSchemasCompileWithAjv runs ajv itself when
// it is installed.

// draft07 are the keywords of JSON Schema draft-07, and "$comment".
var draft07 = []string{"$schema", "$id", "$ref", "$comment", "title", "description", "default", "examples", "readOnly", "writeOnly",
	"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding",
	"items", "additionalItems", "maxItems", "minItems", "uniqueItems", "contains",
	"maxProperties", "minProperties", "required", "properties", "patternProperties", "additionalProperties", "dependencies", "propertyNames",
	"if", "then", "else", "allOf", "anyOf", "oneOf", "not", "definitions"}

// typeOf is the type each type-specific keyword applies to.
var typeOf = map[string]string{
	"maxLength": "string", "minLength": "string", "pattern": "string", "format": "string",
	"multipleOf": "number", "maximum": "number", "exclusiveMaximum": "number", "minimum": "number", "exclusiveMinimum": "number",
	"items": "array", "additionalItems": "array", "maxItems": "array", "minItems": "array", "uniqueItems": "array", "contains": "array",
	"maxProperties": "object", "minProperties": "object", "required": "object", "properties": "object", "patternProperties": "object",
	"additionalProperties": "object", "dependencies": "object", "propertyNames": "object",
}

// strictProblems walks schema s at path, whose applicator parents (anyOf,
// oneOf, allOf, not, if, then, else) state typ, and whose parent defines
// props (as ajv does, a required property may be defined in the same
// schema or the one right above it).
func strictProblems(s any, path, typ string, props []string) []string {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	switch t := m["type"].(type) {
	case []any:
		out = append(out, path+": a union type (strictTypes): write anyOf, one type each")
	case string:
		typ = t
	}
	var own []string
	if p, ok := m["properties"].(map[string]any); ok {
		for k := range p {
			own = append(own, k)
		}
	}
	props = append(slices.Clone(props), own...)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(draft07, k) {
			out = append(out, fmt.Sprintf("%s: unknown keyword %q (strictSchema)", path, k))
		}
		if want, ok := typeOf[k]; ok && typ != want && !(want == "number" && typ == "integer") {
			out = append(out, fmt.Sprintf("%s: %s without type %q (strictTypes)", path, k, want))
		}
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if !slices.Contains(props, r.(string)) {
				out = append(out, fmt.Sprintf("%s: required %q is not defined in properties (strictRequired)", path, r))
			}
		}
	}
	for _, k := range keys {
		v := m[k]
		switch k {
		case "anyOf", "oneOf", "allOf":
			for i, sub := range v.([]any) {
				out = append(out, strictProblems(sub, fmt.Sprintf("%s/%s/%d", path, k, i), typ, own)...)
			}
		case "not", "if", "then", "else":
			out = append(out, strictProblems(v, path+"/"+k, typ, own)...)
		case "items", "additionalItems", "contains", "propertyNames", "additionalProperties":
			out = append(out, strictProblems(v, path+"/"+k, "", nil)...)
		case "properties", "patternProperties", "definitions", "dependencies":
			if sub, ok := v.(map[string]any); ok {
				for name, x := range sub {
					out = append(out, strictProblems(x, path+"/"+k+"/"+name, "", nil)...)
				}
			}
		}
	}
	return out
}

func readSchema(t *testing.T, name string) any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	var s any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// TestSchemasAreStrict: both schemas keep the rules of ajv's strict mode.
func TestSchemasAreStrict(t *testing.T) {
	for _, name := range []string{"campaign.schema.json", "project.schema.json"} {
		if problems := strictProblems(readSchema(t, name), "#", "", nil); len(problems) > 0 {
			sort.Strings(problems)
			t.Errorf("%s is not strict (go test ./campaign -run TestSchemas -update makes the schemas):\n%s", name, strings.Join(problems, "\n"))
		}
	}
}

// TestStrictProblemsFindsThem: the check finds what ajv refuses.
func TestStrictProblemsFindsThem(t *testing.T) {
	for _, bad := range []string{
		`{"type": ["string", "number"]}`,
		`{"minLength": 1}`,
		`{"type": "object", "anyOf": [{"required": ["x"]}]}`,
		`{"type": "object", "properties": {"x": {}}, "not": {"anyOf": [{"required": ["x"]}]}}`,
		`{"type": "string", "nullable": true}`,
		`{"properties": {"a": {"type": "string"}}}`,
	} {
		var s any
		if err := json.Unmarshal([]byte(bad), &s); err != nil {
			t.Fatal(err)
		}
		if len(strictProblems(s, "#", "", nil)) == 0 {
			t.Errorf("%s: no problem found", bad)
		}
	}
	var good any
	json.Unmarshal([]byte(`{"type": "object", "properties": {"a": {}}, "anyOf": [{"required": ["a"]}, {"type": "object", "required": ["b"], "properties": {"b": {"type": "string", "minLength": 1}}}]}`), &good)
	if p := strictProblems(good, "#", "", nil); len(p) > 0 {
		t.Errorf("a strict schema: %v", p)
	}
}

// TestSchemasCompileWithAjv compiles both schemas with ajv in strict
// mode, draft-07, when ajv is installed (npm install -g ajv-cli, or
// SMSFORM_AJV naming its program); it skips, saying so, when it is not.
func TestSchemasCompileWithAjv(t *testing.T) {
	ajv := os.Getenv("SMSFORM_AJV")
	if ajv == "" {
		var err error
		if ajv, err = exec.LookPath("ajv"); err != nil {
			t.Skip("ajv is not installed (npm install -g ajv-cli, or set SMSFORM_AJV): TestSchemasAreStrict checks its strict mode's rules instead")
		}
	}
	for _, name := range []string{"campaign.schema.json", "project.schema.json"} {
		out, err := exec.Command(ajv, "compile", "--spec=draft7", "--strict=true", "-s", filepath.Join(root, "schema", name)).CombinedOutput()
		if err != nil {
			t.Errorf("ajv --strict=true refuses %s: %v\n%s", name, err, out)
		}
	}
}

// TestTimestampsAreQuoted: a bare not_before or not_after is a date to a
// YAML 1.1 parser (many editors' and CI linters'), which the schema then
// refuses; the docs and what init writes quote them, commented or not.
func TestTimestampsAreQuoted(t *testing.T) {
	bare := regexp.MustCompile(`(?m)^[#\s]*(not_before|not_after):\s*[0-9]`)
	var files []string
	for _, glob := range []string{"docs/*.md", "README.md", "examples/*/*.yaml", "internal/cli/initfiles/campaigns/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files found", len(files))
	}
	quoted := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := bare.FindIndex(data); loc != nil {
			t.Errorf("%s: an unquoted timestamp: %q", f, data[loc[0]:min(loc[1]+25, len(data))])
		}
		quoted += strings.Count(string(data), `not_before: "`)
	}
	if quoted < 3 {
		t.Errorf("only %d quoted not_before found in the docs and init's files", quoted)
	}
}
