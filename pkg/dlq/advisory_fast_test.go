package dlq

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parseAdvisoryFast gives what encoding/json gives for every document it
// takes, and hands over the rest: generated from the server's two kinds of
// advisory by reordering, spacing, truncating and changing each value.
func TestParseAdvisoryFastMatchesEncodingJSON(t *testing.T) {
	maxDeliver := [][2]string{
		{"type", `"io.nats.jetstream.advisory.v1.max_deliver"`}, {"id", `"eWq0Iyk6xT0ObLrEgPT1Xh"`},
		{"timestamp", `"2026-11-30T20:04:01.123456789Z"`}, {"stream", `"JOBS"`}, {"consumer", `"worker"`},
		{"stream_seq", `42`}, {"deliveries", `5`}, {"domain", `"hub"`},
	}
	terminated := [][2]string{
		{"type", `"io.nats.jetstream.advisory.v1.terminated"`}, {"id", `"x"`},
		{"timestamp", `"2026-01-02T03:04:05+01:00"`}, {"stream", `"ORDERS"`}, {"consumer", `"billing"`},
		{"consumer_seq", `7`}, {"stream_seq", `18446744073709551615`}, {"deliveries", `0`}, {"reason", `"bad payload, see log"`},
	}
	object := func(fields [][2]string, sep, colon string) string {
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = `"` + f[0] + `"` + colon + f[1]
		}
		return "{" + strings.Join(parts, sep) + "}"
	}
	values := []string{
		`""`, `"plain"`, `"esc\"aped"`, `"\u00e9"`, `"é"`, "\"tab\there\"", `"a\/b"`, `"del` + "\x7f" + `"`,
		`0`, `00`, `01`, `-1`, `1.0`, `1e3`, `18446744073709551616`, `true`, `null`, `{}`, `[]`, `{"a":[1,2]}`,
		`"2026-11-30T20:04:01Z"`, `"2026-11-30 20:04:01Z"`, `"null"`, `12 `, `"x" `,
	}
	var docs []string
	for _, base := range [][][2]string{maxDeliver, terminated} {
		for _, layout := range [][2]string{{",", ":"}, {" , ", " : "}, {",\n\t", ":\r\n "}} {
			docs = append(docs, object(base, layout[0], layout[1]), " \n"+object(base, layout[0], layout[1])+"\t ")
		}
		doc := object(base, ",", ":")
		for i := range len(doc) {
			docs = append(docs, doc[:i], doc[:i]+"x"+doc[i:])
		}
		docs = append(docs, doc+"x", doc+"{}", doc+",", "["+doc+"]")
		// Reordered, and each field given every value in turn.
		rev := append([][2]string(nil), base...)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		docs = append(docs, object(rev, ",", ":"))
		for f := range base {
			for _, v := range values {
				changed := append([][2]string(nil), base...)
				changed[f][1] = v
				docs = append(docs, object(changed, ",", ":"))
			}
			// Other spellings of the key, a duplicate, an unknown key.
			for _, key := range []string{strings.ToUpper(base[f][0]), strings.ToUpper(base[f][0][:1]) + base[f][0][1:], base[f][0] + "x", `\u0073` + base[f][0][1:]} {
				changed := append([][2]string(nil), base...)
				changed[f][0] = key
				docs = append(docs, object(changed, ",", ":"))
			}
			dup := append(append([][2]string(nil), base...), [2]string{base[f][0], values[f%len(values)]})
			docs = append(docs, object(dup, ",", ":"), object(append(append([][2]string(nil), base...), [2]string{"client", `{"acc":"A"}`}), ",", ":"))
		}
	}
	docs = append(docs, `{}`, ` { } `, `{`, `}`, `[]`, `null`, ``, `"x"`, `{,}`, `{"stream":"A",}`, `{"stream" "A"}`)

	fast := 0
	for _, doc := range docs {
		got, ok := parseAdvisoryFast([]byte(doc))
		var want Advisory
		err := json.Unmarshal([]byte(doc), &want)
		if ok {
			fast++
			if err != nil {
				t.Errorf("%q: fast path took it, encoding/json: %v", doc, err)
				continue
			}
			if !sameAdvisory(got, want) {
				t.Errorf("%q:\n fast %+v\n json %+v", doc, got, want)
			}
		}
		// ParseAdvisory, whichever path, is what it was with encoding/json
		// alone.
		a, perr := ParseAdvisory([]byte(doc))
		ra, rerr := parseAdvisoryReference([]byte(doc))
		if (perr == nil) != (rerr == nil) || (perr == nil && !sameAdvisory(a, ra)) {
			t.Errorf("%q: ParseAdvisory %+v, %v; with encoding/json alone %+v, %v", doc, a, perr, ra, rerr)
		}
	}
	if fast < 20 {
		t.Errorf("the fast path took only %d of %d documents", fast, len(docs))
	}
	t.Logf("%d documents, %d on the fast path", len(docs), fast)
}

// parseAdvisoryReference is ParseAdvisory with encoding/json alone.
func parseAdvisoryReference(data []byte) (Advisory, error) {
	var a Advisory
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("not an advisory: %w", err)
	}
	switch a.Type {
	case TypeMaxDeliver, TypeTerminated:
	default:
		return a, fmt.Errorf("unexpected advisory type %q", a.Type)
	}
	if a.Stream == "" || a.StreamSeq == 0 {
		return a, fmt.Errorf("advisory without stream or stream_seq")
	}
	return a, nil
}

func sameAdvisory(a, b Advisory) bool {
	if !a.Time.Equal(b.Time) || a.Time.Location().String() != b.Time.Location().String() {
		return false
	}
	_, ao := a.Time.Zone()
	_, bo := b.Time.Zone()
	a.Time, b.Time = time.Time{}, time.Time{}
	return ao == bo && reflect.DeepEqual(a, b)
}

// A server's advisory costs the fast path its strings, no reflection.
func TestParseAdvisoryFastAllocations(t *testing.T) {
	doc := []byte(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"eWq0Iyk6xT0ObLrEgPT1Xh","timestamp":"2026-11-30T20:04:01.123456789Z","stream":"JOBS","consumer":"worker","stream_seq":42,"deliveries":5,"domain":"hub"}`)
	if _, ok := parseAdvisoryFast(doc); !ok {
		t.Fatal("a server's advisory is not on the fast path")
	}
	fast := testing.AllocsPerRun(100, func() { parseAdvisoryFast(doc) })
	ref := testing.AllocsPerRun(100, func() { _, _ = parseAdvisoryReference(doc) })
	t.Logf("allocations: fast %.0f, encoding/json %.0f", fast, ref)
	if fast > 6 {
		t.Errorf("fast path: %.0f allocations (encoding/json %.0f)", fast, ref)
	}
}
