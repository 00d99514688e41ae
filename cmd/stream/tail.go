package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/streamflags"
	"github.com/jetctl/jetctl/cmd/tailflags"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/replay"
)

type tailOptions struct {
	rng    streamflags.Range
	filter string
	tail   tailflags.Flags
}

// errCountReached ends a tail that has seen --count matches: a success.
var errCountReached = errors.New("count reached")

func newCmdTail(f *factory.Factory) *cobra.Command {
	o := &tailOptions{}
	cmd := &cobra.Command{
		Use:   "tail STREAM",
		Short: "follow a stream's messages as JSON lines, optionally until a condition is met",
		Long: `Print a stream's new messages as JSON lines (the format of "jetctl replay") as
they arrive, or start in the past with --since, --from-seq or --last N.
Reading never consumes or changes the stream.

data is the payload's JSON document when it is JSON, else its text (as for
every command: docs/output.md). --filter keeps the messages for which a jq
program is true; --jq transforms each one; --raw prints payloads.
A --jq or --filter program that fails on a message skips it, with one
warning naming its sequence. -o jsonl (default) and -o json print JSON
lines; -o table and -o yaml are refused.

--count N stops after N matching messages with exit 0; --wait D gives up
after D with exit 5, also when it runs out before the first message was
read. Together they make the CI primitive "wait until this event shows
up". Without --count, --wait bounds the tail: it stops after D, exit 0
when at least one message matched, 5 when none did. Connecting is bounded
by --timeout, not --wait: a server that cannot be reached is exit 1.`,
		Example: `  jetctl stream tail ORDERS
  jetctl stream tail ORDERS --subject 'orders.failed' --since 10m
  jetctl stream tail ORDERS --filter '.data.order_id == "ord-00042"' --count 1 --wait 2m
  jetctl stream tail ORDERS --last 5 --jq '.data.status'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.UsageErrorf("stream tail takes one STREAM")
			}
			return nil
		},
		ValidArgsFunction: f.CompleteStreams(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTail(cmd.Context(), f, o, args[0])
		},
	}
	fl := cmd.Flags()
	o.rng.Bind(fl, false)
	fl.StringVar(&o.filter, "filter", "", "jq program: keep messages for which it is true")
	o.tail.Bind(fl, "matching messages", "payloads")
	return cmd
}

func runTail(ctx context.Context, f *factory.Factory, o *tailOptions, stream string) error {
	cfg, err := o.rng.Config(stream)
	if err != nil {
		return err
	}
	if err := o.tail.Validate(); err != nil {
		return err
	}
	skips := streamflags.NewSkips(f.IO.ErrOut)
	filter, err := streamflags.MessageFilter(ctx, o.filter, skips)
	if err != nil {
		return err
	}
	p, err := f.Printer("jsonl")
	if err != nil {
		return err
	}
	if err := p.RequireLines("stream tail"); err != nil {
		return err
	}
	cfg.Follow = true
	cfg.New = !o.rng.Starts()

	parent := ctx
	ctx, stop := o.tail.WithWait(ctx)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	js, err := tailflags.JetStream(parent, f)
	if err != nil {
		return err
	}

	var format func([]byte, *envelope.Message) ([]byte, error)
	switch {
	case o.tail.Raw:
		format = streamflags.RawFormat
	case f.Output.JQ != "":
		format = streamflags.JQFormat(p, skips)
	}
	lines := replay.NewLineSink(f.IO.Out, format)
	matched := 0
	sink := &flushingSink{LineSink: lines, after: func() {
		matched++
		if o.tail.Count > 0 && matched >= o.tail.Count {
			cancel(errCountReached)
		}
	}}
	_, err = replay.Run(ctx, js, replay.Config{Range: cfg, Sink: sink, Filter: filter})
	if errors.Is(context.Cause(ctx), errCountReached) {
		return nil
	}
	return o.tail.End(parent, ctx, err, tailflags.Messages, fmt.Sprintf("stream %q", stream), matched)
}

// flushingSink writes each line at once: a tail is read by people and by
// scripts waiting for the line.
type flushingSink struct {
	*replay.LineSink
	after func()
}

func (s *flushingSink) Write(ctx context.Context, m *envelope.Message) error {
	if err := s.LineSink.Write(ctx, m); err != nil {
		return err
	}
	if err := s.LineSink.Close(ctx); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	s.after()
	return nil
}
