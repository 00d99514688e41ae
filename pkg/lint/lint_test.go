package lint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/plan"
)

func noVars(string) (string, bool) { return "", false }

// load reads plan files: each source is a name and its YAML.
func load(t testing.TB, sources ...plan.Source) *plan.Desired {
	t.Helper()
	d, err := plan.Load(sources, noVars)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func loadFixture(t testing.TB, name string) *plan.Desired {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return load(t, plan.Source{Name: name, Data: data})
}

func yamlSource(src string) plan.Source { return plan.Source{Name: "p.yaml", Data: []byte(src)} }

// show lists findings as "file:line:col rule resource".
func show(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s %s", f.Pos, f.Rule, f.Resource))
	}
	return out
}

func assertFindings(t *testing.T, what string, got []Finding, want []string) {
	t.Helper()
	if g := show(got); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// liveEnv is a 3-server cluster where no DLQ capture exists.
func liveEnv() Env {
	return Env{Live: true, ClusterSize: 3, APILevel: 5, Captured: func(string, string) bool { return false }}
}

// serverWithWorkqueue is a server holding WORK, a workqueue stream that
// the plan files do not declare.
const serverWithWorkqueue = `streams:
  - name: WORK
    subjects: [work.>]
    retention: workqueue
    num_replicas: 3
`

// trips are the fixtures that trip each rule, linted live (offline for an
// offline rule), and every finding they make. Other rules' findings are
// there when the configuration that trips the rule trips them too.
var trips = []struct {
	rule    string
	offline bool
	server  string
	level   int // the server's API level, when not 5
	want    []string
}{
	{rule: "max-deliver-unlimited", want: []string{
		"trip-max-deliver-unlimited.yaml:10:22 max-deliver-unlimited consumer ORDERS/ship",
		"trip-max-deliver-unlimited.yaml:11:9 max-deliver-unlimited consumer ORDERS/bill",
	}},
	{rule: "dead-letters-uncaptured", want: []string{
		"trip-dead-letters-uncaptured.yaml:10:22 dead-letters-uncaptured consumer ORDERS/ship",
	}},
	{rule: "dead-letters-unchecked", offline: true, want: []string{
		"trip-dead-letters-unchecked.yaml:10:22 dead-letters-unchecked consumer ORDERS/ship",
	}},
	{rule: "backoff-overrides-ack-wait", want: []string{
		"trip-backoff-overrides-ack-wait.yaml:9:19 backoff-overrides-ack-wait consumer MAIL/send",
		"trip-backoff-overrides-ack-wait.yaml:11:22 dead-letters-uncaptured consumer MAIL/send",
		"trip-backoff-overrides-ack-wait.yaml:16:22 dead-letters-uncaptured consumer MAIL/bounce",
	}},
	{rule: "backoff-exceeds-max-deliver", want: []string{
		"trip-backoff-exceeds-max-deliver.yaml:9:22 dead-letters-uncaptured consumer MAIL/send",
		"trip-backoff-exceeds-max-deliver.yaml:10:18 backoff-exceeds-max-deliver consumer MAIL/send",
		"trip-backoff-exceeds-max-deliver.yaml:13:22 dead-letters-uncaptured consumer MAIL/bounce",
	}},
	{rule: "stream-unbounded", want: []string{
		"trip-stream-unbounded.yaml:3:5 stream-unbounded stream EVENTS",
		"trip-stream-unbounded.yaml:6:5 stream-unbounded stream CLICKS",
	}},
	{rule: "memory-single-replica", want: []string{
		"trip-memory-single-replica.yaml:5:14 memory-single-replica stream CACHE",
		"trip-memory-single-replica.yaml:7:19 replicas-single-in-cluster stream CACHE",
		"trip-memory-single-replica.yaml:9:5 replicas-single-in-cluster kv sessions",
		"trip-memory-single-replica.yaml:10:14 memory-single-replica kv sessions",
	}},
	{rule: "replicas-even", want: []string{
		"trip-replicas-even.yaml:6:19 replicas-even stream ORDERS",
		"trip-replicas-even.yaml:9:19 replicas-even object_store invoices",
	}},
	{rule: "replicas-single-in-cluster", want: []string{
		"trip-replicas-single-in-cluster.yaml:6:19 replicas-single-in-cluster stream ORDERS",
		"trip-replicas-single-in-cluster.yaml:7:5 replicas-single-in-cluster stream AUDIT",
	}},
	{rule: "replicas-above-cluster", want: []string{
		"trip-replicas-above-cluster.yaml:6:19 replicas-above-cluster stream ORDERS",
		"trip-replicas-above-cluster.yaml:10:19 replicas-above-cluster kv config",
	}},
	{rule: "workqueue-ack-none", server: serverWithWorkqueue, want: []string{
		"trip-workqueue-ack-none.yaml:5:17 workqueue-ack-none consumer WORK/packers",
		"trip-workqueue-ack-none.yaml:8:17 workqueue-ack-none consumer WORK/checkers",
		"trip-workqueue-ack-none.yaml:9:18 dead-letters-uncaptured consumer WORK/checkers",
	}},
	{rule: "interest-ack-none", want: []string{
		"trip-interest-ack-none.yaml:11:21 interest-ack-none consumer EVENTS/notify",
	}},
	{rule: "interest-no-consumers", want: []string{
		"trip-interest-no-consumers.yaml:5:16 interest-no-consumers stream EVENTS",
		"trip-interest-no-consumers.yaml:17:18 dead-letters-uncaptured consumer AUDIT/archive",
	}},
	{rule: "kv-history-one", want: []string{
		"trip-kv-history-one.yaml:5:14 kv-history-one kv config",
		"trip-kv-history-one.yaml:6:5 kv-history-one kv flags",
	}},
	{rule: "consumer-mode-settings", want: []string{
		"trip-consumer-mode-settings.yaml:11:22 consumer-mode-settings consumer ORDERS/pushed",
		"trip-consumer-mode-settings.yaml:16:23 consumer-mode-settings consumer ORDERS/pulled",
		"trip-consumer-mode-settings.yaml:17:25 consumer-mode-settings consumer ORDERS/pulled",
		"trip-consumer-mode-settings.yaml:18:25 consumer-mode-settings consumer ORDERS/pulled",
	}},
	{rule: "workqueue-mirrored", want: []string{
		"trip-workqueue-mirrored.yaml:12:7 workqueue-mirrored stream JOBS_COPY",
		"trip-workqueue-mirrored.yaml:18:9 workqueue-mirrored stream ALL",
	}},
	{rule: "durable-inactive-threshold", want: []string{
		"trip-durable-inactive-threshold.yaml:10:29 durable-inactive-threshold consumer ORDERS/report",
	}},
	{rule: "max-age-before-dead-letter", want: []string{
		"trip-max-age-before-dead-letter.yaml:11:22 dead-letters-uncaptured consumer ORDERS/ship",
		"trip-max-age-before-dead-letter.yaml:11:22 max-age-before-dead-letter consumer ORDERS/ship",
		"trip-max-age-before-dead-letter.yaml:15:22 dead-letters-uncaptured consumer ORDERS/bill",
		"trip-max-age-before-dead-letter.yaml:15:22 max-age-before-dead-letter consumer ORDERS/bill",
		"trip-max-age-before-dead-letter.yaml:19:22 dead-letters-uncaptured consumer ORDERS/notify",
	}},
	{rule: "priority-timeout-unused", want: []string{
		"trip-priority-timeout-unused.yaml:11:27 priority-timeout-unused consumer JOBS/overflow",
		"trip-priority-timeout-unused.yaml:12:22 dead-letters-uncaptured consumer JOBS/overflow",
		"trip-priority-timeout-unused.yaml:17:22 dead-letters-uncaptured consumer JOBS/pinned",
	}},
	{rule: "persist-async", want: []string{
		"trip-persist-async.yaml:3:5 replicas-single-in-cluster stream METRICS",
		"trip-persist-async.yaml:6:19 persist-async stream METRICS",
	}},
	{rule: "api-level-above-server", level: 1, want: []string{
		"trip-api-level-above-server.yaml:8:20 api-level-above-server stream FAST",
		"trip-api-level-above-server.yaml:12:21 api-level-above-server consumer FAST/feed",
	}},
}

func TestTripFixtures(t *testing.T) {
	for _, tc := range trips {
		t.Run(tc.rule, func(t *testing.T) {
			env := liveEnv()
			if tc.offline {
				env = Env{}
			}
			if tc.server != "" {
				env.Server = load(t, plan.Source{Name: "server", Data: []byte(tc.server)})
			}
			if tc.level != 0 {
				env.APILevel = tc.level
			}
			res := Lint(loadFixture(t, "trip-"+tc.rule+".yaml"), env)
			assertFindings(t, "findings", res.Findings, tc.want)
			if len(res.Suppressed) > 0 {
				t.Errorf("suppressed: %v", show(res.Suppressed))
			}
			tripped := false
			for _, f := range res.Findings {
				if f.Rule == tc.rule {
					tripped = true
					if r, _ := RuleByID(f.Rule); f.Severity != r.Severity || !strings.HasPrefix(f.Message, `stream "`) && !strings.HasPrefix(f.Message, "kv bucket") && !strings.HasPrefix(f.Message, "object store") {
						t.Errorf("finding %+v: wrong severity or message", f)
					}
				}
			}
			if !tripped {
				t.Errorf("the fixture does not trip %s", tc.rule)
			}
		})
	}
}

// Every rule has a trip fixture and a table entry (the ignore rules are
// tested with their own YAML below, plan-file-invalid by
// TestLoadFailedIsFindings), and every fixture is a rule's.
func TestEveryRuleHasATripFixture(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range trips {
		if _, ok := RuleByID(tc.rule); !ok {
			t.Errorf("trip fixture of unknown rule %s", tc.rule)
		}
		tested[tc.rule] = true
	}
	for _, r := range Rules() {
		if strings.HasPrefix(r.ID, "ignore-") || r.ID == "plan-file-invalid" {
			continue
		}
		if !tested[r.ID] {
			t.Errorf("rule %s has no entry in trips", r.ID)
		}
		if _, err := os.Stat(filepath.Join("testdata", "trip-"+r.ID+".yaml")); err != nil {
			t.Errorf("rule %s has no trip fixture: %v", r.ID, err)
		}
	}
	files, _ := filepath.Glob("testdata/trip-*.yaml")
	for _, f := range files {
		if id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "trip-"), ".yaml"); !tested[id] {
			t.Errorf("%s trips no rule of the table", f)
		}
	}
}

