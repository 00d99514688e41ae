package check

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/dustin/go-humanize/english"

	"github.com/jetctl/jetctl/cmd/consumer"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/check"
)

// render prints the report in format.
func render(f *factory.Factory, cfg check.Config, r *check.Report, format string) error {
	switch format {
	case "nagios":
		return writeNagios(f.IO.Out, cfg, r)
	case "prometheus":
		return writePrometheus(f.IO.Out, r)
	case "jsonl":
		p, err := printer(f, "json")
		if err != nil {
			return err
		}
		for _, item := range lines(r) {
			if err := p.Item(item); err != nil {
				return err
			}
		}
		return nil
	}
	p, err := printer(f, format)
	if err != nil {
		return err
	}
	return p.Print(r, func() []output.Table { return tables(r) })
}

// printer is the usual printer, for a format it knows.
func printer(f *factory.Factory, format string) (*output.Printer, error) {
	p, err := output.NewPrinter(output.Options{Format: format, JQ: f.Output.JQ}, f.IO.Out, f.IO.ColorOut(), format)
	if err != nil {
		return nil, err
	}
	p.Context = f.Context()
	return p, nil
}

// streamLine and consumerLine are the lines of -o jsonl: each item with
// its kind, then a summary.
type streamLine struct {
	Kind string `json:"kind"`
	*check.StreamResult
}

type consumerLine struct {
	Kind string `json:"kind"`
	*check.ConsumerResult
}

type summaryLine struct {
	Kind            string       `json:"kind"`
	Status          check.Status `json:"status"`
	Time            string       `json:"time"`
	DurationSeconds float64      `json:"duration_seconds"`
	Counts          check.Counts `json:"counts"`
}

func lines(r *check.Report) []any {
	var out []any
	for _, s := range r.Streams {
		out = append(out, streamLine{"stream", s})
	}
	for _, c := range r.Consumers {
		out = append(out, consumerLine{"consumer", c})
	}
	return append(out, summaryLine{"summary", r.Status, r.Time.Format("2006-01-02T15:04:05.000Z07:00"), r.DurationSeconds, r.Counts})
}

// tables are the streams and the consumers, the worst first, each with
// what is wrong.
func tables(r *check.Report) []output.Table {
	st := output.Table{Header: []string{"status", "stream", "messages", "bytes", "limits", "replicas", "detail"}}
	for _, s := range r.Streams {
		st.Row(statusCell(s.Status, s.Skipped), s.Stream, humanize.Comma(int64(s.Messages)), humanize.IBytes(s.Bytes),
			limitsCell(s), replicasCell(s), detail(s.Checks, s.Problems, s.Skipped))
	}
	ct := output.Table{Header: []string{"status", "stream", "consumer", "health", "lag", "unprocessed", "ack pending", "redelivered", "dead", "detail"}}
	for _, c := range r.Consumers {
		lag := "-"
		if c.State != nil {
			lag = consumer.LagCell(c.State)
		}
		dead := "-"
		if c.DeadLetters != nil {
			dead = fmt.Sprint(*c.DeadLetters)
		}
		health, what := string(c.Health), detail(c.Checks, c.Problems, c.Skipped)
		if c.State != nil {
			health = consumer.HealthCell(c.State)
		}
		if c.Replication != nil && what == "-" {
			what = c.HealthReason
		}
		ct.Row(statusCell(c.Status, c.Skipped), c.Stream, c.Consumer, health, lag, humanize.Comma(int64(c.Unprocessed)),
			c.AckPending, c.Redelivered, dead, what)
	}
	return []output.Table{st, ct}
}

func statusCell(s check.Status, skipped bool) string {
	if skipped {
		return "SKIPPED"
	}
	return s.Nagios()
}

func limitsCell(s *check.StreamResult) string {
	var parts []string
	if s.MaxMessages > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% msgs", 100*float64(s.Messages)/float64(s.MaxMessages)))
	}
	if s.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% bytes", 100*float64(s.Bytes)/float64(s.MaxBytes)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ") + " (discard " + s.Discard + ")"
}

func replicasCell(s *check.StreamResult) string {
	if s.Replicas == 0 {
		return "?"
	}
	return fmt.Sprintf("%d/%d", s.ReplicasCurrent, s.Replicas)
}

// detail is what is not OK, the worst first: "check: message; ...".
func detail(checks []check.Check, problems []string, skipped bool) string {
	if skipped {
		return "io.nats.monitor.enabled=false"
	}
	var parts []string
	said := map[string]bool{}
	for _, status := range []check.Status{check.Critical, check.Unknown, check.Warning} {
		for _, c := range checks {
			// The health word repeats the finding a threshold gave.
			if c.Status == status && !said[c.Message] {
				said[c.Message] = true
				parts = append(parts, c.Name+": "+c.Message)
			}
		}
	}
	parts = append(parts, problems...)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// countsText is "1 critical, 2 warning, 0 unknown, 5 ok (2 streams, 6
// consumers)".
func countsText(r *check.Report) string {
	c := r.Counts
	text := fmt.Sprintf("%d critical, %d warning, %d unknown, %d ok (%s, %s",
		c.Critical, c.Warning, c.Unknown, c.OK, english.Plural(len(r.Streams), "stream", "streams"),
		english.Plural(len(r.Consumers), "consumer", "consumers"))
	if c.Skipped > 0 {
		text += fmt.Sprintf("; %d skipped", c.Skipped)
	}
	return text + ")"
}
