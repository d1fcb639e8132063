package planfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A plan keeps, besides each file's SHA-256, a digest of each top-level key
// of the YAML files it read (the campaign, the project file, a YAML price
// table), so that a refusal can say which key changed: "smsform.yaml:
// test_recipients changed" rather than only that the file did. The file's
// SHA-256 alone decides whether the plan is refused; the keys only word it.

// maxKeyedFile bounds the YAML files whose keys are kept: campaign and
// project files are a few kilobytes.
const maxKeyedFile = 4 << 20

// maxKeyNodes bounds the nodes a file's values may expand to through
// aliases (a "billion laughs" file would otherwise never end).
const maxKeyNodes = 1 << 18

// isYAML reports whether path names a YAML file, as campaigns and project
// files are named.
func isYAML(path string) bool {
	return strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
}

// yamlKeys returns a digest of the value of each top-level key of the YAML
// file at path; nil when it is not YAML, not a mapping, too large, or
// cannot be read.
func yamlKeys(path string) map[string]string {
	if !isYAML(path) {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyedFile+1))
	if err != nil || len(data) > maxKeyedFile {
		return nil
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	keys := make(map[string]string, len(m.Content)/2)
	budget := maxKeyNodes // for the whole file: many keys may alias one value
	for i := 0; i+1 < len(m.Content); i += 2 {
		h := sha256.New()
		if writeNode(h, m.Content[i+1], &budget) != nil {
			return nil
		}
		keys[m.Content[i].Value] = hex.EncodeToString(h.Sum(nil)[:8])
	}
	return keys
}

var errTooManyNodes = errors.New("too many nodes")

// writeNode writes what n means to h: kinds, resolved tags and values,
// aliases followed; not comments, quoting, anchors or layout, which change
// nothing a campaign does.
func writeNode(h hash.Hash, n *yaml.Node, budget *int) error {
	if *budget--; *budget < 0 {
		return errTooManyNodes
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return writeNode(h, n.Alias, budget)
	}
	fmt.Fprintf(h, "%d %s %d:%s[%d ", n.Kind, n.ShortTag(), len(n.Value), n.Value, len(n.Content))
	for _, c := range n.Content {
		if err := writeNode(h, c, budget); err != nil {
			return err
		}
	}
	h.Write([]byte{']'})
	return nil
}

// keysChanged words how the keys of a YAML file differ from the ones the
// plan kept: "test_recipients changed", "body changed; send_window added",
// or that none did. "" when the plan kept no keys, or the file's cannot be
// read now.
func keysChanged(kept map[string]string, path string) string {
	if kept == nil {
		return ""
	}
	now := yamlKeys(path)
	if now == nil {
		return ""
	}
	var changed, added, removed []string
	for k, v := range now {
		switch old, ok := kept[k]; {
		case !ok:
			added = append(added, k)
		case old != v:
			changed = append(changed, k)
		}
	}
	for k := range kept {
		if _, ok := now[k]; !ok {
			removed = append(removed, k)
		}
	}
	var parts []string
	for _, p := range []struct {
		keys []string
		what string
	}{{changed, "changed"}, {added, "added"}, {removed, "removed"}} {
		if len(p.keys) > 0 {
			slices.Sort(p.keys)
			shown := make([]string, len(p.keys))
			for i, k := range p.keys {
				shown[i] = showKey(k)
			}
			parts = append(parts, strings.Join(shown, ", ")+" "+p.what)
		}
	}
	if len(parts) == 0 {
		return "no key's value changed (comments or layout only)"
	}
	return strings.Join(parts, "; ")
}

// showKey is a key as a message shows it: quoted unless it is a plain
// name (the plan file, where the kept keys come from, is not to be trusted
// with a terminal).
func showKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}