// pass.yaml is a well-configured plan: nothing to find offline or live
// (where a DLQ capture exists), and its ignores are used offline.
func TestPassFixture(t *testing.T) {
	d := loadFixture(t, "pass.yaml")
	offline := Lint(d, Env{})
	assertFindings(t, "offline findings", offline.Findings, nil)
	assertFindings(t, "offline suppressed", offline.Suppressed, []string{
		"pass.yaml:19:22 dead-letters-unchecked consumer ORDERS/ship",
		"pass.yaml:36:22 dead-letters-unchecked consumer EVENTS/notify",
	})
	if offline.Resources != 8 {
		t.Errorf("%d resources checked, want 8", offline.Resources)
	}
	if got, want := strings.Join(offline.Skipped, " "), "dead-letters-uncaptured replicas-single-in-cluster replicas-above-cluster api-level-above-server"; got != want {
		t.Errorf("skipped offline: %s, want %s", got, want)
	}
	env := liveEnv()
	env.Captured = func(stream, consumer string) bool { return true }
	live := Lint(d, env)
	assertFindings(t, "live findings", live.Findings, nil)
	assertFindings(t, "live suppressed", live.Suppressed, nil)
	if len(live.Skipped) != 0 {
		t.Errorf("skipped live: %v", live.Skipped)
	}
}

