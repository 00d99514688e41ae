package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
)

type waitOptions struct {
	caughtUp     bool
	pendingBelow uint64
	ackFloor     uint64
	wait         time.Duration
	health       HealthFlags
}

func newCmdWait(f *factory.Factory) *cobra.Command {
	o := &waitOptions{}
	cmd := &cobra.Command{
		Use:   "wait STREAM CONSUMER (--caught-up | --pending-below N | --ack-floor SEQ) [--wait D]",
		Short: "wait until a consumer has caught up, for CI and runbooks",
		Long: `Wait until a consumer meets one condition, polling its state lightly
(every 250ms at first, then every second); nothing is consumed or changed.

  --caught-up         everything the stream held matching the consumer's
                      filter when the wait began has been acknowledged
                      (the ack floor reached the last such message), or
                      nothing is unprocessed or pending acknowledgement
  --pending-below N   unprocessed plus ack pending messages below N
  --ack-floor SEQ     the ack floor reached stream sequence SEQ

Exactly one condition is required. Exit 0 when it is met, 5 when --wait
runs out first, 3 when the stream or consumer does not exist or the
consumer is deleted while waiting. Without --wait it waits until met or
interrupted: give CI jobs a --wait. On a terminal, progress goes to
stderr; the state that met the condition goes to stdout. A server
restart or leader election does not end the wait: a request not
answered within --timeout is made again at the next poll.`,
		Example: `  jetctl consumer wait ORDERS projector --caught-up --wait 5m
  jetctl consumer wait ORDERS billing --pending-below 100 --wait 10m
  jetctl consumer wait ORDERS audit --ack-floor 15000 -o json`,
		Args:              streamConsumerArgs,
		ValidArgsFunction: completeStreamConsumer(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, wait, err := o.config(cmd, args)
			if err != nil {
				return err
			}
			return runWait(cmd.Context(), f, cfg, wait)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.caughtUp, "caught-up", false, "wait until everything the stream held (matching the filter) at the start is acknowledged")
	fs.Uint64Var(&o.pendingBelow, "pending-below", 0, "wait until unprocessed plus ack pending messages are below N")
	fs.Uint64Var(&o.ackFloor, "ack-floor", 0, "wait until the ack floor reaches stream sequence SEQ")
	factory.DurationVar(fs, &o.wait, "wait", 0, "give up after this long with exit 5 (30s, 5m, 1h); default: wait until met or interrupted").Positive()
	o.health.Bind(fs)
	return cmd
}

// config turns flags and arguments into a WaitConfig, before connecting.
func (o *waitOptions) config(cmd *cobra.Command, args []string) (pkgconsumer.WaitConfig, time.Duration, error) {
	cfg := pkgconsumer.WaitConfig{Stream: args[0], Consumer: args[1], CaughtUp: o.caughtUp, Thresholds: o.health.Thresholds(), Fixed: o.health.Fixed()}
	if cmd.Flags().Changed("pending-below") {
		if o.pendingBelow == 0 {
			return cfg, 0, exitcode.UsageErrorf("--pending-below 0 can never be met (nothing is below 0): to wait until nothing is pending, use --pending-below 1")
		}
		cfg.PendingBelow = &o.pendingBelow
	}
	if cmd.Flags().Changed("ack-floor") {
		cfg.AckFloor = &o.ackFloor
	}
	if _, err := cfg.Condition(); err != nil {
		return cfg, 0, exitcode.New(exitcode.Usage, err)
	}
	return cfg, o.wait, nil
}

func runWait(ctx context.Context, f *factory.Factory, cfg pkgconsumer.WaitConfig, wait time.Duration) error {
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var last pkgconsumer.WaitProgress
	progress := f.IO.StderrTTY
	cfg.Progress = func(wp pkgconsumer.WaitProgress) {
		last = wp
		if progress {
			fmt.Fprintf(f.IO.ErrOut, "\r\x1b[Kwaiting for %s > %s: %s", cfg.Stream, cfg.Consumer, describe(wp))
		}
	}
	res, err := pkgconsumer.Wait(waitCtx, js, cfg)
	if progress && (last.State != nil || last.Unanswered != nil) {
		fmt.Fprint(f.IO.ErrOut, "\r\x1b[K")
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && wait > 0 && ctx.Err() == nil {
			cond, _ := cfg.Condition()
			msg := fmt.Sprintf("stream %q: consumer %q: --wait %s expired before %s", cfg.Stream, cfg.Consumer, wait, cond)
			if last.State != nil || last.Unanswered != nil {
				msg += " (" + describe(last) + ")"
			}
			return exitcode.Newf(exitcode.Timeout, "%s", msg)
		}
		return err
	}
	ThresholdWarnings(f.IO.ErrOut, []*pkgconsumer.State{res.State})
	return p.Print(res, func() []output.Table {
		t := output.Table{Header: []string{"stream", "consumer", "condition", "ack floor", "unprocessed", "ack pending", "waited", "health"}}
		s := res.State
		t.Row(res.Stream, res.Consumer, res.Condition+" met", s.AckFloorStreamSeq, humanize.Comma(int64(s.Unprocessed)), s.AckPending, res.Waited, string(s.Health))
		return []output.Table{t}
	})
}

// describe says where a wait stands, in a line.
func describe(wp pkgconsumer.WaitProgress) string {
	var out string
	if s := wp.State; s != nil {
		floor := fmt.Sprintf("ack floor %d", s.AckFloorStreamSeq)
		if wp.Target > 0 {
			floor += fmt.Sprintf(" of %d", wp.Target)
		}
		out = fmt.Sprintf("%s, %s unprocessed, %d ack pending", floor, humanize.Comma(int64(s.Unprocessed)), s.AckPending)
	}
	if wp.Unanswered != nil {
		if out != "" {
			out += "; "
		}
		out += "the server is not answering: " + wp.Unanswered.Error()
	}
	return out
}
