package dlq

import (
	"context"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type purgeOptions struct {
	streamFlags
	consumer  string
	filter    string
	olderThan time.Duration
	dryRun    bool
	yes       bool
	listFlags
}

func newCmdPurge(f *factory.Factory) *cobra.Command {
	o := &purgeOptions{}
	cmd := &cobra.Command{
		Use:   "purge [--stream S] [--filter EXPR] [--older-than D] --yes",
		Short: "delete messages from a DLQ stream",
		Long: `Delete the selected DLQ messages for good: all of them, or those matching
--consumer, --filter (a jq program) and --older-than (swept longer ago).

Output: a one-line summary on stderr; --list prints a table row per
message, -o jsonl (json, yaml) one entry per message, --summary -o json
the summary.

Safety: purge needs --yes when not run in a terminal; --dry-run says what
would be deleted (--list: which) and changes nothing.`,
		Example: `  jetctl dlq purge --stream ORDERS --older-than 30d --dry-run --list
  jetctl dlq purge --stream ORDERS --filter '.reason == "terminated"' --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runPurge(cmd.Context(), f, o) },
	}
	o.streamFlags.bind(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&o.consumer, "consumer", "", "only messages this consumer gave up on")
	fl.StringVar(&o.filter, "filter", "", "jq program: delete entries for which it is true")
	factory.DurationVar(fl, &o.olderThan, "older-than", 0, "only messages swept longer ago than this (e.g. 30d)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	o.listFlags.bind(cmd, "deleted message")
	return cmd
}

func runPurge(ctx context.Context, f *factory.Factory, o *purgeOptions) error {
	sel, err := selection(f, o.consumer, 0, o.olderThan, o.filter)
	if err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	listRecords, err := o.listFlags.records(p)
	if err != nil {
		return err
	}
	js, stream, err := openDestructive(ctx, f, o.streamFlags, o.yes, o.dryRun, "purge deletes DLQ messages for good")
	if err != nil {
		return err
	}
	start := time.Now()
	recs := newRecords[pkgdlq.Entry](p, listRecords)
	// source is the stream whose dead letters go, for the audit record.
	source := o.stream
	n, bytes, err := pkgdlq.Purge(ctx, js, pkgdlq.PurgeConfig{DLQStream: stream, Select: sel, DryRun: o.dryRun,
		OnRecord: func(e pkgdlq.Entry) {
			recs.add(e, false)
			if source == "" {
				source = e.SourceStream
			}
		}})
	if err == nil && n == 0 {
		// One line for a consumer that does not exist, not a summary of nothing.
		if err := unknownConsumer(ctx, js, stream, o.consumer); err != nil {
			return err
		}
	}
	sum := purgeSummary{DLQStream: stream, Bytes: bytes, Seconds: time.Since(start).Seconds()}
	verb := "deleted"
	if o.dryRun {
		verb, sum.WouldDelete = "would delete", n
	} else {
		sum.Deleted = n
	}
	switch {
	case listRecords && p.Format == "jsonl":
	case listRecords:
		recs.printList(func(entries []pkgdlq.Entry) output.Table {
			t := output.Table{Header: []string{"dlq seq", "source", "subject", "consumer", "reason", "swept at"}}
			for _, e := range entries {
				t.Row(e.DLQSeq, fmt.Sprintf("%s:%d", e.SourceStream, e.SourceSeq), e.Subject, e.Consumer, e.Reason, e.SweptAt.UTC().Format(time.RFC3339))
			}
			return t
		})
	case p.Format != "table":
		recs.err = p.Print(sum, nil)
	}
	if recs.err != nil && err == nil {
		err = recs.err
	}
	line := fmt.Sprintf("%s: %s %s (%s) in %.2fs", stream, verb, plural(n, "message", "messages"), humanize.IBytes(uint64(bytes)), sum.Seconds)
	fmt.Fprintf(f.IO.ErrOut, "jetctl: %s\n", line)
	if !o.dryRun && n > 0 {
		if source == "" {
			source = stream
		}
		auditlog.Write(ctx, f, audit.Change{Stream: source, Consumer: o.consumer, Action: "purge", Summary: line, Err: err, Target: stream,
			Counts: map[string]int64{"deleted": int64(n), "bytes": bytes}})
	}
	return err
}

// purgeSummary is what purge prints with --summary -o json.
type purgeSummary struct {
	DLQStream   string  `json:"dlq_stream"`
	Deleted     int     `json:"deleted"`
	WouldDelete int     `json:"would_delete,omitempty"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
}
