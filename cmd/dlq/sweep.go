package dlq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/dustin/go-humanize/english"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type sweepOptions struct {
	stream       string
	consumers    []string
	deleteSource bool
	scan         bool
	dryRun       bool
	max          int
	rate         float64
	lockTTL      time.Duration
	yes          bool
	noProgress   bool
	listFlags
}

func newCmdSweep(f *factory.Factory) *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep --stream STREAM [--consumer C]...",
		Short: "move dead messages from a stream into its DLQ",
		Long: `Read the captured advisories (from where the last sweep stopped) and move
each dead message into the DLQ stream:

  1. read it from the source stream's leader (on a stream with
     allow_direct, dead messages at consecutive sequences are read with
     batched direct gets);
  2. publish a copy to dlq.<stream>.<seq>, which can be written only once;
  3. once the copy is acknowledged, remove the source message where the
     retention policy calls for it: workqueue: deleted; interest: deleted
     unless another consumer has not acknowledged it yet; limits: kept,
     unless --delete-source;
  4. acknowledge the advisory.

Duplicate advisories give one copy; terminations the server caused (stream
limits, deletes) are ignored. A message already gone from the source (e.g.
expired) is reported as "gone before sweep". Killed at any point and run
again, a sweep ends as one uninterrupted run would have.

One sweep per stream runs at a time: a second one exits 1 naming the
holder. A lease left by a sweep that died on this host (kill -9) is taken
over at once; one left on another host expires after that sweep's own
--lock-ttl (the flag on the new run does not shorten it), or is removed
with "jetctl dlq unlock --stream S". A sweep that loses its lease stops
with exit 1.

--scan also finds dead messages whose advisories were never captured, from
the consumers' state (workqueue and interest streams; see docs/dlq.md).

Output: a one-line summary on stderr, plus a line for each message that
failed or was too large to copy; nothing on stdout (an empty cron sweep
prints one line). --list prints a table row per dead message; -o jsonl
(json, yaml) prints one record per dead message, each batch of advisories
in source-sequence order; --summary -o json prints the summary as JSON
instead.

A message too large to copy with its provenance headers within the
server's max_payload is reported as "too large": the DLQ gets its headers
and a pointer (Jetctl-Dlq-Payload-Omitted), the message stays in the source
and is not retried (see docs/dlq.md).

Safety: --delete-source removes messages from a limits stream and needs
--yes when not run in a terminal; --dry-run says what would move and
changes nothing. Exit 4 when any message failed.`,
		Example: `  jetctl dlq sweep --stream ORDERS
  jetctl dlq sweep --stream ORDERS --consumer billing --dry-run --list
  jetctl dlq sweep --stream FULFILMENT --scan --max 1000 --rate 200/s -o jsonl
  jetctl dlq sweep --stream ORDERS --delete-source --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runSweep(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.stream, "stream", "", "the source stream (required)")
	fl.StringArrayVar(&o.consumers, "consumer", nil, "only this consumer's dead messages (repeatable)")
	fl.BoolVar(&o.deleteSource, "delete-source", false, "also delete swept messages from a limits stream")
	fl.BoolVar(&o.scan, "scan", false, "also find dead messages whose advisories were never captured")
	fl.BoolVar(&o.dryRun, "dry-run", false, "list what would move; change nothing")
	fl.IntVar(&o.max, "max", 0, "stop after this many dead messages")
	factory.RateVar(fl, &o.rate, "rate", "at most this many messages per second (e.g. 100/s)")
	factory.DurationVar(fl, &o.lockTTL, "lock-ttl", 30*time.Second, "how long this sweep's lease outlives it if it dies on another host (a lease left earlier keeps its own TTL)").AtLeast(time.Second).Hint("use e.g. 30s (at least 1s)")
	fl.BoolVar(&o.yes, "yes", false, "do not ask before deleting source messages (--delete-source)")
	fl.BoolVar(&o.noProgress, "no-progress", false, "no progress bar on stderr")
	o.listFlags.bind(cmd, "dead message")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("consumer", f.CompleteConsumersOf(func(cmd *cobra.Command, _ []string) string { return o.stream }))
	return cmd
}

func runSweep(ctx context.Context, f *factory.Factory, o *sweepOptions) error {
	if err := validateStream(o.stream); err != nil {
		return err
	}
	if o.max < 0 {
		return exitcode.UsageErrorf("--max must not be negative")
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	listRecords, err := o.listFlags.records(p)
	if err != nil {
		return err
	}
	if o.deleteSource && !o.dryRun {
		if err := f.IO.ConfirmChange(o.yes, fmt.Sprintf("sweep --delete-source deletes swept messages from stream %s", o.stream)); err != nil {
			return err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	recs := newRecords[pkgdlq.Record](p, listRecords)
	bar := f.NewProgress(-1, "sweeping", o.noProgress)
	cfg := pkgdlq.SweepConfig{
		Stream: o.stream, Consumers: o.consumers, DeleteSource: o.deleteSource, Scan: o.scan, DryRun: o.dryRun,
		Max: o.max, Rate: o.rate, LockTTL: o.lockTTL,
		OnRecord: func(r pkgdlq.Record) {
			recs.add(r, r.Status == pkgdlq.StatusFailed || r.Status == pkgdlq.StatusTooLarge)
		},
		Progress: func(s pkgdlq.SweepSummary) { bar.Set(int64(s.Found)) },
	}
	sum, err := pkgdlq.Sweep(ctx, js, cfg)
	bar.Finish()
	if sum == nil {
		return err
	}
	switch {
	case listRecords && p.Format != "jsonl":
		recs.printList(func(records []pkgdlq.Record) output.Table {
			t := output.Table{Header: []string{"seq", "subject", "consumer", "reason", "deliveries", "status", "source", "dlq seq", "size"}}
			for _, r := range records {
				dlqSeq := ""
				if r.DLQSeq > 0 {
					dlqSeq = fmt.Sprint(r.DLQSeq)
				}
				t.Row(r.StreamSeq, r.Subject, r.Consumer, r.Reason, r.Deliveries, sweepStatus(r), r.Source, dlqSeq, humanize.IBytes(uint64(r.Size)))
			}
			return t
		})
	case !listRecords && p.Format != "table":
		recs.err = p.Print(sum, nil)
	case !listRecords:
		for _, r := range recs.items {
			fmt.Fprintf(f.IO.ErrOut, "jetctl: %s seq %d (%s): %s\n", r.Stream, r.StreamSeq, output.Escape(r.Subject), output.Escape(sweepStatus(r)))
		}
	}
	printSweepSummary(f, o, sum)
	err = sweepError(err, recs.err, sum)
	if !o.dryRun && sum.Moved+sum.SourceDeleted+sum.TooLarge > 0 {
		auditlog.Write(ctx, f, audit.Change{Stream: o.stream, Consumer: oneConsumer(o.consumers), Action: "sweep",
			Summary: sweepLine(o, sum), Err: err, Target: sum.DLQStream,
			Counts: map[string]int64{
				"found": int64(sum.Found), "moved": int64(sum.Moved), "already_moved": int64(sum.AlreadyMoved),
				"gone_before_sweep": int64(sum.Gone), "failed": int64(sum.Failed), "too_large": int64(sum.TooLarge),
				"source_deleted": int64(sum.SourceDeleted), "source_kept": int64(sum.SourceKept), "bytes": sum.Bytes,
			}})
	}
	return err
}

// sweepError is how a sweep ends: its own error, else the first record
// that could not be printed, else exit 4 when messages failed to move.
func sweepError(err, printErr error, sum *pkgdlq.SweepSummary) error {
	switch {
	case err != nil:
		return err
	case printErr != nil:
		return printErr
	case sum.Failed > 0:
		return exitcode.Newf(exitcode.Partial, "%s could not be moved; run the sweep again to retry them", plural(sum.Failed, "dead message", "dead messages"))
	}
	return nil
}

// oneConsumer is the consumer a command is limited to, for its audit
// record's subject: "" for none or several.
func oneConsumer(consumers []string) string {
	if len(consumers) == 1 {
		return consumers[0]
	}
	return ""
}

// sweepStatus is a record's status for people: "moved", or "failed: why".
func sweepStatus(r pkgdlq.Record) string {
	status := strings.ReplaceAll(r.Status, "_", " ")
	switch {
	case r.Error != "":
		status += ": " + r.Error
	case r.Status == pkgdlq.StatusTooLarge:
		status += ": " + r.SourceNote
	}
	return status
}

func printSweepSummary(f *factory.Factory, o *sweepOptions, s *pkgdlq.SweepSummary) {
	w := f.IO.ErrOut
	fmt.Fprintf(w, "jetctl: %s\n", sweepLine(o, s))
	for _, skipped := range s.ScanSkipped {
		fmt.Fprintf(w, "jetctl: scan skipped %s\n", skipped)
	}
}

// sweepLine is the summary of a sweep: what it moved (or would move).
func sweepLine(o *sweepOptions, s *pkgdlq.SweepSummary) string {
	tooLarge := ""
	if s.TooLarge > 0 {
		tooLarge = fmt.Sprintf(", %d too large to copy (kept in the source, a pointer in the DLQ)", s.TooLarge)
	}
	if o.dryRun {
		return fmt.Sprintf("dry run: %s found in %s, %d would move to %s (%s)%s, %d already moved, %d gone before sweep",
			plural(s.Found, "dead message", "dead messages"), s.Stream, s.WouldMove, s.DLQStream, humanize.IBytes(uint64(s.Bytes)), tooLarge, s.AlreadyMoved, s.Gone)
	}
	return fmt.Sprintf("swept %s into %s: %d found, %d moved, %d already moved, %d gone before sweep, %d failed%s; source: %d deleted, %d kept; %d duplicate and %d ignored %s; %s in %.2fs",
		s.Stream, s.DLQStream, s.Found, s.Moved, s.AlreadyMoved, s.Gone, s.Failed, tooLarge, s.SourceDeleted, s.SourceKept, s.Duplicates, s.Ignored,
		english.PluralWord(s.Duplicates+s.Ignored, "advisory", "advisories"), humanize.IBytes(uint64(s.Bytes)), s.Seconds)
}
