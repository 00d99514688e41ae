package dlq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type redriveOptions struct {
	streamFlags
	consumer    string
	filter      string
	to          string
	rate        float64
	max         int
	maxRedrives int
	dryRun      bool
	keep        bool
	all         bool
	inclExpired bool
	yes         bool
	noProgress  bool
	lockTTL     time.Duration
	listFlags
}

func newCmdRedrive(f *factory.Factory) *cobra.Command {
	o := &redriveOptions{}
	cmd := &cobra.Command{
		Use:   "redrive [--stream S] [--filter EXPR] [--to SUBJECT]",
		Short: "send DLQ messages back to their original subject",
		Long: `Publish each selected DLQ message back to its original subject (or --to),
with its original headers and Jetctl-Dlq-Redrives incremented, then delete
the DLQ copy once the publish is acknowledged (--keep leaves it).

A redrive never repeats what the original publish made the server do:
headers the server acts on (Nats-Rollup, Nats-Batch-*, Nats-Schedule*,
Nats-Msg-Id, Nats-Expected-*, ...) stay under Jetctl-Orig-<Name>, as
docs/headers.md lists. A message that had a TTL (Nats-TTL) gets what is
left of it, counted from when the original was stored; one whose TTL has
passed is reported as expired and left in the DLQ, unless
--include-expired (then it gets its whole TTL again). Refused before
anything is sent (exit 2), dry run included: dead letters of a counter
stream (their increments were applied), TTLs for a stream that does not
allow them, a redrive onto a subject at the stream's max_msgs_per_subject
(the server would remove a message there), and onto an interest stream's
subject no consumer receives (the server would drop it). The selection is
read once for these checks before anything is sent.

A redrive reaches only the consumer that gave up on a message: it goes
to its original subject when no other consumer of the stream receives it
there (always so on a workqueue stream), else to that consumer's retry
subject (jetctl dlq setup --consumer C --retry-subject), with the original
subject in the Jetctl-Redrive-Subject header. When neither holds, the
redrive is refused before anything is sent (exit 2), naming the other
consumers; --all-consumers sends to the original subjects anyway.

Messages redriven --max-redrives times already are refused and stay. Each
redrive has Nats-Msg-Id redrive:<dlq stream>:<dlq seq>: interrupted and run
again, a redrive publishes nothing twice within the target stream's
duplicate window (2 minutes by default); see docs/dlq.md for the limit.
A message the target acknowledges as a duplicate (an earlier redrive
stored it) counts as a duplicate, not as redriven; its DLQ copy is deleted.
One redrive per DLQ stream runs at a time (a lease, as for sweep; remove
one a redrive on another host left with "jetctl dlq unlock --redrive").

Output: a one-line summary on stderr, plus a line for each message refused,
failed or expired; --list prints a table row per selected message; -o jsonl (json,
yaml) prints one record per message; --summary -o json the summary.

Safety: redrive moves messages and needs --yes when not run in a terminal;
--dry-run says what would be redriven (--list: which) and changes nothing.`,
		Example: `  jetctl dlq redrive --stream ORDERS --dry-run --list
  jetctl dlq redrive --stream ORDERS --consumer billing --rate 50/s --yes
  jetctl dlq redrive --stream ORDERS --consumer mailer --all-consumers --yes
  jetctl dlq redrive --stream ORDERS --filter '.data.total < 100' --max-redrives 3 --yes
  jetctl dlq redrive --stream ORDERS --to orders.manual-review --keep --yes
  jetctl dlq redrive --stream SESSIONS --include-expired --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runRedrive(cmd.Context(), f, o) },
	}
	o.streamFlags.bind(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&o.consumer, "consumer", "", "only messages this consumer gave up on")
	fl.StringVar(&o.filter, "filter", "", "jq program: redrive entries for which it is true")
	fl.StringVar(&o.to, "to", "", "publish to this subject instead of the original one")
	factory.RateVar(fl, &o.rate, "rate", "at most this many messages per second (e.g. 50/s)")
	fl.IntVar(&o.max, "max", 0, "redrive at most this many messages")
	fl.IntVar(&o.maxRedrives, "max-redrives", 0, "refuse messages already redriven this many times (0: no limit)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "list what would be redriven; change nothing")
	fl.BoolVar(&o.keep, "keep", false, "keep the DLQ copies after redriving them")
	fl.BoolVar(&o.all, "all-consumers", false, "send to the original subjects even where other consumers than the one that gave up receive them too")
	fl.BoolVar(&o.inclExpired, "include-expired", false, "send dead letters whose TTL has passed, with their original TTL again (default: report and leave them)")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	fl.BoolVar(&o.noProgress, "no-progress", false, "no progress bar on stderr")
	o.listFlags.bind(cmd, "selected message")
	factory.DurationVar(fl, &o.lockTTL, "lock-ttl", 30*time.Second, "how long this redrive's lease outlives it if it dies on another host (a lease left earlier keeps its own TTL)").AtLeast(time.Second).Hint("use e.g. 30s (at least 1s)")
	return cmd
}

func runRedrive(ctx context.Context, f *factory.Factory, o *redriveOptions) error {
	sel, err := selection(f, o.consumer, 0, 0, o.filter)
	if err != nil {
		return err
	}
	if o.max < 0 || o.maxRedrives < 0 {
		return exitcode.UsageErrorf("--max and --max-redrives must not be negative")
	}
	if o.to != "" && (strings.ContainsAny(o.to, "*> \t") || strings.Contains(o.to, "..") || strings.HasPrefix(o.to, ".") || strings.HasSuffix(o.to, ".")) {
		return exitcode.UsageErrorf("invalid --to subject %q", o.to)
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	listRecords, err := o.listFlags.records(p)
	if err != nil {
		return err
	}
	js, stream, err := openDestructive(ctx, f, o.streamFlags, o.yes, o.dryRun, "redrive publishes DLQ messages back and deletes their DLQ copies")
	if err != nil {
		return err
	}
	recs := newRecords[pkgdlq.RedriveRecord](p, listRecords)
	// source is the stream the messages go back to, for the audit record.
	source := o.stream
	bar := f.NewProgress(-1, "redriving", o.noProgress)
	sum, err := pkgdlq.Redrive(ctx, js, pkgdlq.RedriveConfig{
		DLQStream: stream, Select: sel, To: o.to, Rate: o.rate, Max: o.max, MaxRedrives: o.maxRedrives,
		DryRun: o.dryRun, Keep: o.keep, AllConsumers: o.all, IncludeExpired: o.inclExpired, LockTTL: o.lockTTL,
		OnRecord: func(r pkgdlq.RedriveRecord) {
			recs.add(r, r.Status == pkgdlq.StatusFailed || r.Status == pkgdlq.StatusRefused || r.Status == pkgdlq.StatusExpired)
			if source == "" {
				source = r.SourceStream
			}
		},
		Progress: func(s pkgdlq.RedriveSummary) { bar.Set(int64(s.Redriven + s.Duplicates)) },
	})
	bar.Finish()
	if sum == nil {
		return err
	}
	if err == nil && sum.Selected == 0 {
		// One line for a consumer that does not exist, not a summary of nothing.
		if err := unknownConsumer(ctx, js, stream, o.consumer); err != nil {
			return err
		}
	}
	switch {
	case listRecords && p.Format != "jsonl":
		recs.printList(func(records []pkgdlq.RedriveRecord) output.Table {
			t := output.Table{Header: []string{"dlq seq", "source", "subject", "redrives", "status", "stored as"}}
			for _, r := range records {
				stored := ""
				if r.Seq > 0 {
					stored = fmt.Sprintf("%s:%d", r.Stream, r.Seq)
				}
				t.Row(r.DLQSeq, fmt.Sprintf("%s:%d", r.SourceStream, r.SourceSeq), r.Subject, r.Redrives, redriveStatus(r), stored)
			}
			return t
		})
	case !listRecords && p.Format != "table":
		recs.err = p.Print(sum, nil)
	case !listRecords:
		for _, r := range recs.items {
			fmt.Fprintf(f.IO.ErrOut, "jetctl: %s seq %d (%s:%d): %s\n", r.DLQStream, r.DLQSeq, r.SourceStream, r.SourceSeq, output.Escape(redriveStatus(r)))
		}
	}
	verb := "redriven"
	n := sum.Redriven
	// What the target acknowledged as a duplicate (an earlier redrive
	// stored it) is not counted as redriven.
	dups := ", " + plural(sum.Duplicates, "duplicate", "duplicates")
	if o.dryRun {
		verb, n, dups = "would be redriven", sum.WouldRedriv, ""
	}
	line := fmt.Sprintf("%s: %d selected, %d %s (%s)%s, %d refused, %d failed, %d expired in %.2fs, %s msgs/s",
		stream, sum.Selected, n, verb, humanize.IBytes(uint64(sum.Bytes)), dups, sum.Refused, sum.Failed, sum.Expired, sum.Seconds, humanize.CommafWithDigits(sum.PerSecond, 1))
	fmt.Fprintf(f.IO.ErrOut, "jetctl: %s\n", line)
	switch {
	case err != nil:
	case recs.err != nil:
		err = recs.err
	case sum.Failed > 0:
		err = exitcode.Newf(exitcode.Partial, "%s could not be redriven", plural(sum.Failed, "message", "messages"))
	}
	if !o.dryRun && sum.Redriven+sum.Duplicates > 0 {
		if source == "" {
			source = stream
		}
		auditlog.Write(ctx, f, audit.Change{Stream: source, Consumer: o.consumer, Action: "redrive", Summary: line, Err: err, Target: stream,
			Counts: map[string]int64{
				"selected": int64(sum.Selected), "redriven": int64(sum.Redriven), "duplicates": int64(sum.Duplicates),
				"refused": int64(sum.Refused), "failed": int64(sum.Failed), "expired": int64(sum.Expired), "bytes": sum.Bytes,
			}})
	}
	return err
}

// redriveStatus is a record's status for people: "redriven", "redriven,
// ttl 3599s", or "refused: why".
func redriveStatus(r pkgdlq.RedriveRecord) string {
	status := strings.ReplaceAll(r.Status, "_", " ")
	if r.TTL != "" {
		status += ", ttl " + r.TTL
	}
	if r.Error != "" {
		status += ": " + r.Error
	}
	return status
}