// An ignore silences its rule on its resource, and nothing else.
func TestIgnoreSilencesItsRuleOnItsResource(t *testing.T) {
	d := load(t, yamlSource(`streams:
  # jetctl:ignore stream-unbounded a nightly job purges it
  - name: A
    subjects: [a.>]
    num_replicas: 2
  - name: B
    subjects: [b.>]
`))
	res := Lint(d, Env{})
	assertFindings(t, "findings", res.Findings, []string{
		"p.yaml:5:19 replicas-even stream A",
		"p.yaml:6:5 stream-unbounded stream B",
	})
	assertFindings(t, "suppressed", res.Suppressed, []string{"p.yaml:3:5 stream-unbounded stream A"})
	if s := res.Suppressed[0]; s.Reason != "a nightly job purges it" || s.IgnorePos == nil || s.IgnorePos.String() != "p.yaml:2:3" {
		t.Errorf("suppressed: reason %q at %v", s.Reason, s.IgnorePos)
	}
}

// An ignore naming no rule, or giving no reason, or on no resource,
// silences nothing and is an error.
func TestInvalidIgnores(t *testing.T) {
	d := load(t, yamlSource(`streams:
  # jetctl:ignore no-such-rule it is fine
  # jetctl:ignore stream-unbounded
  - name: A
    subjects: [a.>]
# jetctl:ignore replicas-even on no resource
`))
	res := Lint(d, Env{})
	assertFindings(t, "findings", res.Findings, []string{
		"p.yaml:2:3 ignore-invalid stream A",
		"p.yaml:3:3 ignore-invalid stream A",
		"p.yaml:4:5 stream-unbounded stream A",
		"p.yaml:6:1 ignore-invalid ",
	})
	for i, want := range []string{`names no rule "no-such-rule"`, "stream-unbounded gives no reason", "", "replicas-even is on no resource"} {
		if f := res.Findings[i]; !strings.Contains(f.Message, want) {
			t.Errorf("finding %d: %q, want it to say %q", i, f.Message, want)
		}
	}
	if res.Findings[0].Severity != Error {
		t.Errorf("ignore-invalid is a %s", res.Findings[0].Severity)
	}
}

