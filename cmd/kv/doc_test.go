package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/kv"
)

// list streams the elements of a slice as an output.DocField list.
func list[T any](items []T) func(func(any) error) error {
	return func(item func(any) error) error {
		for _, v := range items {
			if err := item(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// The streamed documents are byte for byte what the output package writes
// for the whole document, in every format, and what --jq sees.
func TestWriteDocMatchesPrinter(t *testing.T) {
	ctx := context.Background()
	changes, _ := kv.Diff(ctx, []byte(`{"a":1,"b":"<x&y>","c":[1,2],"d":{"e":null}}`), []byte(`{ "a": 2.50, "c": [1,2,3], "d": {"e": "\u2028"}, "f": true }`), "l", "r")
	text, _ := kv.Diff(ctx, []byte("one\ntwo <b>\n"), []byte("one\nthree\n"), "cfg/notes@1", "cfg/notes@2")
	bin, _ := kv.Diff(ctx, []byte{0, 1, 2}, []byte{0xff}, "l", "r")
	added := []keyValueJSON{
		{Key: "a.json", Revision: 3, Time: "2025-06-01T12:00:00.5Z", Value: kv.Raw([]byte(` {"x": [1, {"y": "<z>"}], "n": 1e3} `))},
		{Key: "a.text", Revision: 4, Time: "2025-06-01T12:00:00Z", Value: kv.Raw([]byte("line\nnext é"))},
		{Key: "a.bin", Revision: 5, Time: "2025-06-01T12:00:00Z", Value: kv.Raw([]byte{0, 0xfe})},
	}
	changed := []changedJSON{
		{Key: "c.json", FromRevision: 1, ToRevision: 7, Changes: changes},
		{Key: "c.text", FromRevision: 2, ToRevision: 8, Changes: text},
		{Key: "c.bin", FromRevision: 2, ToRevision: 9, Changes: bin},
	}
	different := []differentJSON{{Key: "c.json", LeftRevision: 1, RightRevision: 7, Changes: changes}}
	cases := []struct {
		name   string
		whole  any
		fields []output.DocField
	}{
		{"time", timeDiffJSON{Bucket: "cfg", From: "f", To: "t", Added: added, Deleted: []keyValueJSON{}, Changed: changed}, []output.DocField{
			{Name: "bucket", Value: "cfg"}, {Name: "from", Value: "f"}, {Name: "to", Value: "t"},
			{Name: "added", List: list(added)}, {Name: "deleted", List: list([]keyValueJSON{})}, {Name: "changed", List: list(changed)},
		}},
		{"empty", timeDiffJSON{Bucket: "cfg", From: "f", To: "t", Added: []keyValueJSON{}, Deleted: []keyValueJSON{}, Changed: []changedJSON{}}, []output.DocField{
			{Name: "bucket", Value: "cfg"}, {Name: "from", Value: "f"}, {Name: "to", Value: "t"},
			{Name: "added", List: list([]keyValueJSON{})}, {Name: "deleted", List: list([]keyValueJSON{})}, {Name: "changed", List: list([]changedJSON{})},
		}},
		{"buckets", bucketsDiffJSON{Left: sideJSON{Bucket: "cfg"}, Right: sideJSON{Bucket: "cfg", Server: "nats://127.0.0.1:4222"}, OnlyLeft: added[:1], OnlyRight: []keyValueJSON{}, Different: different, Identical: 12}, []output.DocField{
			{Name: "left", Value: sideJSON{Bucket: "cfg"}}, {Name: "right", Value: sideJSON{Bucket: "cfg", Server: "nats://127.0.0.1:4222"}},
			{Name: "only_left", List: list(added[:1])}, {Name: "only_right", List: list([]keyValueJSON{})}, {Name: "different", List: list(different)},
			{Name: "identical", After: func() any { return 12 }},
		}},
	}
	for _, c := range cases {
		for _, format := range []string{"json", "jsonl"} {
			var want, got bytes.Buffer
			p, err := output.NewPrinter(output.Options{Format: format}, &want, false, "table")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Print(c.whole, nil); err != nil {
				t.Fatal(err)
			}
			if err := output.WriteDoc(&got, c.fields, format == "json"); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s -o %s:\n got %s\nwant %s", c.name, format, got.String(), want.String())
			}
		}
		// --jq and yaml print the compact form whole.
		for _, o := range []output.Options{{Format: "yaml"}, {Format: "json", JQ: "."}, {JQ: ".[]"}} {
			var want, got, compact bytes.Buffer
			p, err := output.NewPrinter(o, &want, false, "table")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Print(c.whole, nil); err != nil {
				t.Fatal(err)
			}
			if err := output.WriteDoc(&compact, c.fields, false); err != nil {
				t.Fatal(err)
			}
			p.Out = &got
			if err := p.Print(json.RawMessage(bytes.TrimSuffix(compact.Bytes(), []byte("\n"))), nil); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s %+v:\n got %s\nwant %s", c.name, o, got.String(), want.String())
			}
		}
	}
}
