package plan

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func noVars(string) (string, bool) { return "", false }

func TestParseDuration(t *testing.T) {
	cases := map[string]time.Duration{
		"30s": 30 * time.Second, "2m": 2 * time.Minute, "7d": 7 * 24 * time.Hour,
		"1h30m": 90 * time.Minute, "1d12h": 36 * time.Hour, "500ms": 500 * time.Millisecond, "0": 0,
	}
	for in, want := range cases {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != "0" && in != "1d12h" {
			back, _ := ParseDuration(FormatDuration(got))
			if back != got {
				t.Errorf("FormatDuration(%v) = %q does not parse back", got, FormatDuration(got))
			}
		}
	}
	for _, bad := range []string{"", "7x", "-1s", "d", "1.5.5d", "30"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 90 * time.Minute: "1h30m", 2 * time.Minute: "2m", 30 * time.Second: "30s", 36 * time.Hour: "1d12h"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := map[string]int64{"1GiB": 1 << 30, "512MB": 512_000_000, "1048576": 1 << 20, "-1": -1, "64 KiB": 64 << 10}
	for in, want := range cases {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"-2", "12XB", "lots", "-1GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded", bad)
		}
	}
	if got := FormatSize(1 << 30); got != "1GiB" {
		t.Errorf("FormatSize(1GiB) = %q", got)
	}
	if got := FormatSize(1000); got != "1000" {
		t.Errorf("FormatSize(1000) = %q", got)
	}
}

func TestSubjects(t *testing.T) {
	collide := [][2]string{{"orders.>", "orders.paid"}, {"a.*", "a.b"}, {"a.*.c", "a.b.*"}, {">", "x"}}
	for _, c := range collide {
		if !subjectsCollide(c[0], c[1]) || !subjectsCollide(c[1], c[0]) {
			t.Errorf("%s and %s should collide", c[0], c[1])
		}
	}
	apart := [][2]string{{"orders.>", "order.x"}, {"a.*", "a.b.c"}, {"a.b", "a.c"}, {"a.>", "a"}}
	for _, c := range apart {
		if subjectsCollide(c[0], c[1]) {
			t.Errorf("%s and %s should not collide", c[0], c[1])
		}
	}
	if !subjectSubset("orders.paid", "orders.>") || !subjectSubset("orders.*", "orders.>") || subjectSubset("orders.>", "orders.*") || subjectSubset("invoices.x", "orders.>") {
		t.Error("subjectSubset is wrong")
	}
	for _, bad := range []string{"", "a..b", "a.>.b", "a b", "a.b*"} {
		if validSubject(bad) {
			t.Errorf("validSubject(%q) = true", bad)
		}
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    max_agee: 7d
    consumers:
      - name: billing
        filter_subject: invoices.>
  - name: MORE
    subjects: [orders.paid]
    retention: forever
`
	_, err := Load([]Source{{Name: "p.yaml", Data: []byte(src)}}, noVars)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Load: %v, want a ValidationError", err)
	}
	var got []string
	for _, p := range verr.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`p.yaml:4:5: stream "ORDERS": unknown field "max_agee" (did you mean "max_age"?)`,
		`p.yaml:7:25: stream "ORDERS": consumer "billing": filter "invoices.>" is outside the stream's subjects (orders.>)`,
		`p.yaml:9:16: stream "MORE": subject "orders.paid" overlaps "orders.>" of stream "ORDERS" (p.yaml:2:5)`,
		`p.yaml:10:16: stream "MORE": retention: invalid value "forever" (use one of limits, interest, workqueue)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadTypedConfig(t *testing.T) {
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    max_age: 7d
    max_bytes: 1GiB
    max_msg_size: 64KiB
    retention: interest
    placement: {cluster: east, tags: [ssd]}
    consumers:
      - durable_name: billing
        backoff: [1s, 1m]
        max_deliver: 3
        opt_start_time: 2024-05-01T00:00:00Z
        deliver_policy: by_start_time
consumers:
  - name: audit
    stream: ORDERS
kv:
  - bucket: config
    history: 10
    ttl: 1d
`
	d, err := Load([]Source{{Name: "p.yaml", Data: []byte(src)}}, noVars)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Resources) != 4 {
		t.Fatalf("got %d resources", len(d.Resources))
	}
	s := d.Resources[0].StreamConfig
	if s.MaxAge != 7*24*time.Hour || s.MaxBytes != 1<<30 || s.MaxMsgSize != 64<<10 || s.Placement.Cluster != "east" {
		t.Errorf("stream config: %+v", s)
	}
	c := d.find(KindConsumer, "ORDERS", "billing").ConsumerConfig
	if c.Name != "billing" || c.Durable != "billing" || len(c.BackOff) != 2 || c.OptStartTime == nil {
		t.Errorf("consumer config: %+v", c)
	}
	if d.find(KindConsumer, "ORDERS", "audit") == nil {
		t.Error("top-level consumer missing")
	}
	if kv := d.find(KindKV, "", "config").KeyValueConfig; kv.History != 10 || kv.TTL != 24*time.Hour {
		t.Errorf("kv config: %+v", kv)
	}
}

func TestSuggest(t *testing.T) {
	names := fieldNames(fieldsOf(streamConfigType))
	for in, want := range map[string]string{"max_agee": "max_age", "subject": "subjects", "maxage": "max_age", "replicas": "num_replicas"} {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
