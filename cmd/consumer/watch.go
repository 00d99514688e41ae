package consumer

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/dustin/go-humanize/english"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/retry"
)

type watchOptions struct {
	selectFlags
	interval time.Duration
	count    int
}

func newCmdWatch(f *factory.Factory) *cobra.Command {
	o := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch [STREAM...] [--interval 1s]",
		Short: "watch consumers' positions and rates live",
		Long: `Poll the consumers every --interval and show their positions with the
rates since the previous poll: deliveries per second (redeliveries
included), how fast the ack floor advances, and the trend of the
redelivered and unprocessed counts.

On a terminal the table is redrawn in place. Off a terminal (or with
-o json or jsonl) it prints one JSON line per consumer per poll, the
fields of "consumer ls -o json" plus "rates" (null in the first poll).
--count N stops after N polls; otherwise it runs until interrupted, and
Ctrl-C exits 0. A poll the server does not answer (a restart, a leader
election) does not end the watch: it says so (on stderr off a terminal)
and polls again; with --count, an unanswered last poll exits 1.
Selection and sorting are those of "consumer ls". Watching changes
nothing.`,
		Example: `  jetctl consumer watch ORDERS
  jetctl consumer watch --interval 5s --sort lag
  jetctl consumer watch ORDERS --count 10 > positions.jsonl`,
		ValidArgsFunction: f.CompleteStreams(),
		RunE:              func(cmd *cobra.Command, args []string) error { return runWatch(cmd.Context(), f, o, args) },
	}
	o.selectFlags.bind(cmd)
	factory.DurationVar(cmd.Flags(), &o.interval, "interval", pkgconsumer.Interval, "time between polls").Positive()
	cmd.Flags().IntVar(&o.count, "count", 0, "stop after this many polls (0: until interrupted)")
	return cmd
}

