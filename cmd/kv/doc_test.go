package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/kv"
)

// list streams the elements of a slice as a docField list.
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
		fields []docField
	}{
		{"time", timeDiffJSON{Bucket: "cfg", From: "f", To: "t", Added: added, Deleted: []keyValueJSON{}, Changed: changed}, []docField{
			{name: "bucket", value: "cfg"}, {name: "from", value: "f"}, {name: "to", value: "t"},
			{name: "added", list: list(added)}, {name: "deleted", list: list([]keyValueJSON{})}, {name: "changed", list: list(changed)},
		}},
		{"empty", timeDiffJSON{Bucket: "cfg", From: "f", To: "t", Added: []keyValueJSON{}, Deleted: []keyValueJSON{}, Changed: []changedJSON{}}, []docField{
			{name: "bucket", value: "cfg"}, {name: "from", value: "f"}, {name: "to", value: "t"},
			{name: "added", list: list([]keyValueJSON{})}, {name: "deleted", list: list([]keyValueJSON{})}, {name: "changed", list: list([]changedJSON{})},
		}},
		{"buckets", bucketsDiffJSON{Left: sideJSON{Bucket: "cfg"}, Right: sideJSON{Bucket: "cfg", Server: "nats://127.0.0.1:4222"}, OnlyLeft: added[:1], OnlyRight: []keyValueJSON{}, Different: different, Identical: 12}, []docField{
			{name: "left", value: sideJSON{Bucket: "cfg"}}, {name: "right", value: sideJSON{Bucket: "cfg", Server: "nats://127.0.0.1:4222"}},
			{name: "only_left", list: list(added[:1])}, {name: "only_right", list: list([]keyValueJSON{})}, {name: "different", list: list(different)},
			{name: "identical", after: func() any { return 12 }},
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
			if err := writeDoc(&got, c.fields, format == "json"); err != nil {
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
			if err := writeDoc(&compact, c.fields, false); err != nil {
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
