package plan

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func noVars(string) (string, bool) { return "", false }

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
