package check

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jetctl/jetctl/pkg/check"
)

// writeNagios prints the report as a nagios plugin does (Nagios plugin
// development guidelines): one status line, "JETCTL CHECK STATUS: counts
// | perfdata", then one line per stream or consumer that is not OK, the
// worst first. The perfdata sums up every item checked (a per-consumer
// service checks one consumer: --stream S --consumer C).
func writeNagios(w io.Writer, cfg check.Config, r *check.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "JETCTL CHECK %s: %s | %s\n", r.Status.Nagios(), nagiosText(countsText(r)), perfdata(cfg, r))
	for _, s := range r.Streams {
		if s.Status != check.OK && !s.Skipped {
			fmt.Fprintf(&b, "%s stream %s: %s\n", s.Status.Nagios(), s.Stream, nagiosText(detail(s.Checks, s.Problems, false)))
		}
	}
	for _, c := range r.Consumers {
		if c.Status != check.OK && !c.Skipped {
			fmt.Fprintf(&b, "%s consumer %s > %s: %s\n", c.Status.Nagios(), c.Stream, c.Consumer, nagiosText(detail(c.Checks, c.Problems, false)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// nagiosText keeps a text on one line and out of the perfdata: '|'
// starts the perfdata in a nagios plugin's output.
func nagiosText(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	return strings.Join(strings.Fields(s), " ")
}

// perfItem is one perfdata value: 'label'=value[UOM];[warn];[crit];[min];[max].
type perfItem struct {
	label      string
	value      float64
	unit       string
	warn, crit string
	min        string
}

func (p perfItem) String() string {
	v := strconv.FormatFloat(p.value, 'f', -1, 64)
	if p.unit == "s" {
		v = strconv.FormatFloat(p.value, 'f', 3, 64)
	}
	return strings.TrimRight(fmt.Sprintf("'%s'=%s%s;%s;%s;%s", p.label, v, p.unit, p.warn, p.crit, p.min), ";")
}

// A perfdata level is a range of the Nagios plugin guidelines ("Threshold
// and ranges"): a plain number N alerts outside 0..N, endpoints included,
// i.e. above N. jetctl's rules alert from their level on (at least it),
// so each level is written as the plain number that alerts where the rule
// does: one below a count's level (at least 1 dead letter: "0"), a
// duration's level itself (above 60s where the rule says from 60s: the
// same to the millisecond the value is printed with). A plain number,
// not "@N:", because tools that graph perfdata (Icinga 2's writers among
// them) read plain numbers only.

// seconds is a duration level in seconds; "" when not set.
func seconds(d float64) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatFloat(d, 'f', -1, 64)
}

// atLeast is a count level n (the rule alerts at n or more); "" when
// not set.
func atLeast(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n-1, 10)
}

// perfdata: the counts by status, the worst lag and stall of the
// consumers (with the levels of the flags, or their defaults), the
// totals of their backlogs, and the check's duration. Replication
// consumers count in the statuses only.
func perfdata(cfg check.Config, r *check.Report) string {
	// The command's levels, defaults filled in (a consumer's metadata
	// may set its own).
	t, _, _ := cfg.Thresholds.With(nil, nil)
	var lag, stall, unprocessed, ackPending, redelivered, waiting, dead float64
	for _, c := range r.Consumers {
		// A replication consumer's figures are its reading stream's,
		// judged by that stream's mirror and source checks.
		if c.Skipped || c.Replication != nil {
			continue
		}
		if c.LagSeconds != nil {
			lag = max(lag, *c.LagSeconds)
		}
		if c.AckFloorAgeSeconds != nil && (c.Unprocessed > 0 || c.AckPending > 0) {
			stall = max(stall, *c.AckFloorAgeSeconds)
		}
		unprocessed += float64(c.Unprocessed)
		ackPending += float64(c.AckPending)
		redelivered += float64(c.Redelivered)
		waiting += float64(c.WaitingPulls)
		if c.DeadLetters != nil {
			dead += float64(*c.DeadLetters)
		}
	}
	items := []perfItem{
		{label: "critical", value: float64(r.Counts.Critical), min: "0"},
		{label: "warning", value: float64(r.Counts.Warning), min: "0"},
		{label: "unknown", value: float64(r.Counts.Unknown), min: "0"},
		{label: "ok", value: float64(r.Counts.OK), min: "0"},
		{label: "skipped", value: float64(r.Counts.Skipped), min: "0"},
		{label: "lag_max", value: lag, unit: "s", warn: seconds(t.Behind.Seconds()), crit: seconds(t.BehindCritical.Seconds()), min: "0"},
		{label: "stall_max", value: stall, unit: "s", warn: seconds(t.Stall.Seconds()), crit: seconds(t.StallCritical.Seconds()), min: "0"},
		{label: "unprocessed", value: unprocessed, min: "0"},
		{label: "ack_pending", value: ackPending, min: "0"},
		{label: "redelivered", value: redelivered, min: "0"},
		{label: "waiting_pulls", value: waiting, min: "0"},
		{label: "dead_letters", value: dead, warn: atLeast(1), crit: atLeast(t.DeadLettersCritical), min: "0"},
		{label: "duration", value: r.DurationSeconds, unit: "s", min: "0"},
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.String()
	}
	return strings.Join(parts, " ")
}
