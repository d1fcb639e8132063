package campaign

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRulesNameKnownKeys holds the value rules to the one list of keys: a
// rule for a key the walk does not read would never fire.
func TestRulesNameKnownKeys(t *testing.T) {
	known := func(list, key string) bool {
		parent, last := "", key
		if dot := strings.LastIndex(key, "."); dot >= 0 {
			parent, last = key[:dot], key[dot+1:]
		}
		if list == "project" && parent == "" {
			parent = "project"
		}
		return slices.Contains(keyLists()[parent], last)
	}
	for _, r := range campaignRules() {
		if !known("", r.key) {
			t.Errorf("campaign rule for %q: not a key the loader reads", r.key)
		}
		var zero rawCampaign
		r.apply(r.get(&zero), false) // every rule's value is of a type it measures
	}
	for _, r := range projectRules() {
		if !known("project", r.key) {
			t.Errorf("project rule for %q: not a key the loader reads", r.key)
		}
		var zero rawProject
		r.apply(r.get(&zero), false)
	}
}

// TestSchemaPropertiesAreTheKeys reads schema/campaign.schema.json as an
// editor does and compares its top-level properties with campaignKeys.
func TestSchemaPropertiesAreTheKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "schema", "campaign.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(schema.Properties))
	want := slices.Sorted(slices.Values(topKeys()))
	if !slices.Equal(got, want) {
		t.Errorf("campaign.schema.json's properties %q, the loader's keys %q", got, want)
	}
}
