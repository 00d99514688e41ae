package output

import (
	"bytes"
	"testing"
)

// WriteDoc writes, field by field, what Printer writes for the whole
// document, in -o json and -o jsonl.
func TestWriteDocMatchesPrint(t *testing.T) {
	type doc struct {
		Bucket string           `json:"bucket"`
		Added  []map[string]any `json:"added"`
		Empty  []int            `json:"empty"`
		Total  int              `json:"total"`
	}
	added := []map[string]any{{"key": "a.<b>", "n": 1}, {"key": "c", "v": []int{1, 2}}}
	total := 0
	fields := []DocField{
		{Name: "bucket", Value: "cfg"},
		{Name: "added", List: func(item func(any) error) error {
			for _, v := range added {
				total++
				if err := item(v); err != nil {
					return err
				}
			}
			return nil
		}},
		{Name: "empty", List: func(func(any) error) error { return nil }},
		{Name: "total", After: func() any { return total }},
	}
	for _, format := range []string{"json", "jsonl"} {
		total = 0
		var want, got bytes.Buffer
		p, err := NewPrinter(Options{Format: format}, &want, false, "table")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Print(doc{Bucket: "cfg", Added: added, Empty: []int{}, Total: 2}, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteDoc(&got, fields, format == "json"); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("-o %s:\n got %s\nwant %s", format, got.String(), want.String())
		}
	}
}
