package envelope

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/jsonvalue"
)

func TestJSONLineRoundTrip(t *testing.T) {
	msgs := []*Message{
		{Stream: "ORDERS", Seq: 7, Subject: "orders.created", Time: time.Date(2026, 11, 29, 2, 10, 0, 123456789, time.UTC),
			Header: nats.Header{"Trace": {"a", "b"}, "Nats-Msg-Id": {"x"}}, Data: []byte(`{"id":1,"note":"line\nbreak \"quoted\" \\ tab\t \u0001"}`)},
		{Stream: "BIN", Seq: 1, Subject: "bin.x", Time: time.Unix(0, 5).UTC(), Data: []byte{0xff, 0x00, 0xfe, 'a'}},
		{Stream: "E", Seq: 2, Subject: "e", Time: time.Unix(1, 0).UTC(), Data: nil},
		{Stream: "U", Seq: 3, Subject: "u", Time: time.Unix(2, 0).UTC(), Data: []byte("grüße 🚀 \u2028")},
	}
	for _, m := range msgs {
		line := m.AppendJSON(nil)
		if !json.Valid(bytes.TrimSpace(line)) {
			t.Fatalf("invalid JSON: %s", line)
		}
		var viaStd Line
		if err := json.Unmarshal(line, &viaStd); err != nil {
			t.Fatal(err)
		}
		got, err := ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if got.Stream != m.Stream || got.Seq != m.Seq || got.Subject != m.Subject || !got.Time.Equal(m.Time) {
			t.Errorf("metadata changed: %+v -> %+v", m, got)
		}
		if !bytes.Equal(got.Data, m.Data) {
			t.Errorf("data changed: %q -> %q", m.Data, got.Data)
		}
		if len(m.Header) > 0 && !reflect.DeepEqual(got.Header, m.Header) {
			t.Errorf("headers changed: %v -> %v", m.Header, got.Header)
		}
		if viaStd.Size != len(m.Data) {
			t.Errorf("size = %d", viaStd.Size)
		}
	}
}

func TestBinaryUsesBase64(t *testing.T) {
	line := (&Message{Subject: "s", Data: []byte{0xff}}).AppendJSON(nil)
	if !bytes.Contains(line, []byte(`"data_b64":"/w=="`)) || bytes.Contains(line, []byte(`"data":`)) {
		t.Errorf("got %s", line)
	}
}

func TestCopyAndRestoreHeader(t *testing.T) {
	h := nats.Header{"Nats-Msg-Id": {"1"}, "Nats-Expected-Last-Sequence": {"4"}, "Nats-TTL": {"1m"}, "App": {"x", "y"}}
	c := CopyHeader(CmdDLQ, h, 4)
	for _, name := range []string{"Nats-Msg-Id", "Nats-Expected-Last-Sequence", "Nats-TTL"} {
		if _, ok := c[name]; ok {
			t.Errorf("copy keeps %s", name)
		}
		if c.Get(OrigPrefix+name) == "" {
			t.Errorf("copy lost %s", name)
		}
	}
	SetProvenance(c, &Message{Stream: "S", Seq: 9, Subject: "a.b", Time: time.Unix(0, 0)})
	back := RestoreHeader(c, SourceStream, SourceSeq, SourceSubject, SourceTime)
	if !reflect.DeepEqual(back, h) {
		t.Errorf("restore: %v, want %v", back, h)
	}
}

// A copy of a copy holds a header the server acts on under both names:
// a redriven dead letter carries the redrive's own Nats-Msg-Id and the
// application's as Jetctl-Orig-Nats-Msg-Id. The application's stays,
// whatever the order in which the map is walked.
func TestCopyHeaderKeepsTheEarlierOriginal(t *testing.T) {
	h := nats.Header{"Nats-Msg-Id": {"redrive:DLQ_ORDERS:3"}, OrigPrefix + "Nats-Msg-Id": {"app-5"}, "App": {"x"}}
	for range 100 {
		c := CopyHeader(CmdDLQ, h, 0)
		if got := c[OrigPrefix+"Nats-Msg-Id"]; len(got) != 1 || got[0] != "app-5" {
			t.Fatalf("copy: %s %q, want [app-5]", OrigPrefix+"Nats-Msg-Id", got)
		}
		if _, ok := c["Nats-Msg-Id"]; ok || c.Get("App") != "x" || len(c) != 2 {
			t.Fatalf("copy %v", c)
		}
	}
}

