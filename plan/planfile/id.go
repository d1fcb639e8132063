package planfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// A plan's id is derived from its content, so that no byte of a plan file
// is free to change: the batches are covered by their own ids (and, when
// applied, by the comparison with the campaign), and everything else (the
// header, and the plan's fields but its batches) by the plan's id. It is
// also the plan's name in the state (which runs applied it), so two plans
// with the same id are the same plan. Anyone can compute it: it makes an
// edit fail loudly, it does not make one impossible (apply's derivation
// does that for what is sent).

// ErrPlanID is wrapped by the error a read of a plan file returns when the
// plan's id is not the one its content makes: the file was edited after
// plan --out, or written by an smsform whose plan ids were random.
var ErrPlanID = errors.New("plan id not derived from the plan's content")

// idPrefix marks an id derived from content; idVersion is what the hash
// starts with, so that another way of deriving it is another id.
const (
	idPrefix  = "p-"
	idVersion = "smsform plan id 1\n"
)

// contentID is the id of a plan file whose top-level fields (the plan's
// id and the plan itself left out) and plan fields (its batches left out)
// are top and fields, raw JSON as in the file: a SHA-256 over each name and
// value, in name order, its first 16 bytes in hex. A value counts as the
// JSON value it is (see canonical), not as its bytes: a file re-encoded
// with its values kept keeps its id, any value changed changes it.
func contentID(top, fields map[string]json.RawMessage) (string, error) {
	h := sha256.New()
	h.Write([]byte(idVersion))
	for _, part := range []struct {
		values map[string]json.RawMessage
		skip   string
	}{{top, "id"}, {fields, "batches"}} {
		for _, k := range slices.Sorted(maps.Keys(part.values)) {
			if k == part.skip || part.values[k] == nil {
				continue
			}
			v, err := canonical(part.values[k])
			if err != nil {
				return "", fmt.Errorf("its %s is not JSON: %w", k, err)
			}
			// Lengths first: no name and value can pass for another.
			fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(v))
			h.Write(v)
		}
		h.Write([]byte{'\n'})
	}
	return idPrefix + hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// canonical is raw encoded one way: objects' keys sorted, no white space,
// strings escaped as encoding/json escapes them, numbers as written.
func canonical(raw json.RawMessage) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// withID returns frame (a Saved as the file stores it) with its ID set to
// the one its content makes, computed from its encoding as Save writes it.
func withID(frame *Saved) (*Saved, error) {
	c := *frame
	c.ID = ""
	if c.Plan != nil {
		p := *c.Plan
		p.Batches, p.Stream = nil, nil
		c.Plan = &p
	}
	doc, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	id, err := DocumentID(doc)
	if err != nil {
		return nil, err
	}
	out := *frame
	out.ID = id
	return &out, nil
}

// DocumentID is the id of the plan file whose decompressed content is doc,
// as smsform plan --out computes it: whatever doc's own id says. It is how
// an id is checked, and how anyone may compute one.
func DocumentID(doc []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return "", err
	}
	fields := map[string]json.RawMessage{}
	if raw := top["plan"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return "", err
		}
	}
	delete(top, "plan")
	return contentID(top, fields)
}

// checkID refuses a plan file whose id is not its content's: the fields
// the last whole reading found (see decoder).
func (src *source) checkID(id string) error {
	if src.raw == nil {
		return src.bad("it was not read whole")
	}
	want, err := contentID(src.raw.top, src.raw.fields)
	if err != nil {
		return src.bad(err.Error())
	}
	if id != want {
		return &idError{path: src.path, id: id}
	}
	return nil
}

// idError is a plan file whose id is not its content's: it is ErrNotPlan
// and ErrPlanID.
type idError struct{ path, id string }

func (e *idError) Error() string {
	return fmt.Sprintf("%s: %v: its id %q is not the one its content makes: the file was changed after plan --out, or written by an smsform whose plan ids were random",
		e.path, ErrNotPlan, e.id)
}

func (e *idError) Unwrap() []error { return []error{ErrNotPlan, ErrPlanID} }
