package plan

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/plan/plangen"
	"github.com/jetctl/jetctl/pkg/suggest"
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
	got := loadProblems(t, []Source{{Name: "p.yaml", Data: []byte(src)}})
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

// loadProblems loads sources, which must have problems, and returns them
// as Load reports them.
func loadProblems(t *testing.T, sources []Source) []string {
	t.Helper()
	_, err := Load(sources, noVars)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Load: %v, want a ValidationError", err)
	}
	var out []string
	for _, p := range verr.Problems {
		out = append(out, p.String())
	}
	return out
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
		if got := suggest.Closest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoadFilesInParallel loads files with problems in several of them,
// on one processor and on several: the files are read in parallel, but
// the resources and problems must come out the same, in file order.
func TestLoadFilesInParallel(t *testing.T) {
	files := plangen.Generate(plangen.Options{Files: 12, Streams: 5, KV: 1, Seed: 3})
	var sources []Source
	for i, f := range files {
		data := string(f.Data)
		switch i {
		case 2: // an unknown field and an undefined variable
			data = strings.Replace(data, "    retention:", "    max_agee: 1d\n    description: ${UNDEFINED}\n    retention:", 1)
		case 5: // invalid YAML
			data += "streams: [\n"
		case 7: // the streams of file 0 again, and one overlapping file 0's first
			first, _, _ := strings.Cut(string(files[0].Data), "\nkv:")
			_, streams, _ := strings.Cut(first, "streams:\n")
			data = strings.Replace(data, "streams:\n", "streams:\n"+streams+"  - name: EXTRA\n    subjects: [orders.0.paid]\n", 1)
		case 9:
			data = strings.Replace(data, "kv:", "kv:\n  - bucket: bad.name\n", 1)
		}
		sources = append(sources, Source{Name: f.Name, Data: []byte(data)})
	}
	// The same file twice: its resources are declared twice.
	sources = append(sources, sources[1])
	load := func(procs int) []string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return loadProblems(t, sources)
	}
	want := load(1)
	if len(want) < 20 {
		t.Fatalf("only %d problems:\n%s", len(want), strings.Join(want, "\n"))
	}
	for _, procs := range []int{2, 4, 16} {
		if got := load(procs); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("on %d processors:\n%s\nwant (on 1):\n%s", procs, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	var seen []string
	for _, p := range want {
		file, _, _ := strings.Cut(p, ":")
		if len(seen) == 0 || seen[len(seen)-1] != file {
			seen = append(seen, file)
		}
	}
	if !slices.IsSorted(seen) || len(seen) != 5 {
		t.Errorf("problems by file: %v", seen)
	}
}
