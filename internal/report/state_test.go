package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// TestStreamJSON: a list streamed into its place makes the bytes of
// encoding the whole document at once, empty or not, wherever the list is,
// with HTML escaped or not.
func TestStreamJSON(t *testing.T) {
	type item struct {
		I    int    `json:"i"`
		Text string `json:"text"`
	}
	type doc struct {
		A     string `json:"a"`
		Items []item `json:"items"`
		Z     []int  `json:"z"`
	}
	for _, escape := range []bool{false, true} {
		for _, n := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("escape %v, %d items", escape, n), func(t *testing.T) {
				whole := doc{A: "<x>", Items: []item{}, Z: []int{1}}
				for i := range n {
					whole.Items = append(whole.Items, item{I: i, Text: "a & <b>"})
				}
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(escape)
				if err := enc.Encode(whole); err != nil {
					t.Fatal(err)
				}
				frame := whole
				frame.Items = []item{}
				var got bytes.Buffer
				err := streamJSON(&got, frame, "items", escape, func(add func(any) error) error {
					for _, it := range whole.Items {
						if err := add(it); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("streamed:\n%s\nwhole:\n%s", got.String(), want.String())
				}
			})
		}
	}
}
