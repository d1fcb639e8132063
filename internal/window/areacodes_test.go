package window

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite splitAreaCodes in areacodes.go from the phone-number library's data")

// TestSplitAreaCodes reads the phone-number library's own time zone data
// (the file it embeds, from the module's folder) and derives the +1 area
// codes that have a longer prefix than themselves; they must be
// splitAreaCodes, for the Finder answers the others by area code.
func TestSplitAreaCodes(t *testing.T) {
	keys := libraryZonePrefixes(t)
	var split []int
	for npa := 200; npa <= 999; npa++ {
		area := "1" + strconv.Itoa(npa)
		for k := range keys {
			if len(k) > len(area) && strings.HasPrefix(k, area) {
				split = append(split, npa)
				break
			}
		}
	}
	if len(split) < 5 || len(split) > 200 {
		t.Fatalf("%d split area codes: the data is not what this test reads", len(split))
	}
	have := make([]int, len(splitAreaCodes))
	for i, npa := range splitAreaCodes {
		have[i] = int(npa)
	}
	if *update {
		writeSplitAreaCodes(t, split)
		return
	}
	if !slices.Equal(have, split) {
		t.Errorf("splitAreaCodes = %v, the library's data gives %v: run go test ./internal/window -run TestSplitAreaCodes -update", have, split)
	}
}

// libraryZonePrefixes decodes the library's prefix_to_timezone data (the
// format of its loadIntArrayMap: the interned names, then each prefix as a
// difference from the last with its names), returning the prefixes.
func libraryZonePrefixes(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/nyaruka/phonenumbers").Output()
	if err != nil {
		t.Fatalf("find the phone-number library's folder: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "data", "prefix_to_timezone.xml.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(data)
	var size, count uint32
	if err := binary.Read(r, binary.LittleEndian, &size); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Seek(int64(size), io.SeekCurrent); err != nil {
		t.Fatal(err)
	}
	if err := binary.Read(r, binary.LittleEndian, &count); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	key := uint64(0)
	for range count {
		diff, err := binary.ReadUvarint(r)
		if err != nil {
			t.Fatal(err)
		}
		key += diff
		var n uint8
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Seek(2*int64(n), io.SeekCurrent); err != nil {
			t.Fatal(err)
		}
		keys[strconv.FormatUint(key, 10)] = true
	}
	if len(keys) < 1000 || !keys["1212"] {
		t.Fatalf("%d prefixes, 1212 among them: %v; the data is not what this test reads", len(keys), keys["1212"])
	}
	return keys
}

func writeSplitAreaCodes(t *testing.T, split []int) {
	t.Helper()
	src, err := os.ReadFile("areacodes.go")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(src, []byte("var splitAreaCodes = [...]uint16{"))
	end := bytes.Index(src[start:], []byte("\n}\n"))
	if start < 0 || end < 0 {
		t.Fatal("areacodes.go has no splitAreaCodes list")
	}
	var b bytes.Buffer
	b.WriteString("var splitAreaCodes = [...]uint16{")
	for i, npa := range split {
		if i%16 == 0 {
			b.WriteString("\n\t")
		} else {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d,", npa)
	}
	out := append(append(append([]byte{}, src[:start]...), b.Bytes()...), src[start+end:]...)
	if err := os.WriteFile("areacodes.go", out, 0o644); err != nil {
		t.Fatal(err)
	}
}