func TestGenericDecodesJSONData(t *testing.T) {
	g := (&Message{Subject: "s", Data: []byte(`{"n": 12345678901234567890, "s": "x"}`)}).Generic()
	q, err := gojq.Parse(`[.data.n + 0, (.data.n | tostring), .data.s]`)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := q.Run(g).Next()
	got, ok := v.([]any)
	if !ok || len(got) != 3 || got[1] != "12345678901234567890" || got[2] != "x" {
		t.Errorf("jq sees data as %#v", v)
	}
	if g := (&Message{Subject: "s", Data: []byte("plain")}).Generic(); g["data"] != "plain" {
		t.Errorf("text data = %#v", g["data"])
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	m := &Message{Stream: "ORDERS", Seq: 123456, Subject: "orders.created", Time: time.Now(), Data: bytes.Repeat([]byte("x"), 128)}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = m.AppendJSON(buf[:0])
	}
}

func TestGenericWorksWithGojq(t *testing.T) {
	g := (&Message{Stream: "S", Seq: 189, Subject: "s", Data: []byte(`{"id":"x"}`)}).Generic()
	q, err := gojq.Parse(`"\(.seq) \(.size) \(.data.id)"`)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := q.Run(g).Next()
	if v != "189 10 x" {
		t.Errorf("got %#v", v)
	}
}

// Field must give each of Generic's fields on its own, and nil for the
// ones Generic's object does not have, so that a fast --filter sees what
// gojq would.
func TestFieldMatchesGeneric(t *testing.T) {
	when := time.Date(2026, 11, 29, 13, 0, 0, 5, time.UTC)
	fields := []string{"stream", "seq", "subject", "time", "size", "headers", "data", "data_b64", "other"}
	for _, data := range [][]byte{[]byte(`{"a":[1,2.5],"b":null}`), []byte("text"), {0xff, 0}, nil} {
		for _, h := range []nats.Header{nil, {"X-A": {"1", "2"}}} {
			m := &Message{Stream: "S", Seq: 7, Subject: "s.x", Time: when, Header: h, Data: data}
			generic := m.Generic()
			for _, name := range fields {
				got, err := m.Field(name)
				if err != nil {
					t.Fatalf("%q: Field(%s): %v", data, name, err)
				}
				if want := generic[name]; !reflect.DeepEqual(got, want) {
					t.Errorf("%q %v: Field(%s) = %#v, Generic has %#v", data, h, name, got, want)
				}
			}
		}
	}
}

// Header bytes that are not UTF-8 cannot be JSON text: the line keeps them
// exactly in headers_b64, shows them as U+FFFD in headers, and reads back
// the exact bytes.
func TestNonUTF8HeadersRoundTrip(t *testing.T) {
	m := &Message{Stream: "S", Seq: 1, Subject: "s", Time: time.Unix(0, 0).UTC(),
		Header: nats.Header{"X-Bin": {"\xc3\x28\xff", "ok"}, "Plain": {"text"}}, Data: []byte("x")}
	line := m.AppendJSON(nil)
	if !json.Valid(bytes.TrimSpace(line)) {
		t.Fatalf("invalid JSON: %q", line)
	}
	if !bytes.Contains(line, []byte("\"headers\":{\"Plain\":[\"text\"],\"X-Bin\":[\"\ufffd(\ufffd\",\"ok\"]},\"headers_b64\":\"")) {
		t.Errorf("line: %s", line)
	}
	got, err := ParseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Header, m.Header) {
		t.Errorf("headers: %q, want %q", got.Header, m.Header)
	}
	if _, ok := m.Generic()["headers_b64"]; !ok {
		t.Error("jq's object has no headers_b64")
	}
	if v, _ := m.Field("headers_b64"); v == nil {
		t.Error("Field(headers_b64) is nil")
	}
	// Valid headers stay as they were: no headers_b64.
	m.Header = nats.Header{"Plain": {"grüße"}}
	if line := m.AppendJSON(nil); bytes.Contains(line, []byte("headers_b64")) {
		t.Errorf("line: %s", line)
	}
}

