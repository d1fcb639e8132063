package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
)

// cmdForgePlan edits a saved plan as an attacker, a script or another
// version of smsform could: "forge-plan IN OUT EDIT..." decompresses IN,
// makes each edit, recomputes every batch's id from its content, the
// summary's counts from the batches and the plan's id from the rest (so that
// only apply's derivation can tell), and writes OUT compressed again. Edits:
//
//	body=TEXT         batch 1's body
//	recipient=VALUE   batch 1's first recipient (+999, not-a-number…)
//	add=VALUE         one more recipient in batch 1
//	drop=VALUE        that recipient removed from its batch
//	drop-batch=N      batch N removed
//	files=none        an empty list of files
//	drop-file=SUFFIX  the files whose path ends so removed from the list
//	opt-out-seq=N     the opt-out log's number the plan says it subtracted
//	id=VALUE          the plan's id, which is then not recomputed
//	keep-plan-id      the plan's id left as it was
//	keep-ids          ids (and summary) left as they were
func cmdForgePlan(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: forge-plan IN OUT EDIT...")
	}
	doc := readPlanJSON(ts, ts.MkAbs(args[0]))
	p := doc["plan"].(map[string]any)
	batches := p["batches"].([]any)
	first := batches[0].(map[string]any)
	recompute, reID := true, true
	for _, edit := range args[2:] {
		key, val, _ := strings.Cut(edit, "=")
		switch key {
		case "body":
			first["body"] = val
		case "recipient":
			first["recipients"].([]any)[0] = val
		case "add":
			first["recipients"] = append(first["recipients"].([]any), val)
		case "drop":
			batches = dropRecipient(batches, val)
		case "opt-out-seq":
			doc["opt_out_seq"] = json.Number(val)
			p["state"].(map[string]any)["opt_out_seq"] = json.Number(val)
		case "id":
			doc["id"], reID = val, false
		case "drop-batch":
			n := int(mustNumber(ts, val))
			batches = append(batches[:n-1], batches[n:]...)
		case "files":
			doc["files"] = []any{}
		case "drop-file":
			var kept []any
			for _, f := range doc["files"].([]any) {
				if !strings.HasSuffix(f.(map[string]any)["path"].(string), val) {
					kept = append(kept, f)
				}
			}
			doc["files"] = kept
		case "keep-plan-id":
			reID = false
		case "keep-ids":
			recompute, reID = false, false
		default:
			ts.Fatalf("forge-plan: unknown edit %q", edit)
		}
	}
	p["batches"] = batches
	if recompute {
		recipients := 0
		for _, b := range batches {
			b := b.(map[string]any)
			var phones []string
			for _, r := range b["recipients"].([]any) {
				phones = append(phones, r.(string))
			}
			recipients += len(phones)
			b["id"] = plan.BatchID(b["body"].(string), phones)
		}
		summary := p["summary"].(map[string]any)
		summary["batches"], summary["to_send"] = len(batches), recipients
	}
	if reID {
		raw, err := json.Marshal(doc)
		ts.Check(err)
		doc["id"], err = planfile.DocumentID(raw)
		ts.Check(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	ts.Check(json.NewEncoder(zw).Encode(doc))
	ts.Check(zw.Close())
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), buf.Bytes(), 0o600))
}

// cmdManifestAdd lists one more plan file in a folder's manifest, with its
// SHA-256, as someone who can write the folder could: "manifest-add DIR
// NAME.plan CAMPAIGN".
func cmdManifestAdd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: manifest-add DIR NAME.plan CAMPAIGN")
	}
	dir := ts.MkAbs(args[0])
	data, err := os.ReadFile(filepath.Join(dir, args[1]))
	ts.Check(err)
	sum := sha256.Sum256(data)
	file := filepath.Join(dir, planfile.ManifestName)
	raw, err := os.ReadFile(file)
	ts.Check(err)
	var m planfile.Manifest
	ts.Check(json.Unmarshal(raw, &m))
	m.Plans = append(m.Plans, planfile.ManifestPlan{File: args[1], Campaign: args[2], SHA256: hex.EncodeToString(sum[:])})
	raw, err = json.MarshalIndent(&m, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(file, raw, 0o644))
}

// dropRecipient removes phone from the batch that holds it, and that
// batch when it is left with nobody.
func dropRecipient(batches []any, phone string) []any {
	var out []any
	for _, b := range batches {
		b := b.(map[string]any)
		var kept []any
		for _, r := range b["recipients"].([]any) {
			if r != phone {
				kept = append(kept, r)
			}
		}
		if len(kept) > 0 {
			b["recipients"] = kept
			out = append(out, b)
		}
	}
	return out
}

func readPlanJSON(ts *testscript.TestScript, path string) map[string]any {
	f, err := os.Open(path)
	ts.Check(err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	ts.Check(err)
	raw, err := io.ReadAll(zr)
	ts.Check(err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // a serial or a count goes back as it came
	var doc map[string]any
	ts.Check(dec.Decode(&doc))
	return doc
}

func mustNumber(ts *testscript.TestScript, s string) float64 {
	var n float64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		ts.Fatalf("forge-plan: %q is not a number", s)
	}
	return n
}
