package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/campaign"
)

const root = "../.."

// notExpressible are the invalid files a schema cannot tell from valid
// ones, and why: the corpus leaves them out of the agreement.
var notExpressible = map[string]string{
	"missing_file.yaml":      "a list file that does not exist: a schema sees the file's text only",
	"folder_as_file.yaml":    "a list that is a folder: a schema sees the file's text only",
	"escape_list.yaml":       "a list outside the campaign's folder that does not exist: a schema sees the file's text only",
	"template_define.yaml":   "a template error ({{define}}): a schema does not parse Go templates",
	"template_func.yaml":     "a template error (an unknown function): a schema does not parse Go templates",
	"template_range.yaml":    "a template error ({{range}}): a schema does not parse Go templates",
	"template_syntax.yaml":   "a template error: a schema does not parse Go templates",
	"template_unclosed.yaml": "a template error (an unclosed action): a schema does not parse Go templates",
	"alias.yaml":             "YAML anchors and aliases: a schema sees the document after they are expanded",
	"multi_doc.yaml":         "a second YAML document: editors check each document on its own",
}

// listContent is the prefix of the invalid files whose campaign file is
// fine but whose list is not (a CSV without its phone column, a ragged
// row): Load and the schema both accept them; smsform validate refuses
// them when it reads the list.
const listContent = "csv_"

// compile loads one of schema/*.schema.json.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(root, "schema", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// schemaVerdict validates the YAML file at path as an editor would: a file
// that is not YAML is invalid, else its first document is checked.
func schemaVerdict(s *jsonschema.Schema, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not YAML: %w", err)
	}
	b, err := json.Marshal(jsonable(doc))
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// jsonable turns what yaml.v3 decodes into what JSON holds: mappings with
// keys that are not text get text keys, timestamps become RFC 3339 text
// (an editor's YAML 1.2 parser reads them as text in the first place).
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	return v
}

type file struct {
	path string
	want string // "valid", "invalid", or "" when the loader decides alone
}

func campaignCorpus(t *testing.T) []file {
	t.Helper()
	var files []file
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") && filepath.Base(p) != campaign.ProjectFile {
			files = append(files, file{path: p})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// What smsform init writes.
	files = append(files, file{path: filepath.Join(root, "internal", "cli", "initfiles", "campaigns", "welcome.yaml"), want: "valid"})
	good, _ := filepath.Glob(filepath.Join(root, "campaign", "testdata", "good", "*.yaml"))
	for _, p := range good {
		files = append(files, file{path: p, want: "valid"})
	}
	bad, _ := filepath.Glob(filepath.Join(root, "campaign", "testdata", "bad", "*.yaml"))
	for _, p := range bad {
		if _, skip := notExpressible[filepath.Base(p)]; !skip && !strings.HasPrefix(filepath.Base(p), listContent) {
			files = append(files, file{path: p, want: "invalid"})
		}
	}
	return files
}

func verdict(err error) string {
	if err != nil {
		return "invalid"
	}
	return "valid"
}

// TestCampaignSchemaAgreesWithLoad: every example and every file of the
// invalid corpus gets the same verdict from the schema and from Load.
func TestCampaignSchemaAgreesWithLoad(t *testing.T) {
	s := compile(t, "campaign.schema.json")
	files := campaignCorpus(t)
	counts := map[string]int{}
	for _, f := range files {
		name, _ := filepath.Rel(root, f.path)
		_, loadErr := campaign.Load(f.path)
		schemaErr := schemaVerdict(s, f.path)
		counts[verdict(loadErr)]++
		if f.want != "" && verdict(loadErr) != f.want {
			t.Errorf("%s: Load says %s (%v), the corpus says %s", name, verdict(loadErr), loadErr, f.want)
		}
		if verdict(loadErr) != verdict(schemaErr) {
			t.Errorf("%s: Load says %s, the schema says %s\n  load: %v\n  schema: %v", name, verdict(loadErr), verdict(schemaErr), loadErr, oneLine(schemaErr))
		}
	}
	if counts["valid"] < 4 || counts["invalid"] < 30 {
		t.Errorf("the corpus has %d valid and %d invalid files: too few to say anything", counts["valid"], counts["invalid"])
	}
	for name := range notExpressible {
		if _, err := os.Stat(filepath.Join(root, "campaign", "testdata", "bad", name)); err != nil {
			t.Errorf("notExpressible names %s: %v", name, err)
		}
	}
}

func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		var leaves []string
		var walk func(e *jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			if len(e.Causes) == 0 {
				leaves = append(leaves, "/"+strings.Join(e.InstanceLocation, "/")+": "+fmt.Sprint(e.ErrorKind))
			}
			for _, c := range e.Causes {
				walk(c)
			}
		}
		walk(ve)
		slices.Sort(leaves)
		return strings.Join(leaves, "; ")
	}
	return err.Error()
}

// TestProjectSchemaAgreesWithLoadProject: the same for project files.
func TestProjectSchemaAgreesWithLoadProject(t *testing.T) {
	s := compile(t, "project.schema.json")
	for _, want := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "project", want, "*.yaml"))
		if want == "valid" { // and what smsform init writes
			files = append(files, filepath.Join(root, "internal", "cli", "initfiles", campaign.ProjectFile))
		}
		if len(files) < 4 {
			t.Fatalf("testdata/project/%s holds %d files: too few to say anything", want, len(files))
		}
		for _, p := range files {
			_, loadErr := campaign.LoadProject(p)
			schemaErr := schemaVerdict(s, p)
			if verdict(loadErr) != want {
				t.Errorf("%s: LoadProject says %s (%v), the corpus says %s", p, verdict(loadErr), loadErr, want)
			}
			if verdict(schemaErr) != want {
				t.Errorf("%s: the schema says %s (%s), the corpus and LoadProject say %s", p, verdict(schemaErr), oneLine(schemaErr), want)
			}
		}
	}
}