// data follows one rule (docs/output.md): the JSON document itself when the
// payload is JSON, else the text, data_b64 when not UTF-8; and data_b64
// next to data when data alone cannot give the exact bytes back. Every
// payload reads back byte for byte.
func TestDataRule(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    string // the line's payload fields, between "time" and "size"
	}{
		{`{"order_id":"ord-1","n":1.50,"z":1,"a":2,"big":12345678901234567890}`, `"data":{"order_id":"ord-1","n":1.50,"z":1,"a":2,"big":12345678901234567890}`},
		{`{"a": 1,  "b":[1, 2],"t":"<&>\u00e9"}`, `"data":{"a": 1,  "b":[1, 2],"t":"<&>\u00e9"}`},
		{`{"a":1,"a":2}`, `"data":{"a":1,"a":2}`},
		{`[1,2]`, `"data":[1,2]`},
		{`-0.5e3`, `"data":-0.5e3`},
		{`true`, `"data":true`},
		{`null`, `"data":null`},
		{"{\"a\":1}\n", `"data":{"a":1},"data_b64":"eyJhIjoxfQo="`},
		{"{\n  \"a\": 1\n}", `"data":{"a":1},"data_b64":"ewogICJhIjogMQp9"`},
		{` 7`, `"data":7,"data_b64":"IDc="`},
		{`"hello"`, `"data":"hello","data_b64":"ImhlbGxvIg=="`},
		{`hello`, `"data":"hello"`},
		{`{"a":1} trailing`, `"data":"{\"a\":1} trailing"`},
		{`{"a":1`, `"data":"{\"a\":1"`},
		{``, `"data":""`},
		{"nul\x00l", `"data":"nul\u0000l"`},
	} {
		m := &Message{Stream: "S", Seq: 1, Subject: "s", Time: time.Unix(0, 0).UTC(), Data: []byte(c.payload)}
		line := m.AppendJSON(nil)
		want := `{"stream":"S","seq":1,"subject":"s","time":"1970-01-01T00:00:00Z",` + c.want + `,"size":` + strconv.Itoa(len(c.payload)) + "}\n"
		if string(line) != want {
			t.Errorf("%q:\n got %s want %s", c.payload, line, want)
			continue
		}
		got, err := ParseLine(line)
		if err != nil {
			t.Fatalf("%q: %v", c.payload, err)
		}
		if string(got.Data) != c.payload {
			t.Errorf("%q: read back %q", c.payload, got.Data)
		}
		// The printed data is the value jq sees (and dlq show prints).
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		if g := m.Generic(); !reflect.DeepEqual(obj["data"], g["data"]) {
			t.Errorf("%q: printed data %#v, jq sees %#v", c.payload, obj["data"], g["data"])
		}
	}
}

// Dumps written before data held JSON documents (data a JSON string of the
// payload's text) still load exactly.
func TestParseLineOldDump(t *testing.T) {
	m, err := ParseLine([]byte(`{"stream":"S","seq":1,"subject":"s","time":"1970-01-01T00:00:00Z","data":"{\"a\": 1}\n","size":9}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "{\"a\": 1}\n" {
		t.Errorf("data = %q", m.Data)
	}
}

func BenchmarkAppendJSONDocument(b *testing.B) {
	m := &Message{Stream: "ORDERS", Seq: 123456, Subject: "orders.created", Time: time.Now(),
		Data: []byte(`{"order_id":"ord-00042","customer":"c-981","status":"created","amount":129.95,"items":[{"sku":"A-1","qty":2}]}`)}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = m.AppendJSON(buf[:0])
	}
}

// jsonString is a string as encoding/json writes it with HTML escaping off,
// the rule of every JSON output (cmd/output).
func jsonString(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

var jsonStringCases = []string{
	"", "plain", `quote " and \ back`, "ctl \x00\x01\x08\x0c\x1f\x7f\n\r\t", "<html> & >", "orders.>",
	"invalid \xff\xfe utf8", "\xc3\x28 \xe2\x80 \xf0\x9f\x9a", "<\xff&>", "line\u2028sep\u2029", "\u2028\xe2\x80\xa8\xe2\x80\xaa",
	"日本語 ✓ grüße 🚀", "\ufffd", "\xed\xa0\x80 surrogate", "end \xe2",
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringCases {
		want := jsonString(t, s)
		if got := string(AppendJSONString([]byte("x"), s)); got != "x"+want {
			t.Errorf("%q: got %s want %s", s, got[1:], want)
		}
		if got := string(AppendJSONString(nil, []byte(s))); got != want {
			t.Errorf("%q as []byte: got %s want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := jsonString(t, s)
		if got := string(AppendJSONString(nil, s)); got != want {
			t.Errorf("%q: got %s want %s", s, got, want)
		}
		if got := string(AppendJSONString(nil, []byte(s))); got != want {
			t.Errorf("%q as []byte: got %s want %s", s, got, want)
		}
	})
}

// A message's text fields are written as encoding/json writes them.
func TestAppendJSONStringFieldsMatchEncodingJSON(t *testing.T) {
	for _, s := range jsonStringCases {
		if !utf8.ValidString(s) {
			continue // such headers go to headers_b64, such payloads to data_b64
		}
		m := &Message{Stream: s, Seq: 1, Subject: s, Time: time.Unix(0, 0).UTC(), Header: nats.Header{"H": {s}}, Data: []byte(s)}
		if jsonvalue.Valid(m.Data) {
			continue
		}
		want := `{"stream":` + jsonString(t, s) + `,"seq":1,"subject":` + jsonString(t, s) + `,"time":"1970-01-01T00:00:00Z","headers":{"H":[` +
			jsonString(t, s) + `]},"data":` + jsonString(t, s) + `,"size":` + strconv.Itoa(len(s)) + "}\n"
		if got := string(m.AppendJSON(nil)); got != want {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}
