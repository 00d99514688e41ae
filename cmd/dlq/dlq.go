// Package dlq implements `jetctl dlq`: dead letters for messages that hit
// MaxDeliver or were terminated.
package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// NewCmd returns `jetctl dlq`.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "dead-letter queues for messages that hit MaxDeliver or were terminated",
		Long: `JetStream has no dead-letter queue: after MaxDeliver attempts it stops
redelivering, sends an advisory that is lost unless a stream captures it, and
leaves the message where it is. jetctl dlq closes the loop:

  setup    capture the advisories, create the sweep's consumer and the DLQ stream
  sweep    copy each dead message into the DLQ (with provenance headers) and
           remove it from the source where the retention policy calls for it
  ls/show  inspect the DLQ
  redrive  send messages back to their original subject, at a rate
  purge    delete DLQ messages
  take     take one held message out of one consumer's way, into the DLQ
  unlock   remove the lease a dead sweep or redrive left on another host

Commands that move or delete messages (sweep --delete-source, redrive,
purge, take) need --yes when not run in a terminal, and all have --dry-run.
See docs/dlq.md for the headers and the guarantees.`,
		Example: `  jetctl dlq setup --stream ORDERS --consumer billing
  jetctl dlq sweep --stream ORDERS
  jetctl dlq ls --stream ORDERS --summary
  jetctl dlq redrive --stream ORDERS --filter '.consumer == "billing"' --rate 50/s --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdSetup(f), newCmdSweep(f), newCmdLs(f), newCmdShow(f), newCmdRedrive(f), newCmdPurge(f), newCmdTake(f), newCmdUnlock(f))
	return cmd
}

// openDestructive asks for confirmation (unless a dry run), connects and
// finds the one DLQ stream the flags name: the start of every command that
// changes a DLQ.
func openDestructive(ctx context.Context, f *factory.Factory, sf streamFlags, yes, dryRun bool, what string) (jetstream.JetStream, string, error) {
	if err := sf.validate(); err != nil {
		return nil, "", err
	}
	if !dryRun {
		if err := f.IO.ConfirmChange(yes, what); err != nil {
			return nil, "", err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return nil, "", err
	}
	stream, err := oneDLQ(ctx, js, sf)
	if err != nil {
		return nil, "", err
	}
	return js, stream, nil
}

// filterFlag compiles --filter for DLQ entries.
func filterFlag(f *factory.Factory, expr string) (func(pkgdlq.Entry) bool, error) {
	filter, err := output.CompileFilter(expr, "DLQ messages it fails on")
	if err != nil || filter == nil {
		return nil, err
	}
	warn := filter.WarnOnce(f.IO.ErrOut)
	return func(e pkgdlq.Entry) bool {
		keep, err := filter.Keep(f.Context(), nil, func() (any, error) { return e.Generic(), nil })
		if err != nil {
			warn(fmt.Sprintf("DLQ seq %d", e.DLQSeq), err)
		}
		return keep
	}, nil
}

// unknownConsumer is the answer when --consumer selected nothing: exit 3
// when the source stream has no such consumer either (a typo, or a ghost),
// nil when it exists and merely has no dead letters.
func unknownConsumer(ctx context.Context, js jetstream.JetStream, dlqStream, consumer string) error {
	if consumer == "" {
		return nil
	}
	st, err := js.Stream(ctx, dlqStream)
	if err != nil {
		return nil
	}
	source := st.CachedInfo().Config.Metadata[pkgdlq.MetaSource]
	if source == "" {
		return nil
	}
	if _, err := js.Consumer(ctx, source, consumer); errors.Is(err, jetstream.ErrConsumerNotFound) {
		return exitcode.Newf(exitcode.NotFound, "stream %q: consumer %q not found, and %s holds no messages of it", source, consumer, dlqStream)
	}
	return nil
}

// plural says "1 message" or "2 messages", digits as they are.
func plural(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, english.PluralWord(n, one, many))
}

// listFlags choose between a summary (the default in a table) and one
// record per message: sweep, redrive, purge and ls share the rule.
type listFlags struct {
	list    bool
	summary bool
}

func (l *listFlags) bind(cmd *cobra.Command, records string) {
	cmd.Flags().BoolVar(&l.list, "list", false, "print one row per "+records+" (the default with -o json, jsonl or yaml)")
	cmd.Flags().BoolVar(&l.summary, "summary", false, "print the summary only, in the chosen format (the default in a table)")
}

// records reports whether the command prints one record per message:
// with --list, or with -o json|jsonl|yaml (or --jq) unless --summary.
func (l listFlags) records(p *output.Printer) (bool, error) {
	if l.list && l.summary {
		return false, exitcode.UsageErrorf("--list and --summary exclude each other")
	}
	return l.list || (!l.summary && p.Format != "table"), nil
}

// streamFlags select a DLQ: by source stream or by DLQ stream name.
type streamFlags struct {
	stream    string
	dlqStream string
}

// validate refuses names the server would refuse, before connecting.
func (s streamFlags) validate() error {
	for _, f := range []struct{ flag, name string }{{"--stream", s.stream}, {"--dlq-stream", s.dlqStream}} {
		if f.name == "" {
			continue
		}
		if err := jsapi.ValidateStreamName(f.name); err != nil {
			return exitcode.UsageErrorf("%s: %v", f.flag, err)
		}
	}
	return nil
}

func (s *streamFlags) bind(cmd *cobra.Command, f *factory.Factory) {
	cmd.Flags().StringVar(&s.stream, "stream", "", "the source stream whose DLQ to use")
	cmd.Flags().StringVar(&s.dlqStream, "dlq-stream", "", "the DLQ stream (default: the one setup made for --stream)")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("dlq-stream", f.CompleteStreams())
}
