package check

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/check"
	"github.com/jetctl/jetctl/pkg/consumer"
)

// alerts evaluates a threshold range as the Nagios plugin guidelines
// define it ("Threshold and ranges": [@]start:end, start 0 and ":" left
// out when start is 0, end infinity when left out after ":", "~" negative
// infinity; an alert outside start..end, endpoints included, or inside it
// with "@"). An empty range never alerts.
func alerts(t *testing.T, r string, x float64) bool {
	t.Helper()
	if r == "" {
		return false
	}
	inside := strings.HasPrefix(r, "@")
	r = strings.TrimPrefix(r, "@")
	startText, endText, hasColon := strings.Cut(r, ":")
	if !hasColon {
		startText, endText = "0", r
	}
	number := func(s string, empty float64) float64 {
		switch s {
		case "":
			return empty
		case "~":
			return math.Inf(-1)
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("range %q: %v", r, err)
		}
		return v
	}
	start, end := number(startText, 0), number(endText, math.Inf(1))
	in := start <= x && x <= end
	return in == inside
}

// The evaluator reads the guidelines' table of example ranges as they
// do ("Generate an alert if x...").
func TestAlertsFollowsTheGuidelines(t *testing.T) {
	for _, tt := range []struct {
		r     string
		alert []float64
		quiet []float64
	}{
		{"10", []float64{-1, 10.5, 11}, []float64{0, 5, 10}},
		{"10:", []float64{-1, 9.9}, []float64{10, 1e9}},
		{"~:10", []float64{10.1, 11}, []float64{-1e9, 10}},
		{"10:20", []float64{9, 21}, []float64{10, 15, 20}},
		{"@10:20", []float64{10, 15, 20}, []float64{9, 21}},
		{"0", []float64{1, 0.001}, []float64{0}},
	} {
		for _, x := range tt.alert {
			if !alerts(t, tt.r, x) {
				t.Errorf("range %q: %v does not alert", tt.r, x)
			}
		}
		for _, x := range tt.quiet {
			if alerts(t, tt.r, x) {
				t.Errorf("range %q: %v alerts", tt.r, x)
			}
		}
	}
}

// perfItemOf is the perfdata item label of writeNagios' status line:
// its warn and crit ranges.
func perfItemOf(t *testing.T, cfg check.Config, r *check.Report, label string) (warn, crit string) {
	t.Helper()
	for _, item := range strings.Fields(perfdata(cfg, r)) {
		name, rest, _ := strings.Cut(item, "=")
		if name != "'"+label+"'" {
			continue
		}
		fields := strings.Split(rest, ";")
		for len(fields) < 3 {
			fields = append(fields, "")
		}
		return fields[1], fields[2]
	}
	t.Fatalf("no %s in %s", label, perfdata(cfg, r))
	return "", ""
}

// The perfdata's warn and crit ranges alert where jetctl's rules do: any
// dead letter is a warning and --dead-letters-critical N of them critical
// (at least N, where a plain N alerts only above N); a lag or a stall
// from its level on (to the millisecond the value is printed with: the
// range alerts above the level, the rule at it).
func TestPerfdataRangesAlertAsTheRules(t *testing.T) {
	deadLetters := func(n int64) *check.Report {
		return &check.Report{Consumers: []*check.ConsumerResult{{DeadLetters: &n}}}
	}
	for _, critical := range []int64{0, 1, 2, 5} {
		cfg := check.Config{Thresholds: consumer.Thresholds{DeadLettersCritical: critical}}
		for n := int64(0); n <= 7; n++ {
			warn, crit := perfItemOf(t, cfg, deadLetters(n), "dead_letters")
			if got, want := alerts(t, warn, float64(n)), n >= 1; got != want {
				t.Errorf("dead_letters=%d warn %q alerts %v; the rule (any dead letter) says %v", n, warn, got, want)
			}
			if got, want := alerts(t, crit, float64(n)), critical > 0 && n >= critical; got != want {
				t.Errorf("dead_letters=%d with --dead-letters-critical %d: crit %q alerts %v; the rule says %v", n, critical, crit, got, want)
			}
		}
	}

	cfg := check.Config{Thresholds: consumer.Thresholds{Behind: time.Minute, BehindCritical: 5 * time.Minute,
		Stall: 5 * time.Minute, StallCritical: 15 * time.Minute}}
	for _, tt := range []struct {
		label             string
		warning, critical float64
		report            func(seconds float64) *check.Report
	}{
		{"lag_max", 60, 300, func(s float64) *check.Report {
			return &check.Report{Consumers: []*check.ConsumerResult{{LagSeconds: &s, Unprocessed: 1}}}
		}},
		{"stall_max", 300, 900, func(s float64) *check.Report {
			return &check.Report{Consumers: []*check.ConsumerResult{{AckFloorAgeSeconds: &s, Unprocessed: 1}}}
		}},
	} {
		for _, level := range []struct {
			name  string
			value float64
			crit  bool
		}{{"warning", tt.warning, false}, {"critical", tt.critical, true}} {
			for _, s := range []float64{level.value - 0.001, level.value + 0.001} {
				warn, crit := perfItemOf(t, cfg, tt.report(s), tt.label)
				r := warn
				if level.crit {
					r = crit
				}
				if got, want := alerts(t, r, s), s >= level.value; got != want {
					t.Errorf("%s=%.3f: %s range %q alerts %v; the rule (from %vs) says %v", tt.label, s, level.name, r, got, level.value, want)
				}
			}
		}
	}
}