// An ignore whose rule finds nothing on its resource is unused; one of a
// rule that did not run (a live rule offline, an offline rule live) is
// not, as the same files are linted both ways.
func TestUnusedIgnores(t *testing.T) {
	d := load(t, yamlSource(`streams:
  # jetctl:ignore replicas-even fixed since
  # jetctl:ignore replicas-single-in-cluster a cache, rebuilt on restart
  - name: A
    subjects: [a.>]
    max_age: 1d
    consumers:
      # jetctl:ignore dead-letters-unchecked captured by jetctl dlq setup --stream A
      - name: c
        max_deliver: 5
`))
	offline := Lint(d, Env{})
	assertFindings(t, "offline findings", offline.Findings, []string{"p.yaml:2:3 ignore-unused stream A"})
	if offline.Findings[0].Severity != Warning {
		t.Errorf("ignore-unused is a %s", offline.Findings[0].Severity)
	}
	assertFindings(t, "offline suppressed", offline.Suppressed, []string{"p.yaml:10:22 dead-letters-unchecked consumer A/c"})

	env := liveEnv()
	env.Captured = func(string, string) bool { return true }
	live := Lint(d, env)
	assertFindings(t, "live findings", live.Findings, []string{"p.yaml:2:3 ignore-unused stream A"})
	assertFindings(t, "live suppressed", live.Suppressed, []string{"p.yaml:4:5 replicas-single-in-cluster stream A"})

	// On a single server the rule runs, and finds nothing to silence.
	env.ClusterSize = 1
	assertFindings(t, "single server findings", Lint(d, env).Findings, []string{
		"p.yaml:2:3 ignore-unused stream A",
		"p.yaml:3:3 ignore-unused stream A",
	})
}

// Env.Only limits the findings, and the ignores checked, to some
// resources.
func TestOnlyRestrictsFindings(t *testing.T) {
	d := load(t, yamlSource(`streams:
  # jetctl:ignore no-such-rule elsewhere
  - name: A
    subjects: [a.>]
  - name: B
    subjects: [b.>]
    num_replicas: 2
kv:
  - bucket: config
# jetctl:ignore replicas-even on no resource
`))
	res := Lint(d, Env{Only: func(r *plan.Resource) bool { return r.Name == "B" }})
	assertFindings(t, "findings", res.Findings, []string{
		"p.yaml:5:5 stream-unbounded stream B",
		"p.yaml:7:19 replicas-even stream B",
	})
	if res.Resources != 1 {
		t.Errorf("%d resources checked, want 1", res.Resources)
	}
	if all := Lint(d, Env{}); len(all.Findings) != 6 {
		t.Errorf("without Only: %v", show(all.Findings))
	}
}

// With -f and --live the server's consumers count for a declared interest
// stream.
func TestServerConsumersOfAnInterestStream(t *testing.T) {
	d := loadFixture(t, "trip-interest-no-consumers.yaml")
	env := liveEnv()
	env.Server = load(t, plan.Source{Name: "server", Data: []byte("consumers:\n  - name: audit\n    stream: EVENTS\n")})
	for _, f := range Lint(d, env).Findings {
		if f.Rule == "interest-no-consumers" {
			t.Errorf("the server's consumer of EVENTS does not count: %s", f)
		}
	}
}

