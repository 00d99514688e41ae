package kv

import (
	"bytes"
	"testing"
	"time"
)

// TestAppendJSONMatchesMarshalJSON holds the hand-written line encoder to
// the documented JSON form.
func TestAppendJSONMatchesMarshalJSON(t *testing.T) {
	when := time.Date(2026, 11, 29, 2, 10, 0, 123456789, time.FixedZone("x", 3600))
	values := [][]byte{
		[]byte(`{"state": "ready",
  "replicas": 5, "tags": ["a", "<b>"]}`),
		[]byte(`5`), []byte(`"quoted"`), []byte(`null`),
		[]byte("ready"), []byte("line\nbreak\ttab <&> \u2028 done"), []byte(""),
		{0xff, 0x00, 0x01}, []byte("ctl\x01char"),
	}
	for _, op := range []Op{OpPut, OpDel, OpPurge} {
		for i, v := range values {
			// A subject delete marker's reason on some deletes.
			reason := ""
			if op != OpPut && i%2 == 0 {
				reason = []string{ReasonMaxAge, ReasonPurge, ReasonRemove}[i%3]
			}
			e := Entry{Bucket: "cfg", Key: "app.config", Revision: 42, Op: op, Reason: reason, Time: when, Value: v}
			want, err := e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(want, '\n')) {
				t.Errorf("%s %q:\n got %s\nwant %s", op, v, got, want)
			}
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := Entry{Bucket: "bench", Key: "key.0000001", Revision: 7, Op: OpPut, Time: time.Now(),
		Value: []byte(`{"id":1,"revision":5,"spec":{"replicas":5,"image":"registry.example/app:5"},"labels":["a","b"]}`)}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf, _ = e.AppendJSON(buf[:0])
	}
}

// Text values keep <, > and & as they are, as every other JSON output does.
func TestTextValuesKeepHTMLCharacters(t *testing.T) {
	e := Entry{Bucket: "cfg", Key: "k", Revision: 1, Op: OpPut, Value: []byte("a <b> & c")}
	line, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"value":"a <b> & c"`)) {
		t.Errorf("line %s", line)
	}
}
