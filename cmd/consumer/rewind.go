package consumer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
)

// resetAPIEnv turns the consumer reset API off (value "off"), forcing the
// recreate path that servers before 2.14 need: for tests and for servers
// that report a version they do not have.
const resetAPIEnv = "JETCTL_CONSUMER_RESET_API"

type rewindOptions struct {
	toSeq      uint64
	toTime     time.Time
	toTimeFlag *factory.TimeValue
	toStart    bool
	dryRun     bool
	yes        bool
}

func newCmdRewind(f *factory.Factory) *cobra.Command {
	o := &rewindOptions{}
	cmd := &cobra.Command{
		Use:   "rewind STREAM CONSUMER --to-seq N | --to-time T | --to-start",
		Short: "make a durable consumer deliver again from a sequence, a time or the start",
		Long: `Move a durable consumer back (or forward) so that it delivers again from a
stream sequence (--to-seq), the first message at or after a time
(--to-time, RFC 3339), or the stream's first message (--to-start): the way
to rebuild a projection.

On servers with the consumer reset API (2.14+) the consumer stays as it is
and only its delivery state moves. Otherwise, or when the consumer's
deliver policy (new, last) does not allow the reset, jetctl deletes the
durable and creates it again with its exact config and a start sequence
(or start time), and says so; it records the consumer to create on the
stream first, and on an interest stream a holder consumer keeps the
messages meanwhile, so that a run killed in between is finished by the
same command run again. Set JETCTL_CONSUMER_RESET_API=off to force the
recreate path.

Messages pending acknowledgement are forgotten: everything from the start
sequence on is delivered again, including what was already acknowledged.
rewind refuses (exit 3, nothing changed) when the messages to redeliver are
gone: a workqueue stream deleted them when they were acknowledged, or
limits or a purge removed the start of the stream; it names the earliest
sequence it can start from instead.

Safety: needs --yes when not run in a terminal; --dry-run says how many
messages would be delivered again and how, and changes nothing.`,
		Example: `  jetctl consumer rewind ORDERS projector --to-start --dry-run
  jetctl consumer rewind ORDERS projector --to-seq 1200 --yes
  jetctl consumer rewind ORDERS projector --to-time 2026-11-29T02:10:00Z --yes -o json`,
		Args:              streamConsumerArgs,
		ValidArgsFunction: completeStreamConsumer(f),
		RunE:              func(cmd *cobra.Command, args []string) error { return runRewind(cmd.Context(), f, o, args[0], args[1]) },
	}
	fl := cmd.Flags()
	fl.Uint64Var(&o.toSeq, "to-seq", 0, "deliver again from this stream sequence")
	o.toTimeFlag = factory.TimeVar(fl, &o.toTime, "to-time", "deliver again from the first message at or after this time (RFC 3339)").
		Hint("use an RFC 3339 time such as 2026-11-29T02:10:00Z")
	fl.BoolVar(&o.toStart, "to-start", false, "deliver again from the stream's first message")
	fl.BoolVar(&o.dryRun, "dry-run", false, "say what would be delivered again; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask before rewinding (needed when not in a terminal)")
	return cmd
}

// config checks the flags, before anything is contacted.
func (o *rewindOptions) config(f *factory.Factory, stream, consumer string, now time.Time) (pkgconsumer.RewindConfig, error) {
	cfg := pkgconsumer.RewindConfig{Stream: stream, Consumer: consumer, ToSeq: o.toSeq, ToStart: o.toStart, DryRun: o.dryRun}
	toTimeGiven := o.toTimeFlag.String() != ""
	n := 0
	for _, set := range []bool{o.toSeq > 0, toTimeGiven, o.toStart} {
		if set {
			n++
		}
	}
	if n != 1 {
		return cfg, exitcode.UsageErrorf("give exactly one of --to-seq N (at least 1), --to-time T or --to-start")
	}
	if toTimeGiven {
		if o.toTime.After(now) {
			return cfg, exitcode.UsageErrorf("--to-time %s is in the future", o.toTimeFlag)
		}
		cfg.ToTime = o.toTime
	}
	switch v := strings.ToLower(f.Getenv(resetAPIEnv)); v {
	case "", "on", "auto":
	case "off":
		cfg.Method = pkgconsumer.RewindRecreate
	default:
		return cfg, exitcode.UsageErrorf("invalid %s=%q: use off (or leave it unset)", resetAPIEnv, v)
	}
	return cfg, nil
}

