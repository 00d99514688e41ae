package harness

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// health-agree [FLAG...] -- STREAM/CONSUMER... asks every command that
// tells a consumer's health (consumer ls, status, consumer watch, consumer
// wait, consumer explain and explain --exit-code, and check, whose
// --lag-warning is --behind), with the same FLAGs (thresholds), and fails
// unless all of them give each consumer the same word, the same severity
// and the same findings (each at the same severity), explain --exit-code
// exits 8 exactly for a severity at warning or above, and check gives
// each the status its severity and its checks make. It prints one line
// per consumer, "STREAM CONSUMER WORD FINDING,FINDING", for the script to
// compare with what the
// documented rules give.
func cmdHealthAgree(ts *testscript.TestScript, neg bool, args []string) {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
		}
	}
	if neg || sep < 0 || sep == len(args)-1 {
		ts.Fatalf("usage: health-agree [FLAG...] -- STREAM/CONSUMER...")
	}
	flags, targets := args[:sep], args[sep+1:]
	type verdict struct{ word, severity, ids, severities string }
	type row struct {
		Stream   string `json:"stream"`
		Consumer string `json:"consumer"`
		Health   string `json:"health"`
		Severity string `json:"severity"`
		Findings []struct {
			ID       string `json:"id"`
			Health   string `json:"health"`
			Severity string `json:"severity"`
		} `json:"findings"`
	}
	of := func(r row) verdict {
		ids := make([]string, len(r.Findings))
		severities := make([]string, len(r.Findings))
		for i, f := range r.Findings {
			ids[i], severities[i] = f.ID, f.Severity
		}
		return verdict{r.Health, r.Severity, strings.Join(ids, ","), strings.Join(severities, ",")}
	}
	run := func(args ...string) string {
		if err := ts.Exec("jetctl", append(args, flags...)...); err != nil {
			ts.Fatalf("jetctl %s: %v\n%s", strings.Join(args, " "), err, ts.ReadFile("stderr"))
		}
		return ts.ReadFile("stdout")
	}
	var streams []string
	seen := map[string]bool{}
	for _, t := range targets {
		stream, _, ok := strings.Cut(t, "/")
		if !ok {
			ts.Fatalf("health-agree: %q is not STREAM/CONSUMER", t)
		}
		if !seen[stream] {
			seen[stream] = true
			streams = append(streams, stream)
		}
	}
	// answers[command][stream/consumer]
	answers := map[string]map[string]verdict{}
	collect := func(command string, rows []row) {
		answers[command] = map[string]verdict{}
		for _, r := range rows {
			answers[command][r.Stream+"/"+r.Consumer] = of(r)
		}
	}

	var rows []row
	ts.Check(json.Unmarshal([]byte(run(append([]string{"consumer", "ls", "-o", "json"}, streams...)...)), &rows))
	collect("consumer ls", rows)

	var status struct {
		Consumers []row `json:"consumers"`
	}
	ts.Check(json.Unmarshal([]byte(run("status", "-o", "json")), &status))
	collect("status", status.Consumers)

	rows = nil
	for _, line := range strings.Split(strings.TrimSpace(run(append([]string{"consumer", "watch", "--count", "1", "-o", "jsonl"}, streams...)...)), "\n") {
		var r row
		ts.Check(json.Unmarshal([]byte(line), &r))
		rows = append(rows, r)
	}
	collect("consumer watch", rows)

	rows = nil
	for _, t := range targets {
		stream, consumer, _ := strings.Cut(t, "/")
		var res struct {
			State row `json:"state"`
		}
		ts.Check(json.Unmarshal([]byte(run("consumer", "wait", stream, consumer, "--ack-floor", "0", "-o", "json")), &res))
		rows = append(rows, res.State)
	}
	collect("consumer wait", rows)

	rows = nil
	answers["explain --exit-code"] = map[string]verdict{}
	for _, t := range targets {
		stream, consumer, _ := strings.Cut(t, "/")
		r := row{Stream: stream, Consumer: consumer, Health: "ok", Severity: "info"}
		ts.Check(json.Unmarshal([]byte(run("consumer", "explain", stream, consumer, "-o", "json")), &r.Findings))
		if len(r.Findings) > 0 {
			r.Severity = r.Findings[0].Severity
			if r.Findings[0].Health != "ok" {
				r.Health = r.Findings[0].Health
			}
		}
		rows = append(rows, r)
		// --exit-code: 8 exactly for a word at warning or above.
		err := ts.Exec("jetctl", append([]string{"consumer", "explain", stream, consumer, "--exit-code"}, flags...)...)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			ts.Fatalf("jetctl consumer explain %s %s --exit-code: %v", stream, consumer, err)
		}
		answers["explain --exit-code"][t] = verdict{word: map[bool]string{true: "unhealthy (exit 8)", false: "healthy (exit 0)"}[code == 8]}
	}
	collect("consumer explain", rows)

	// check -o json exits with the nagios code of the worst item.
	checkArgs := []string{"check", "-o", "json"}
	for _, stream := range streams {
		checkArgs = append(checkArgs, "--stream", stream)
	}
	for _, f := range flags {
		if name, value, ok := strings.Cut(f, "="); ok && name == "--behind" {
			f = "--lag-warning=" + value
		} else if f == "--behind" {
			f = "--lag-warning"
		}
		checkArgs = append(checkArgs, f)
	}
	if err := ts.Exec("jetctl", checkArgs...); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 3 {
			ts.Fatalf("jetctl %s: %v\n%s", strings.Join(checkArgs, " "), err, ts.ReadFile("stderr"))
		}
	}
	var report struct {
		Consumers []struct {
			row
			Status   string   `json:"status"`
			Skipped  bool     `json:"skipped"`
			Problems []string `json:"problems"`
			Checks   []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"checks"`
		} `json:"consumers"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &report))
	rows = nil
	rank := map[string]int{"ok": 0, "warning": 1, "unknown": 2, "critical": 3}
	var checkStatus []string
	for _, c := range report.Consumers {
		rows = append(rows, c.row)
		if c.Skipped {
			continue
		}
		// The worst of the severity, the checks, and unknown for what
		// could not be read.
		want := map[string]string{"critical": "critical", "warning": "warning"}[c.Severity]
		if want == "" {
			want = "ok"
		}
		for _, ch := range c.Checks {
			if ch.Name == "health" && ch.Status != want {
				checkStatus = append(checkStatus, fmt.Sprintf("%s/%s: check's health check is %s, its severity %s", c.Stream, c.Consumer, ch.Status, c.Severity))
			}
			if rank[ch.Status] > rank[want] {
				want = ch.Status
			}
		}
		if len(c.Problems) > 0 && rank["unknown"] > rank[want] {
			want = "unknown"
		}
		if c.Status != want {
			checkStatus = append(checkStatus, fmt.Sprintf("%s/%s: check says %s, its severity (%s) and checks make %s", c.Stream, c.Consumer, c.Status, c.Severity, want))
		}
	}
	collect("check", rows)

	var out []string
	var disagree []string
	for _, t := range targets {
		want, ok := answers["consumer ls"][t]
		if !ok {
			ts.Fatalf("health-agree: consumer ls does not list %s", t)
		}
		for _, command := range []string{"status", "consumer watch", "consumer wait", "consumer explain", "check"} {
			if got := answers[command][t]; got != want {
				disagree = append(disagree, fmt.Sprintf("%s: consumer ls says %s (%s) [%s] at [%s], %s says %s (%s) [%s] at [%s]", t,
					want.word, want.severity, want.ids, want.severities, command, got.word, got.severity, got.ids, got.severities))
			}
		}
		// Every word but ok and idle is at warning or above; the
		// severity decides.
		wordUnhealthy := map[string]bool{"no-leader": true, "stalled": true, "failing": true, "poison": true,
			"paused": true, "behind": true, "dead-letters": true, "degraded": true, "misconfigured": true}[want.word]
		unhealthy := want.severity == "warning" || want.severity == "critical"
		if unhealthy != wordUnhealthy {
			disagree = append(disagree, fmt.Sprintf("%s: consumer ls says %s at %s", t, want.word, want.severity))
		}
		if got := answers["explain --exit-code"][t].word; got != map[bool]string{true: "unhealthy (exit 8)", false: "healthy (exit 0)"}[unhealthy] {
			disagree = append(disagree, fmt.Sprintf("%s: consumer ls says %s (%s), explain --exit-code says %s", t, want.word, want.severity, got))
		}
		stream, consumer, _ := strings.Cut(t, "/")
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", stream, consumer, want.word, want.ids)))
	}
	disagree = append(disagree, checkStatus...)
	if len(disagree) > 0 {
		sort.Strings(disagree)
		ts.Fatalf("health-agree: the commands disagree:\n%s", strings.Join(disagree, "\n"))
	}
	fmt.Fprintln(ts.Stdout(), strings.Join(out, "\n"))
}
