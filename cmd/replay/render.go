package replay

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/replay"
)

// printRepublishJSON prints a republish's summary on stdout when -o or
// --jq asks for it (--to writes nothing else there).
func printRepublishJSON(f *factory.Factory, o *options, p *output.Printer, sum replay.Summary) error {
	if o.to == "" || o.dryRun || (f.Output.Format == "" && f.Output.JQ == "") {
		return nil
	}
	if sum.Failed == nil {
		sum.Failed = []uint64{}
	}
	return p.Print(sum, nil)
}

// connectionNotice says on stderr when the target's connection went away
// and when it came back.
func connectionNotice(f *factory.Factory) func(up bool, server string, down time.Duration) {
	return func(up bool, server string, down time.Duration) {
		if !up {
			fmt.Fprintf(f.IO.ErrOut, "jetctl: lost the connection to %s; reconnecting\n", server)
			return
		}
		fmt.Fprintf(f.IO.ErrOut, "jetctl: reconnected to %s after %s; sending again what was not acknowledged\n", server, down.Round(time.Millisecond))
	}
}

// printDryRun prints the dry run's report; a republish's counts the
// messages it would not copy apart (skipped_expired, skipped_markers).
func printDryRun(p *output.Printer, sum replay.Summary, republish bool) error {
	type subjectCount struct {
		Subject  string `json:"subject"`
		Messages uint64 `json:"messages"`
	}
	type dryRun struct {
		Stream         string         `json:"stream"`
		FirstSeq       uint64         `json:"first_seq"`
		LastSeq        uint64         `json:"last_seq"`
		Messages       uint64         `json:"messages"`
		Bytes          uint64         `json:"bytes"`
		SkippedExpired *uint64        `json:"skipped_expired,omitempty"`
		SkippedMarkers *uint64        `json:"skipped_markers,omitempty"`
		Subjects       []subjectCount `json:"subjects"`
	}
	d := dryRun{Stream: sum.Stream, FirstSeq: sum.FirstSeq, LastSeq: sum.LastSeq, Messages: sum.Messages, Bytes: sum.Bytes, Subjects: []subjectCount{}}
	if republish {
		d.SkippedExpired, d.SkippedMarkers = &sum.SkippedExpired, &sum.SkippedMarkers
	}
	for s, n := range sum.Subjects {
		d.Subjects = append(d.Subjects, subjectCount{s, n})
	}
	sort.Slice(d.Subjects, func(i, j int) bool { return d.Subjects[i].Subject < d.Subjects[j].Subject })
	return p.Print(d, func() []output.Table {
		head := output.Table{Header: []string{"stream", "range", "messages", "bytes"}}
		rng := "empty"
		if d.LastSeq >= d.FirstSeq && d.LastSeq > 0 {
			rng = fmt.Sprintf("%d..%d", d.FirstSeq, d.LastSeq)
		}
		row := []any{d.Stream, rng, humanize.Comma(int64(d.Messages)), humanize.IBytes(d.Bytes)}
		if republish {
			head.Header = append(head.Header, "expired (skipped)", "markers (skipped)")
			row = append(row, humanize.Comma(int64(sum.SkippedExpired)), humanize.Comma(int64(sum.SkippedMarkers)))
		}
		head.Row(row...)
		subjects := output.Table{Header: []string{"subject", "messages"}}
		for _, s := range d.Subjects {
			subjects.Row(s.Subject, humanize.Comma(int64(s.Messages)))
		}
		return []output.Table{head, subjects}
	})
}

// printSummary writes the one-line summary to stderr.
func printSummary(f *factory.Factory, o *options, sum replay.Summary) {
	verb := "replayed"
	switch {
	case o.dryRun:
		verb = "would replay"
	case o.to != "":
		verb = "republished"
	}
	line := fmt.Sprintf("%s %s (%s) in %.2fs, %s msgs/s",
		verb, output.Plural(sum.Messages-o.skips.JQ, "message"), humanize.IBytes(sum.Bytes), sum.Seconds, humanize.Comma(int64(sum.PerSecond)))
	if sum.Duplicates > 0 {
		line += fmt.Sprintf("; %s already in the target", output.Plural(uint64(sum.Duplicates), "duplicate"))
		if sum.Resumed == 0 {
			// Resuming, they are the earlier run's copies: nothing to do.
			line += " (--new-msg-id copies again)"
		}
	}
	if sum.Unconfirmed > 0 {
		line += fmt.Sprintf("; %s unconfirmed (sent, not acknowledged)", humanize.Comma(int64(sum.Unconfirmed)))
	}
	line += skippedSummary(sum)
	if sum.Resumed > 0 {
		line += fmt.Sprintf("; resumed after seq %d", sum.Resumed)
	}
	if o.checkpoint != "" && sum.Checkpoint > 0 {
		line += fmt.Sprintf("; checkpoint seq %d", sum.Checkpoint)
	}
	line += o.skips.Summary()
	fmt.Fprintln(f.IO.ErrOut, "jetctl: "+line)
	if n := len(sum.Failed); n > 0 {
		detail := ""
		if sum.LastError != nil {
			detail = ": " + exitcode.Message(sum.LastError)
		}
		seqs := "seqs"
		if n == 1 {
			seqs = "seq"
		}
		fmt.Fprintf(f.IO.ErrOut, "jetctl: %s could not be republished (%s %s)%s\n", output.Plural(uint64(n), "message"), seqs, seqList(sum.Failed), detail)
	}
}

// skippedSummary is what a republish (or its dry run) did not copy, for
// the summary line: messages whose TTL had passed, and markers.
func skippedSummary(sum replay.Summary) string {
	line := ""
	if sum.SkippedExpired > 0 {
		line += fmt.Sprintf("; %s skipped (TTL passed; --ttl keep copies them)", output.Plural(sum.SkippedExpired, "expired message"))
	}
	if sum.SkippedMarkers > 0 {
		line += fmt.Sprintf("; %s skipped (--markers keep copies them)", output.Plural(sum.SkippedMarkers, "subject delete marker"))
	}
	return line
}

func seqList(seqs []uint64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i == 10 {
			fmt.Fprintf(&b, ", … (%d more)", len(seqs)-10)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, s)
	}
	return b.String()
}
