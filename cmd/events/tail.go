package events

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/tailflags"
	pkgevents "github.com/jetctl/jetctl/pkg/events"
)

type tailOptions struct {
	sel  selectFlags
	tail tailflags.Flags
}

// errCountReached ends a tail that has seen --count events: a success.
var errCountReached = errors.New("count reached")

func newCmdTail(f *factory.Factory) *cobra.Command {
	o := &tailOptions{}
	cmd := &cobra.Command{
		Use:   "tail [--stream S [--consumer C]] [--type T]... [--filter JQ] [--count N] [--wait D]",
		Short: "follow the recorded events as JSON lines, optionally until a condition is met",
		Long: `Print the events the recorder stores from now on (or from --since D or
--from-time T) as JSON lines, in the shape of "jetctl events timeline -o
jsonl". --stream, --consumer, --type and --filter select events as for the
timeline; --jq transforms each one; --raw prints the advisory or audit
record alone.

--count N stops after N matching events with exit 0; --wait D gives up after
D with exit 5. Together they make a CI gate, such as "wait until the
stream's leader is elected". Without --count, --wait bounds the tail: it
stops after D, exit 0 when at least one event matched, 5 when none did.
Connecting is bounded by --timeout, not --wait: a server that cannot be
reached is exit 1. Without a recorder the tail is exit 3.`,
		Example: `  jetctl events tail
  jetctl events tail --stream ORDERS --type stream_leader_elected --count 1 --wait 2m
  jetctl events tail --stream ORDERS --consumer billing --type max_deliveries --jq .seq
  jetctl events tail --type audit --filter '.user == "alice"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runTail(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	o.sel.bind(cmd, f, fl)
	o.tail.Bind(fl, "matching events", "advisories and audit records")
	return cmd
}

func runTail(ctx context.Context, f *factory.Factory, o *tailOptions) error {
	cfg, err := o.sel.config(ctx, f.IO.ErrOut)
	if err != nil {
		return err
	}
	cfg.New = cfg.From.IsZero()
	if err := o.tail.Validate(); err != nil {
		return err
	}
	if err := cfg.Validate(timeNow()); err != nil {
		return err
	}
	p, err := f.Printer("jsonl")
	if err != nil {
		return err
	}
	if err := p.RequireLines("events tail"); err != nil {
		return err
	}

	parent := ctx
	ctx, stop := o.tail.WithWait(ctx)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	js, err := tailflags.JetStream(parent, f)
	if err != nil {
		return err
	}
	w := output.NewLineWriter(f.IO.Out)
	defer w.Close()
	p.Out = w
	matched := 0
	err = pkgevents.Follow(ctx, js, cfg, func(e *pkgevents.Event) error {
		var werr error
		switch {
		case o.tail.Raw && e.Audit != nil:
			_, werr = w.Write(tailflags.Line(nil, e.Audit))
		case o.tail.Raw:
			_, werr = w.Write(tailflags.Line(nil, e.Advisory))
		case f.Output.JQ != "":
			werr = p.Item(e)
		default:
			_, werr = w.Write(e.AppendJSON(nil))
		}
		if werr != nil {
			return werr
		}
		matched++
		if o.tail.Count > 0 && matched >= o.tail.Count {
			cancel(errCountReached)
		}
		return nil
	})
	if errors.Is(context.Cause(ctx), errCountReached) {
		return nil
	}
	resource := "events"
	if cfg.Stream != "" {
		resource = "events of stream \"" + cfg.Stream + "\""
	}
	return o.tail.End(parent, ctx, err, tailflags.Messages, resource, matched)
}
