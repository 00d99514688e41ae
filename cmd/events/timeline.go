package events

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgevents "github.com/jetctl/jetctl/pkg/events"
)

type timelineOptions struct {
	sel    selectFlags
	toTime time.Time
	fold   bool
}

func newCmdTimeline(f *factory.Factory) *cobra.Command {
	o := &timelineOptions{}
	cmd := &cobra.Command{
		Use:   "timeline [--stream S [--consumer C]] [--since D | --from-time T [--to-time T]] [--type T]... [--filter JQ]",
		Short: "what happened to streams and consumers, in order",
		Long: `Print the recorded events in the order they were stored: JetStream's
advisories kept by the recorder (jetctl events record), jetctl's audit
records, and the dead-letter advisories that DLQ captures hold and the
recorder does not (those captured before the recorder existed). Each event
is printed once.

--stream S shows the stream's events and its consumers'; --consumer C (with
--stream) the consumer's and its stream's. A stream or consumer that is
neither on the server nor in the record is exit 3. --since D or --from-time
T start the timeline (a start in the future is exit 2), --to-time T ends it
(exclusive). --type keeps events of the named types, --filter those for
which a jq program is true (on the JSON shape below).

The table is for people: on a terminal, bursts are folded (300 max
deliveries of one consumer within a minute are one row, with the count and
the first and last sequence); --fold folds elsewhere too, --fold=false
never. -o json and -o jsonl print every event as a JSON line:

  {"time":"...","type":"max_deliveries","stream":"ORDERS","consumer":"billing",
   "seq":42,"deliveries":5,"text":"seq 42 reached max deliveries (5)",
   "subject":"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.billing",
   "from":"JETCTL_EVENTS","from_seq":118,"advisory":{...}}

(the fields and types are in docs/events.md). The timeline is streamed:
however many events it reads, it holds a few hundred at once.

Without a recorder the timeline is exit 3, with the command that makes one.`,
		Example: `  jetctl events timeline --since 1h
  jetctl events timeline --stream ORDERS --consumer projector --since 2h
  jetctl events timeline --stream ORDERS --type max_deliveries,terminated -o jsonl
  jetctl events timeline --from-time 2026-12-01T14:00:00Z --to-time 2026-12-01T15:00:00Z --type audit
  jetctl events timeline --filter '.leader == "n2"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runTimeline(cmd, f, o) },
	}
	fl := cmd.Flags()
	o.sel.bind(cmd, f, fl)
	factory.TimeVar(fl, &o.toTime, "to-time", "end before this time (RFC 3339, exclusive)").Hint(timeHint)
	fl.BoolVar(&o.fold, "fold", false, "fold bursts of one kind into one row (default: on a terminal)")
	return cmd
}

func runTimeline(cmd *cobra.Command, f *factory.Factory, o *timelineOptions) error {
	ctx := cmd.Context()
	cfg, err := o.sel.config(ctx, f.IO.ErrOut)
	if err != nil {
		return err
	}
	cfg.To = o.toTime
	if err := cfg.Validate(time.Now()); err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	table := p.Format == "table" && f.Output.JQ == ""
	if p.Format == "yaml" {
		return exitcode.UsageErrorf("events timeline streams its events: use -o table, json or jsonl, not -o yaml")
	}
	fold := table && f.IO.StdoutTTY
	if cmd.Flags().Changed("fold") {
		if o.fold && !table {
			return exitcode.UsageErrorf("--fold folds the table: -o %s prints every event", p.Format)
		}
		fold = o.fold
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}

	w := bufio.NewWriterSize(f.IO.Out, 64<<10)
	p.Out = w
	events, rows := 0, 0
	var emit func(*pkgevents.Event) error
	switch {
	case f.Output.JQ != "":
		emit = func(e *pkgevents.Event) error { events++; return p.Item(e) }
	case !table:
		var line []byte
		emit = func(e *pkgevents.Event) error {
			events++
			line = e.AppendJSON(line[:0])
			_, err := w.Write(line)
			return err
		}
	case fold:
		folder := pkgevents.NewFolder(func(r *pkgevents.Row) error { rows++; return writeRow(w, rows == 1, r) })
		emit = func(e *pkgevents.Event) error { events++; return folder.Add(e) }
		err = pkgevents.Timeline(ctx, js, cfg, emit)
		if err == nil {
			err = folder.Flush()
		}
		return finishTimeline(f, w, err, events, rows)
	default:
		emit = func(e *pkgevents.Event) error {
			events++
			rows++
			return writeRow(w, rows == 1, &pkgevents.Row{First: e, Count: 1, Last: e.Time})
		}
	}
	err = pkgevents.Timeline(ctx, js, cfg, emit)
	return finishTimeline(f, w, err, events, rows)
}

// finishTimeline flushes the output and says on stderr how many events
// were read (and into how many rows they folded).
func finishTimeline(f *factory.Factory, w *bufio.Writer, err error, events, rows int) error {
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write: %w", ferr)
	}
	if err != nil {
		return err
	}
	switch {
	case events == 0:
		fmt.Fprintln(f.IO.ErrOut, "jetctl: no events recorded in that range")
	case rows > 0 && rows != events:
		fmt.Fprintf(f.IO.ErrOut, "jetctl: %s, folded into %s\n", english.Plural(events, "event", ""), english.Plural(rows, "row", ""))
	default:
		fmt.Fprintf(f.IO.ErrOut, "jetctl: %s\n", english.Plural(events, "event", ""))
	}
	return nil
}

// tableTime is how the table writes a stored time: UTC, to the millisecond.
const tableTime = "2006-01-02T15:04:05.000Z"

// writeRow writes one table row (the header before the first): columns of
// fixed width, because the table is streamed.
func writeRow(w io.Writer, first bool, r *pkgevents.Row) error {
	if first {
		if _, err := fmt.Fprintf(w, "%-24s  %-23s  %-14s  %-14s  %s\n", "TIME", "TYPE", "STREAM", "CONSUMER", "EVENT"); err != nil {
			return err
		}
	}
	e := r.First
	_, err := fmt.Fprintf(w, "%-24s  %-23s  %-14s  %-14s  %s\n", e.Time.UTC().Format(tableTime), e.Type,
		dash(output.Escape(r.Stream())), dash(output.Escape(r.Consumer())), output.Escape(r.Text()))
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
