package output

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

type item struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Big   uint64 `json:"big"`
}

var items = []item{{"b", 2, 1 << 62}, {"a", 1, 3}}

func table() []Table {
	t := Table{Header: []string{"name", "count"}}
	for _, it := range items {
		t.Row(it.Name, it.Count)
	}
	return []Table{t}
}

func render(t *testing.T, o Options, def string) string {
	t.Helper()
	var buf bytes.Buffer
	p, err := NewPrinter(o, &buf, false, def)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Print(items, table); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestFormats(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"table", Options{}, "NAME  COUNT\nb     2\na     1\n"},
		{"json keeps field order", Options{Format: "json"}, "[\n  {\n    \"name\": \"b\",\n    \"count\": 2,\n    \"big\": 4611686018427387904\n  },\n  {\n    \"name\": \"a\",\n    \"count\": 1,\n    \"big\": 3\n  }\n]\n"},
		{"jsonl: one line an item", Options{Format: "jsonl"}, "{\"name\":\"b\",\"count\":2,\"big\":4611686018427387904}\n{\"name\":\"a\",\"count\":1,\"big\":3}\n"},
		{"yaml keeps field order", Options{Format: "yaml"}, "- name: b\n  count: 2\n  big: 4611686018427387904\n- name: a\n  count: 1\n  big: 3\n"},
		{"jq strings print raw", Options{JQ: ".[].name"}, "b\na\n"},
		{"jq keeps big integers exact", Options{JQ: ".[0].big"}, "4611686018427387904\n"},
		{"jq objects as JSON", Options{JQ: ".[1] | {name}", Format: "jsonl"}, "{\"name\":\"a\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.o, "table"); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestBadInputIsUsageError(t *testing.T) {
	for _, o := range []Options{{Format: "xml"}, {JQ: ".["}, {JQ: "$undefined"}} {
		_, err := NewPrinter(o, &bytes.Buffer{}, false, "table")
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("NewPrinter(%+v) = %v, want a usage error", o, err)
		}
	}
}

func TestItemAppliesJQToEach(t *testing.T) {
	var buf bytes.Buffer
	p, err := NewPrinter(Options{JQ: "select(.count > 1) | .name"}, &buf, false, "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := p.Item(it); err != nil {
			t.Fatal(err)
		}
	}
	if got := buf.String(); got != "b\n" {
		t.Errorf("got %q", got)
	}
}

