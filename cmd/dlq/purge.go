package dlq

import (
	"context"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type purgeOptions struct {
	streamFlags
	consumer  string
	filter    string
	olderThan string
	dryRun    bool
	yes       bool
}

func newCmdPurge(f *factory.Factory) *cobra.Command {
	o := &purgeOptions{}
	cmd := &cobra.Command{
		Use:   "purge [--stream S] [--filter EXPR] [--older-than D] --yes",
		Short: "delete messages from a DLQ stream",
		Long: `Delete the selected DLQ messages for good: all of them, or those matching
--consumer, --filter (a jq program) and --older-than (swept longer ago).

Safety: purge needs --yes when not run in a terminal; --dry-run lists what
would be deleted and changes nothing.`,
		Example: `  jetctl dlq purge --stream ORDERS --older-than 30d --dry-run
  jetctl dlq purge --stream ORDERS --filter '.reason == "terminated"' --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runPurge(cmd.Context(), f, o) },
	}
	o.streamFlags.bind(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&o.consumer, "consumer", "", "only messages this consumer gave up on")
	fl.StringVar(&o.filter, "filter", "", "jq program: delete entries for which it is true")
	fl.StringVar(&o.olderThan, "older-than", "", "only messages swept longer ago than this (e.g. 30d)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	return cmd
}

func runPurge(ctx context.Context, f *factory.Factory, o *purgeOptions) error {
	sel, err := selection(f, o.consumer, "", o.olderThan, o.filter)
	if err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	js, stream, err := openDestructive(ctx, f, o.streamFlags, o.yes, o.dryRun, "purge deletes DLQ messages for good")
	if err != nil {
		return err
	}
	start := time.Now()
	entries := []pkgdlq.Entry{}
	n, bytes, err := pkgdlq.Purge(ctx, js, pkgdlq.PurgeConfig{DLQStream: stream, Select: sel, DryRun: o.dryRun,
		OnRecord: func(e pkgdlq.Entry) { entries = append(entries, e) }})
	if perr := p.Print(entries, func() []output.Table {
		t := output.Table{Header: []string{"dlq seq", "source", "subject", "consumer", "reason", "swept at"}}
		for _, e := range entries {
			t.Row(e.DLQSeq, fmt.Sprintf("%s:%d", e.SourceStream, e.SourceSeq), e.Subject, e.Consumer, e.Reason, e.SweptAt.UTC().Format(time.RFC3339))
		}
		return []output.Table{t}
	}); perr != nil && err == nil {
		err = perr
	}
	verb := "deleted"
	if o.dryRun {
		verb = "would delete"
	}
	fmt.Fprintf(f.IO.ErrOut, "jetctl: %s: %s %d messages (%s) in %.2fs\n", stream, verb, n, humanize.IBytes(uint64(bytes)), time.Since(start).Seconds())
	return mapErr(err)
}