// A mirror or a source of an interest stream reads it through a consumer
// of the server's own (left out of the server's resources), which counts
// as its interest: declared in the files or only on the server.
func TestCopiesOfAnInterestStream(t *testing.T) {
	d := loadFixture(t, "trip-interest-no-consumers.yaml")
	copyOf := "streams:\n  - name: EVENTS_COPY\n    mirror:\n      name: EVENTS\n"
	for what, env := range map[string]Env{"declared": {}, "on the server": liveEnv()} {
		d := d
		if what == "declared" {
			d = load(t, plan.Source{Name: "a.yaml", Data: mustRead(t, "testdata/trip-interest-no-consumers.yaml")}, plan.Source{Name: "b.yaml", Data: []byte(copyOf)})
		} else {
			env.Server = load(t, plan.Source{Name: "server", Data: []byte(strings.Replace(copyOf, "mirror:\n      name: EVENTS", "sources:\n      - name: EVENTS", 1))})
		}
		for _, f := range Lint(d, env).Findings {
			if f.Rule == "interest-no-consumers" {
				t.Errorf("%s: the copy's consumer of EVENTS does not count: %s", what, f)
			}
		}
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The redelivery window is max_deliver waits of ack_wait (30s when unset),
// or of backoff with its last value repeated; the finding says how long.
func TestMaxAgeBeforeDeadLetterArithmetic(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want time.Duration
	}{
		{"max_deliver: 3", 90 * time.Second},
		{"max_deliver: 3\n        ack_wait: 10s", 30 * time.Second},
		{"max_deliver: 5\n        backoff: [1s, 2s]", 9 * time.Second},
		{"max_deliver: 2\n        backoff: [1s, 2s]", 3 * time.Second},
	} {
		d := load(t, yamlSource("streams:\n  - name: S\n    subjects: [s.>]\n    consumers:\n      - name: c\n        "+tc.cfg+"\n"))
		var c *plan.Resource
		for _, r := range d.Resources {
			if r.Kind == plan.KindConsumer {
				c = r
			}
		}
		if got := redeliveryWindow(c.ConsumerConfig); got != tc.want {
			t.Errorf("%q: window %s, want %s", tc.cfg, got, tc.want)
		}
	}
	res := Lint(load(t, yamlSource("streams:\n  - name: S\n    subjects: [s.>]\n    max_age: 1m\n    consumers:\n      - name: c\n        max_deliver: 4\n        backoff: [1s, 5s, 30s]\n")), Env{})
	for _, f := range res.Findings {
		if f.Rule == "max-age-before-dead-letter" {
			if want := `stream "S": consumer "c": max_deliver 4 with backoff 1s, 5s, 30s: a failing message is retried for 1m6s, but stream "S" removes it after max_age 1m, before it becomes a dead letter`; f.Message != want {
				t.Errorf("message %q\nwant %q", f.Message, want)
			}
			return
		}
	}
	t.Errorf("no finding: %v", show(res.Findings))
}

// Plan files that do not load are findings: each problem at its place,
// an error of plan-file-invalid, or of the rule that names the same
// mistake (a declared workqueue stream's consumer that does not
// acknowledge is workqueue-ack-none, which the loader refuses).
func TestLoadFailedIsFindings(t *testing.T) {
	src := `streams:
  - name: WORK
    subjects: [work.>]
    retention: workqueue
    max_agee: 7d
    consumers:
      - name: packers
        ack_policy: none
`
	_, err := plan.Load([]plan.Source{yamlSource(src)}, noVars)
	var verr *plan.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("the fixture loads: %v", err)
	}
	res := LoadFailed(verr.Problems)
	assertFindings(t, "findings", res.Findings, []string{
		"p.yaml:5:5 plan-file-invalid ",
		"p.yaml:8:21 workqueue-ack-none ",
	})
	for _, f := range res.Findings {
		if f.Severity != Error || f.Message == "" {
			t.Errorf("finding %+v: want an error with the problem's message", f)
		}
	}
	if !strings.Contains(res.Findings[0].Message, `unknown field "max_agee" (did you mean "max_age"?)`) {
		t.Errorf("message %q", res.Findings[0].Message)
	}
}