func runWatch(ctx context.Context, f *factory.Factory, o *watchOptions, streams []string) error {
	sel, err := o.selectFlags.config(f, streams)
	if err != nil {
		return err
	}
	interval := o.interval
	if o.count < 0 {
		return exitcode.UsageErrorf("invalid --count %d: use 0 (until interrupted) or more", o.count)
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	// A table redraws for people; a program gets JSON lines, so a table
	// is what a terminal gets by default and JSON lines what a pipe gets.
	redraw := p.Format == "table" && (f.IO.StdoutTTY || f.Output.Format == "table")
	if !redraw {
		if p.Format == "table" {
			p.Format = "jsonl"
		}
		if err := p.RequireLines("consumer watch"); err != nil {
			return err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	w := &pkgconsumer.Watcher{JS: js, Config: sel.list}
	var lines *output.LineWriter
	if !redraw {
		lines = output.NewLineWriter(f.IO.Out)
		defer lines.Close()
		p.Out = lines
	}
	warned, thresholdsShown := false, false
	for n := 1; ; n++ {
		started := time.Now()
		samples, err := w.Poll(ctx)
		if ctx.Err() != nil {
			return nil // Ctrl-C: a clean stop.
		}
		if err != nil {
			// A server restarting or electing a leader: the watch goes on
			// (an incident is when it is watched), and says so. The poll
			// counts for --count, whose last poll's error ends the watch.
			if !retry.Transient(err) || (o.count > 0 && n >= o.count) {
				return err
			}
			if err := unanswered(f, redraw, interval, o.count, n, err); err != nil {
				return err
			}
			if err := retry.Sleep(ctx, interval-time.Since(started)); err != nil {
				return nil
			}
			continue
		}
		samples = keepSamples(sel, samples)
		if !warned {
			states := make([]*pkgconsumer.State, len(samples))
			for i, s := range samples {
				states[i] = s.State
			}
			if !thresholdsShown {
				thresholdsShown = true
				ThresholdWarnings(f.IO.ErrOut, states)
			}
			// Once: what cannot be read now will not be readable later.
			if err := Unread(states); err != nil {
				warned = true
				fmt.Fprintln(f.IO.ErrOut, "jetctl: "+err.Error())
			}
		}
		if redraw {
			if err := drawWatch(f, p, samples, interval, o.count, n); err != nil {
				return err
			}
		} else {
			for _, s := range samples {
				if err := p.Item(s); err != nil {
					return err
				}
			}
		}
		if o.count > 0 && n >= o.count {
			return nil
		}
		if err := retry.Sleep(ctx, interval-time.Since(started)); err != nil {
			return nil
		}
	}
}

// keepSamples filters and sorts samples as ls would their states.
func keepSamples(sel selection, samples []pkgconsumer.Sample) []pkgconsumer.Sample {
	byState := make(map[*pkgconsumer.State]pkgconsumer.Sample, len(samples))
	states := make([]*pkgconsumer.State, len(samples))
	for i, s := range samples {
		byState[s.State] = s
		states[i] = s.State
	}
	kept := sel.apply(states)
	out := make([]pkgconsumer.Sample, len(kept))
	for i, s := range kept {
		out[i] = byState[s]
	}
	return out
}

// drawWatch writes one screen: on a terminal it first moves home and
// clears, so the view redraws in place; the whole screen is one write.
// unanswered says that poll n got no answer from the server: in place of
// the table when it is redrawn, else a line on stderr (stdout keeps
// only the samples).
func unanswered(f *factory.Factory, redraw bool, interval time.Duration, count, n int, err error) error {
	msg := fmt.Sprintf("the server is not answering (%s); polling again every %s", output.Escape(err.Error()), interval)
	if !redraw {
		_, werr := fmt.Fprintf(f.IO.ErrOut, "jetctl: %s: %s\n", time.Now().Format("15:04:05"), msg)
		return werr
	}
	buf := watchHeader(f, interval, "", count, n)
	buf.WriteString(msg + "\n")
	_, werr := f.IO.Out.Write(buf.Bytes())
	return werr
}

// watchHeader starts poll n's screen: home and clear on a terminal (a
// blank line between polls off one), then the time, the interval, what
// (", 3 consumers"), the poll of --count, and how to stop.
func watchHeader(f *factory.Factory, interval time.Duration, what string, count, n int) *bytes.Buffer {
	var buf bytes.Buffer
	if f.IO.StdoutTTY {
		buf.WriteString("\x1b[H\x1b[2J")
	} else if n > 1 {
		buf.WriteString("\n")
	}
	polls := ""
	if count > 0 {
		polls = fmt.Sprintf(", poll %d of %d", n, count)
	}
	fmt.Fprintf(&buf, "%s  every %s%s%s (Ctrl-C to stop)\n\n", time.Now().Format("15:04:05"), interval, what, polls)
	return &buf
}

func drawWatch(f *factory.Factory, p *output.Printer, samples []pkgconsumer.Sample, interval time.Duration, count, n int) error {
	buf := watchHeader(f, interval, ", "+english.Plural(len(samples), "consumer", ""), count, n)
	t := output.Table{Header: []string{"stream", "consumer", "unprocessed", "trend/s", "ack pending", "delivered/s", "acked/s", "redelivered", "trend/s", "waiting", "lag", "health"}}
	for _, s := range samples {
		unTrend, ackRate, delRate, redTrend := "-", "-", "-", "-"
		if r := s.Rates; r != nil {
			unTrend, ackRate, delRate, redTrend = signed(r.UnprocessedPerSec), rate(r.AckedPerSec), rate(r.DeliveredPerSec), signed(r.RedeliveredPerSec)
		}
		t.Row(s.Stream, s.Consumer, humanize.Comma(int64(s.Unprocessed)), unTrend, AckPendingCell(s.State), delRate, ackRate,
			s.Redelivered, redTrend, s.WaitingPulls, LagCell(s.State), HealthCell(s.State))
	}
	saved := p.Out
	p.Out = buf
	err := p.Print(nil, func() []output.Table { return []output.Table{t} })
	p.Out = saved
	if err != nil {
		return err
	}
	_, err = f.IO.Out.Write(buf.Bytes())
	return err
}

func rate(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return humanize.Comma(int64(v + 0.5))
}

func signed(v float64) string {
	switch {
	case v > 0:
		return "+" + rate(v)
	case v < 0:
		return "-" + rate(-v)
	}
	return "0"
}