func TestColorOnlyInHeaderAndAligned(t *testing.T) {
	var buf bytes.Buffer
	p, err := NewPrinter(Options{}, &buf, true, "table")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Print(items, table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if !strings.HasPrefix(lines[0], "\x1b[1mNAME\x1b[0m") {
		t.Errorf("header not bold: %q", lines[0])
	}
	if lines[1] != "b     2" || lines[2] != "a     1" {
		t.Errorf("rows carry colour or lost alignment: %q", lines[1:])
	}
}

func TestAppendJQOnGenericValues(t *testing.T) {
	p, err := NewPrinter(Options{JQ: `"\(.seq) \(.data.id)"`}, &bytes.Buffer{}, false, "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.AppendJQ(nil, map[string]any{"seq": 189, "data": map[string]any{"id": "x"}})
	if err != nil || string(out) != "189 x\n" {
		t.Errorf("AppendJQ = %q, %v", out, err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLineWriterFlushesPromptly: a line written to a quiet stream shows up
// without Close, and Close flushes the rest.
func TestLineWriterFlushesPromptly(t *testing.T) {
	var out syncBuffer
	lw := NewLineWriter(&out)
	lw.Write([]byte("first\n"))
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "first\n" {
		if time.Now().After(deadline) {
			t.Fatalf("line not flushed: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	lw.Write([]byte("second\n"))
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "first\nsecond\n" {
		t.Errorf("after Close: %q", out.String())
	}
}

// fields is a jqpred.Object over a map.
type fields map[string]any

func (f fields) Field(name string) (any, error) { return f[name], nil }

// Keep decides simple programs on the fields and gives the rest, and
// inputs the fields cannot decide, to gojq on the whole document, whose
// failures it returns; the one warning names the item and the noun.
func TestFilterKeep(t *testing.T) {
	doc := map[string]any{"subject": "orders.paid", "data": "text"}
	calls := 0
	document := func() (any, error) { calls++; return doc, nil }
	for _, tt := range []struct {
		expr      string
		keep      bool
		documents int
		fails     bool
	}{
		{`.subject == "orders.paid"`, true, 0, false},
		{`.subject | startswith("orders.")`, true, 1, false},
		{`.data.id == 1`, false, 1, true}, // cannot index a string: gojq says why
		{`.missing == null`, true, 0, false},
	} {
		calls = 0
		f, err := CompileFilter(tt.expr, "messages it fails on")
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Keep(context.Background(), fields(doc), document)
		if got != tt.keep || calls != tt.documents || (err != nil) != tt.fails {
			t.Errorf("%s: keep %v, %d documents built, error %v; want %v, %d, failure %v", tt.expr, got, calls, err, tt.keep, tt.documents, tt.fails)
		}
		if got, _ := f.Keep(context.Background(), nil, document); got != tt.keep {
			t.Errorf("%s: Keep on the document %v, on the fields %v", tt.expr, got, tt.keep)
		}
		if tt.fails {
			want := "jetctl: warning: --filter failed on seq 2 (" + err.Error() + "); messages it fails on do not match\n"
			if w := f.Warning("seq 2", err); w != want {
				t.Errorf("Warning = %q, want %q", w, want)
			}
			var out bytes.Buffer
			warn := f.WarnOnce(&out)
			warn("seq 2", err)
			warn("seq 3", err)
			if out.String() != want {
				t.Errorf("WarnOnce wrote %q", out.String())
			}
		}
	}
	if f, err := CompileFilter("", "x"); f != nil || err != nil {
		t.Errorf("empty program: %v, %v", f, err)
	}
	if _, err := CompileFilter(".[", "x"); err == nil {
		t.Error("a bad program compiled")
	}
}

// Subjects such as orders.> read the same in -o json and -o jsonl: neither
// escapes <, > or &.
func TestJSONDoesNotEscapeSubjects(t *testing.T) {
	v := []map[string]string{{"subject": "orders.>", "note": "a & <b>"}}
	for _, format := range []string{"json", "jsonl"} {
		var buf bytes.Buffer
		p, err := NewPrinter(Options{Format: format}, &buf, false, "table")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Print(v, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), `"orders.>"`) || !strings.Contains(buf.String(), `"a & <b>"`) {
			t.Errorf("-o %s: %s", format, buf.String())
		}
	}
}

// A jq program that never ends (def f: f; f) stops when the command's
// context ends, in --jq and in --filter alike, with the context's error
// (exit 130) and no --filter warning.
func TestJQStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	const forever = `def f: f; f`

	p, err := NewPrinter(Options{JQ: forever}, &bytes.Buffer{}, false, "table")
	if err != nil {
		t.Fatal(err)
	}
	p.Context = ctx
	if err := p.Print(items, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Print: %v, want context.Canceled", err)
	}
	if err := p.Item(items[0]); !errors.Is(err, context.Canceled) {
		t.Errorf("Item: %v, want context.Canceled", err)
	}
	if _, err := p.AppendJQ(nil, map[string]any{}); !errors.Is(err, context.Canceled) {
		t.Errorf("AppendJQ: %v, want context.Canceled", err)
	}

	f, err := CompileFilter(forever, "items")
	if err != nil {
		t.Fatal(err)
	}
	if keep, err := f.Keep(ctx, nil, func() (any, error) { return map[string]any{}, nil }); keep || err != nil {
		t.Errorf("Keep: %v, %v; want false and no failure to warn of", keep, err)
	}
}