func runRewind(ctx context.Context, f *factory.Factory, o *rewindOptions, stream, consumer string) error {
	cfg, err := o.config(f, stream, consumer, time.Now())
	if err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	if !o.dryRun {
		if err := f.IO.ConfirmChange(o.yes, fmt.Sprintf("rewind redelivers %s > %s's messages from the target on, acknowledged ones included", stream, consumer)); err != nil {
			return err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	cfg.AtStep = factory.KillAt(ctx, f)
	res, err := pkgconsumer.Rewind(ctx, js, cfg)
	if err != nil {
		return err
	}
	auditRewind(ctx, f, res)
	if p.Format != "table" || f.Output.JQ != "" {
		return p.Print(res, nil)
	}
	how := "with the consumer reset API"
	if res.Finished {
		verb := "finished rewinding"
		if res.DryRun {
			verb = "dry run: would finish rewinding"
		}
		fmt.Fprintf(f.IO.Out, "%s %s > %s to seq %d, the recreate a killed run began (from what it recorded on the stream): %s to deliver\n",
			verb, stream, consumer, res.StartSeq, english.Plural(int(res.Redeliver), "message", "messages"))
		return nil
	}
	if res.Method == pkgconsumer.RewindRecreate {
		start := "a start sequence"
		if !cfg.ToTime.IsZero() {
			start = "a start time" // as pkg/consumer recreates for --to-time
		}
		how = "by recreating the durable with " + start + " (" + res.Reason + ")"
	}
	if res.DryRun {
		fmt.Fprintf(f.IO.Out, "dry run: %s > %s would deliver %s again from seq %d (delivered up to seq %d, ack floor %d), %s; nothing was changed\n",
			stream, consumer, english.Plural(int(res.Redeliver), "message", "messages"), res.StartSeq, res.DeliveredBefore, res.AckFloorBefore, strings.Replace(how, "recreating", "deleting and recreating", 1))
		return nil
	}
	fmt.Fprintf(f.IO.Out, "rewound %s > %s to seq %d %s: %s to deliver (was delivered up to seq %d, ack floor %d)\n",
		stream, consumer, res.StartSeq, how, english.Plural(int(res.Redeliver), "message", "messages"), res.DeliveredBefore, res.AckFloorBefore)
	return nil
}

// auditRewind records a rewind that was made (not a dry run).
func auditRewind(ctx context.Context, f *factory.Factory, res *pkgconsumer.RewindResult) {
	if res.DryRun {
		return
	}
	summary := fmt.Sprintf("rewound to seq %d with the consumer %s: %s to deliver", res.StartSeq, res.Method, english.Plural(int(res.Redeliver), "message", "messages"))
	switch {
	case res.Finished:
		summary = fmt.Sprintf("finished rewinding to seq %d (the recreate a killed run began): %s to deliver", res.StartSeq, english.Plural(int(res.Redeliver), "message", "messages"))
	case res.Method == pkgconsumer.RewindRecreate:
		summary = fmt.Sprintf("rewound to seq %d by recreating the durable (%s): %s to deliver", res.StartSeq, res.Reason, english.Plural(int(res.Redeliver), "message", "messages"))
	case res.Method == pkgconsumer.RewindReset:
		summary = fmt.Sprintf("rewound to seq %d with the consumer reset API: %s to deliver", res.StartSeq, english.Plural(int(res.Redeliver), "message", "messages"))
	}
	auditlog.Write(ctx, f, audit.Change{Stream: res.Stream, Consumer: res.Consumer, Action: "rewind", Summary: summary,
		Counts: map[string]int64{
			"start_seq":                   int64(res.StartSeq),
			"redeliver":                   int64(res.Redeliver),
			"delivered_stream_seq_before": int64(res.DeliveredBefore),
			"ack_floor_stream_seq_before": int64(res.AckFloorBefore),
		}})
}
