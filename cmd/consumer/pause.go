package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
)

// pauseIndefinitely is how far ahead "until resumed" is: the pause API
// takes a time.
const pauseIndefinitely = 100 * 365 * 24 * time.Hour

type pauseOptions struct {
	until     time.Time
	untilFlag *factory.TimeValue
	dur       time.Duration
	dryRun    bool
}

func newCmdPause(f *factory.Factory) *cobra.Command {
	o := &pauseOptions{}
	cmd := &cobra.Command{
		Use:   "pause STREAM CONSUMER [--until T | --for D]",
		Short: "stop a consumer's deliveries until a time, or until resumed",
		Long: `Pause a consumer with the server's pause API: the server delivers nothing
from it until the time given (--until, RFC 3339, or --for a duration from
now), or, with neither, until "jetctl consumer resume". Messages keep
arriving in the stream, and acks for messages already delivered still
count. consumer explain reports a paused consumer. --dry-run checks the
consumer exists and says what the pause would be, changing nothing.

pause does not ask for confirmation (resume undoes it): --yes is
accepted, as by every changing command, and changes nothing.`,
		Example: `  jetctl consumer pause ORDERS billing --for 30m --dry-run
  jetctl consumer pause ORDERS billing --for 30m
  jetctl consumer pause ORDERS billing --until 2026-11-30T06:00:00Z
  jetctl consumer resume ORDERS billing`,
		Args:              streamConsumerArgs,
		ValidArgsFunction: completeStreamConsumer(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPause(cmd.Context(), f, o, args[0], args[1], time.Now())
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

func (o *pauseOptions) bind(fs *pflag.FlagSet) {
	o.untilFlag = factory.TimeVar(fs, &o.until, "until", "pause until this time (RFC 3339)")
	factory.DurationVar(fs, &o.dur, "for", 0, "pause for this long (e.g. 30m, 2h, 1d)").Positive()
	fs.BoolVar(&o.dryRun, "dry-run", false, "say what the pause would be; change nothing")
	factory.AcceptedYes(fs)
}

func newCmdResume(f *factory.Factory) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "resume STREAM CONSUMER",
		Short: "let a paused consumer deliver again",
		Long: `Resume a paused consumer at once. Resuming a consumer that is not paused
changes nothing. --dry-run checks the consumer exists, changing nothing.
resume does not ask for confirmation: --yes is accepted, as by every
changing command, and changes nothing.`,
		Example: `  jetctl consumer resume ORDERS billing --dry-run
  jetctl consumer resume ORDERS billing`,
		Args:              streamConsumerArgs,
		ValidArgsFunction: completeStreamConsumer(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			st, err := pkgconsumer.Resume(cmd.Context(), js, args[0], args[1], dryRun)
			if err != nil {
				return err
			}
			auditPause(cmd.Context(), f, st, false)
			return printPause(f, p.Format, st, false, func() error { return p.Print(st, nil) })
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check the consumer exists; change nothing")
	factory.AcceptedYes(cmd.Flags())
	return cmd
}

// pauseUntil turns --until or --for into a time, before anything is
// contacted; the flags themselves parsed the values. indefinite: neither
// was given, the pause lasts until resumed.
func (o *pauseOptions) pauseUntil(now time.Time) (until time.Time, indefinite bool, err error) {
	given := o.untilFlag.String() != ""
	switch {
	case given && o.dur > 0:
		return time.Time{}, false, exitcode.UsageErrorf("--until and --for exclude each other")
	case given:
		if !o.until.After(now) {
			return time.Time{}, false, exitcode.UsageErrorf("--until %s is not in the future", o.untilFlag)
		}
		return o.until, false, nil
	case o.dur > 0:
		return now.Add(o.dur), false, nil
	}
	return now.Add(pauseIndefinitely), true, nil
}

func runPause(ctx context.Context, f *factory.Factory, o *pauseOptions, stream, consumer string, now time.Time) error {
	until, indefinite, err := o.pauseUntil(now)
	if err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	st, err := pkgconsumer.Pause(ctx, js, stream, consumer, until, o.dryRun)
	if err != nil {
		return err
	}
	auditPause(ctx, f, st, indefinite)
	return printPause(f, p.Format, st, indefinite, func() error { return p.Print(st, nil) })
}

// auditPause records a pause, or a resume of a paused consumer: what
// changed the server (a dry run and a resume of a consumer that was not
// paused did not).
func auditPause(ctx context.Context, f *factory.Factory, st *pkgconsumer.PauseState, indefinite bool) {
	if st.DryRun || (!st.Paused && !st.WasPaused) {
		return
	}
	c := audit.Change{Stream: st.Stream, Consumer: st.Consumer, Action: "resume", Summary: "resumed: it delivers again"}
	if st.Paused {
		c.Action, c.Summary = "pause", "paused until resumed"
		if !indefinite && st.PauseUntil != nil {
			c.Summary = "paused until " + st.PauseUntil.UTC().Format(time.RFC3339)
		}
	}
	auditlog.Write(ctx, f, c)
}

// printPause says what a pause or resume did; indefinite: a pause until
// resumed (the server keeps a time a century ahead).
func printPause(f *factory.Factory, format string, st *pkgconsumer.PauseState, indefinite bool, print func() error) error {
	if format != "table" || f.Output.JQ != "" {
		return print()
	}
	end := "resumed"
	if !indefinite && st.PauseUntil != nil {
		end = st.PauseUntil.UTC().Format(time.RFC3339)
	}
	switch {
	case st.DryRun && !st.Paused && st.WasPaused:
		fmt.Fprintf(f.IO.Out, "dry run: %s > %s would deliver again (resumed at once)\n", st.Stream, st.Consumer)
	case st.DryRun && !st.Paused:
		fmt.Fprintf(f.IO.Out, "dry run: %s > %s is not paused: nothing would change\n", st.Stream, st.Consumer)
	case st.DryRun:
		fmt.Fprintf(f.IO.Out, "dry run: %s > %s would be paused until %s\n", st.Stream, st.Consumer, end)
	case !st.Paused && st.WasPaused:
		fmt.Fprintf(f.IO.Out, "%s > %s resumed: it delivers again\n", st.Stream, st.Consumer)
	case !st.Paused:
		fmt.Fprintf(f.IO.Out, "%s > %s was not paused: nothing changed, it delivers\n", st.Stream, st.Consumer)
	case indefinite:
		fmt.Fprintf(f.IO.Out, "%s > %s paused until resumed (jetctl consumer resume %s %s)\n", st.Stream, st.Consumer, st.Stream, st.Consumer)
	default:
		fmt.Fprintf(f.IO.Out, "%s > %s paused until %s\n", st.Stream, st.Consumer, end)
	}
	return nil
}
