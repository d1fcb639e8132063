package report

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestJSONList: a streamed list makes the same document as encoding it
// whole, empty or not.
func TestJSONList(t *testing.T) {
	type head struct {
		A string `json:"a"`
	}
	for _, n := range []int{0, 1, 3} {
		var b strings.Builder
		l, err := startJSONList(&b, head{A: "x"}, "items")
		if err != nil {
			t.Fatal(err)
		}
		want := []map[string]int{}
		for i := range n {
			l.add(map[string]int{"i": i})
			want = append(want, map[string]int{"i": i})
		}
		if err := l.end(); err != nil {
			t.Fatal(err)
		}
		var got struct {
			A     string           `json:"a"`
			Items []map[string]int `json:"items"`
		}
		if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
			t.Fatalf("%d items: %v\n%s", n, err, b.String())
		}
		if got.A != "x" || !reflect.DeepEqual(got.Items, want) {
			t.Errorf("%d items: %+v\n%s", n, got, b.String())
		}
	}
}
