package kv

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/jsonvalue"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, ok := jsonvalue.Decode([]byte(s))
	if !ok {
		t.Fatalf("decode %s: not one JSON document", s)
	}
	return v
}

// render is the people form of a change list, one change a line.
func render(changes []Change) string {
	var lines []string
	for _, c := range changes {
		lines = append(lines, c.String())
	}
	return strings.Join(lines, "\n")
}

func TestDiffJSON(t *testing.T) {
	tests := []struct {
		name, before, after, want string
	}{
		{"equal", `{"a":1}`, `{"a":1}`, ``},
		{"key order and spacing", `{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1 }`, ``},
		{"same number spelled differently", `{"n":1.0}`, `{"n":1}`, ``},
		{"nested scalar", `{"spec":{"replicas":3}}`, `{"spec":{"replicas":5}}`, `~ .spec.replicas: 3 → 5`},
		{"added and removed keys, sorted",
			`{"spec":{"debug":true,"image":"a"}}`, `{"spec":{"image":"a","labels":{"team":"core"}}}`,
			"- .spec.debug: true\n+ .spec.labels: {\"team\":\"core\"}"},
		{"type change", `{"a":{"b":1}}`, `{"a":[1]}`, `~ .a: {"b":1} → [1]`},
		{"null to value", `{"a":null}`, `{"a":"x"}`, `~ .a: null → "x"`},
		{"string to number", `{"a":"5"}`, `{"a":5}`, `~ .a: "5" → 5`},
		{"root scalar", `5`, `6`, `~ .: 5 → 6`},
		{"root type change", `[1]`, `{"a":1}`, `~ .: [1] → {"a":1}`},
		{"odd key names", `{"content-type":"a","a.b":1}`, `{"content-type":"b","a.b":2}`,
			"~ .\"a.b\": 1 → 2\n~ .\"content-type\": \"a\" → \"b\""},
		{"array element changed in place", `{"ports":[80,443]}`, `{"ports":[80,8443]}`, `~ .ports[1]: 443 → 8443`},
		{"array element appended", `[1,2]`, `[1,2,3]`, `+ .[2]: 3`},
		{"array element inserted at the front", `["b","c"]`, `["a","b","c"]`, `+ .[0]: "a"`},
		{"array element removed from the middle", `["a","b","c"]`, `["a","c"]`, `- .[1]: "b"`},
		{"object in array edited while another is inserted",
			`{"items":[{"name":"x","n":1},{"name":"y","n":2}]}`,
			`{"items":[{"name":"w","n":0},{"name":"x","n":1},{"name":"y","n":3}]}`,
			"+ .items[0]: {\"n\":0,\"name\":\"w\"}\n~ .items[2].n: 2 → 3"},
		{"arrays of arrays", `[[1,2],[3]]`, `[[1,2],[4]]`, `~ .[1][0]: 3 → 4`},
		{"big integers stay exact", `{"id":12345678901234567890}`, `{"id":12345678901234567891}`,
			`~ .id: 12345678901234567890 → 12345678901234567891`},
		{"unicode and html are not escaped", `{"s":"<a>"}`, `{"s":"é"}`, `~ .s: "<a>" → "é"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(DiffJSON(mustDecode(t, tt.before), mustDecode(t, tt.after)))
			if got != tt.want {
				t.Errorf("DiffJSON(%s, %s)\n got: %s\nwant: %s", tt.before, tt.after, got, tt.want)
			}
		})
	}
}

func TestDiffJSONLongArraysFallBackToIndexes(t *testing.T) {
	n := 2000 // 2000*2001 cells is past maxLCSCells
	var before, after []any
	for i := 0; i < n; i++ {
		before = append(before, json.Number("1"))
		after = append(after, json.Number("1"))
	}
	after = append(after, json.Number("2"))
	got := render(DiffJSON(before, after))
	if got != `+ .[2000]: 2` {
		t.Errorf("got %s", got)
	}
}

func TestChangeJSON(t *testing.T) {
	changes := []Change{
		{Path: ".a", Op: ChangeAdd, After: nil},
		{Path: ".b", Op: ChangeRemove, Before: json.Number("1")},
		{Path: ".c", Op: ChangeUpdate, Before: "x", After: map[string]any{"y": true}},
	}
	data, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"path":".a","op":"add","after":null},{"path":".b","op":"remove","before":1},{"path":".c","op":"change","before":"x","after":{"y":true}}]`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

func TestDiffValues(t *testing.T) {
	t.Run("text gets a unified diff", func(t *testing.T) {
		changes := mustDiff(t, []byte("line one\nline two\n"), []byte("line one\nline 2\n"), "b/k@1", "b/k@2")
		if len(changes) != 1 || changes[0].Path != "." || changes[0].Op != ChangeUpdate {
			t.Fatalf("got %+v", changes)
		}
		want := "--- b/k@1\n+++ b/k@2\n@@ -1,2 +1,2 @@\n line one\n-line two\n+line 2\n"
		if changes[0].Unified != want {
			t.Errorf("unified:\n%s\nwant:\n%s", changes[0].Unified, want)
		}
	})
	t.Run("text without final newline", func(t *testing.T) {
		changes := mustDiff(t, []byte("ready"), []byte("failed"), "a", "b")
		if !strings.Contains(changes[0].Unified, "-ready\n+failed\n") {
			t.Errorf("unified:\n%s", changes[0].Unified)
		}
	})
	t.Run("JSON against text is a text diff", func(t *testing.T) {
		changes := mustDiff(t, []byte(`5`), []byte(`five`), "a", "b")
		if len(changes) != 1 || changes[0].Unified == "" || changes[0].Before != "5" {
			t.Errorf("got %+v", changes)
		}
	})
	t.Run("binary gets sizes and hashes", func(t *testing.T) {
		changes := mustDiff(t, []byte{0, 1, 2}, []byte{0, 1, 2, 3}, "a", "b")
		if len(changes) != 1 {
			t.Fatalf("got %+v", changes)
		}
		b, ok1 := changes[0].Before.(BinaryInfo)
		a, ok2 := changes[0].After.(BinaryInfo)
		if !ok1 || !ok2 || b.Size != 3 || a.Size != 4 || len(b.SHA256) != 64 || b.SHA256 == a.SHA256 {
			t.Errorf("got %+v", changes[0])
		}
		if s := changes[0].String(); !strings.HasPrefix(s, "~ .: binary, 3 bytes, sha256:") {
			t.Errorf("String() = %s", s)
		}
	})
	t.Run("no value before is an add of the whole value", func(t *testing.T) {
		got := render(mustDiff(t, nil, []byte(`{"a":1}`), "a", "b"))
		if got != `+ .: {"a":1}` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("no value after is a remove", func(t *testing.T) {
		got := render(mustDiff(t, []byte("x"), nil, "a", "b"))
		if got != `- .: "x"` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("empty value is a value", func(t *testing.T) {
		if got := render(mustDiff(t, []byte{}, []byte("x"), "a", "b")); !strings.Contains(got, "+x") {
			t.Errorf("got %s", got)
		}
	})
	t.Run("equal", func(t *testing.T) {
		if got := mustDiff(t, []byte("x"), []byte("x"), "a", "b"); len(got) != 0 {
			t.Errorf("got %+v", got)
		}
	})
}

func TestKindOf(t *testing.T) {
	for in, want := range map[string]Kind{
		`{"a":1}`:    KindJSON,
		`5`:          KindJSON,
		`"x"`:        KindJSON,
		` [1] `:      KindJSON,
		`ready`:      KindText,
		``:           KindText,
		"a\tb\nc":    KindText,
		"\x00\x01":   KindBinary,
		"\xff\xfe":   KindBinary,
		`{"a":1} {}`: KindText,
		// Each byte a JSON document can start with, and near misses.
		"\r\n\t-1.5e3": KindJSON,
		`true`:         KindJSON,
		`false`:        KindJSON,
		`null`:         KindJSON,
		`0`:            KindJSON,
		`9`:            KindJSON,
		`nulls`:        KindText,
		`tea`:          KindText,
		`   `:          KindText,
		"\ufeff{}":     KindText,
		`{"a":`:        KindText,
	} {
		if got := KindOf([]byte(in)); got != want {
			t.Errorf("KindOf(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestEntryJSON(t *testing.T) {
	for _, tt := range []struct {
		value []byte
		op    Op
		want  string
	}{
		{[]byte(`{"state": "ready"}`), OpPut, `"size":18,"value":{"state":"ready"}}`},
		{[]byte(`ready`), OpPut, `"size":5,"value":"ready"}`},
		{[]byte{0xff, 0}, OpPut, `"size":2,"value_b64":"/wA="}`},
		{nil, OpDel, `"op":"DEL","time":"1970-01-01T00:00:00Z","size":0}`},
	} {
		e := Entry{Bucket: "b", Key: "k", Revision: 3, Op: tt.op, Value: tt.value}
		e.Time = e.Time.AddDate(1969, 0, 0)
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(data), tt.want) || !strings.HasPrefix(string(data), `{"bucket":"b","key":"k","revision":3,`) {
			t.Errorf("got %s, want suffix %s", data, tt.want)
		}
	}
}

func TestValidateKeyPattern(t *testing.T) {
	for _, ok := range []string{"a", "a.b", "a.*", "a.>", "*", ">", "a-b/c_d=e"} {
		if err := ValidateKeyPattern(ok, true); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".a", "a.", "a..b", "a.>.b", "a*", "a b", "a.>x"} {
		if err := ValidateKeyPattern(bad, true); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if err := ValidateKeyPattern("a.*", false); err == nil {
		t.Error("wildcard accepted where keys are exact")
	}
}

func TestPatterns(t *testing.T) {
	b := &bucket{prefix: "$KV.b."}
	filters, match := b.consumerFilters([]string{"a.b", "a.*", "c"})
	if strings.Join(filters, ",") != "$KV.b.a.*,$KV.b.c" || match != nil {
		t.Errorf("covered pattern not dropped: %v", filters)
	}
	filters, match = b.consumerFilters([]string{"a.*", "*.b"})
	if strings.Join(filters, ",") != "$KV.b.>" || match == nil || !match("$KV.b.x.b") || match("$KV.b.x.c") {
		t.Errorf("overlapping patterns: %v", filters)
	}
}

// Generic must be what a jq program would see of the entry's JSON form.
func TestEntryGenericMatchesJSON(t *testing.T) {
	for _, value := range [][]byte{[]byte(`{"a":[1,2.5,"x"],"b":null}`), []byte("text"), {0xff}, nil} {
		for _, op := range []Op{OpPut, OpDel} {
			e := Entry{Bucket: "b", Key: "k", Revision: 7, Op: op, Value: value}
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			generic, err := e.Generic()
			if err != nil {
				t.Fatal(err)
			}
			viaGeneric, _ := json.Marshal(generic)
			var a, b any
			json.Unmarshal(data, &a)
			json.Unmarshal(viaGeneric, &b)
			if !equalJSON(normaliseForCompare(toNumbers(a)), normaliseForCompare(toNumbers(b))) {
				t.Errorf("%s %q: JSON %s, Generic %s", op, value, data, viaGeneric)
			}
		}
	}
}

// toNumbers turns float64s into json.Number so that equalJSON compares them.
func toNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = toNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = toNumbers(e)
		}
	case float64:
		data, _ := json.Marshal(x)
		return json.Number(data)
	}
	return v
}

// Field must give each of Generic's fields on its own, and nil for the
// ones Generic's document does not have, so that a fast --filter sees what
// gojq would.
func TestEntryFieldMatchesGeneric(t *testing.T) {
	when := time.Date(2026, 11, 29, 13, 0, 0, 5, time.UTC)
	values := [][]byte{[]byte(`{"a":[1,2.5,"x"],"b":null}`), []byte(`{"esc":"\u00e9\n"}`),
		[]byte(` 12345678901234567890 `), []byte("text"), []byte("true-ish"), {0xff, 0}, nil}
	fields := []string{"bucket", "key", "revision", "op", "time", "size", "value", "value_b64", "other"}
	for _, value := range values {
		for _, op := range []Op{OpPut, OpDel, OpPurge} {
			e := Entry{Bucket: "b", Key: "k.1", Revision: 7, Op: op, Time: when, Value: value}
			generic, err := e.Generic()
			if err != nil {
				t.Fatal(err)
			}
			doc := generic.(map[string]any)
			for _, name := range fields {
				got, err := e.Field(name)
				if err != nil {
					t.Fatalf("%s %q: Field(%s): %v", op, value, name, err)
				}
				if want := doc[name]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s %q: Field(%s) = %#v, Generic has %#v", op, value, name, got, want)
				}
			}
		}
	}
}
