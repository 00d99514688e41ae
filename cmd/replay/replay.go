// Package replay implements `jetctl replay STREAM` in the shape flags → Config
// → pkg/replay.Run → render: flags.go turns the flags into a replay.Config,
// replay.go runs it, render.go prints the summary and the dry run.
package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/streamflags"
	"github.com/jetctl/jetctl/pkg/audit"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/replay"
)

type options struct {
	streamflags.Range
	to           string
	toServer     string
	toContext    string
	noProvenance bool
	newMsgID     bool
	ttl          string
	ttlMode      envelope.TTLMode
	markers      string
	markersMode  replay.MarkersMode
	toFile       string
	fromFile     string
	raw          bool
	filter       string
	rate         float64
	pace         string
	speed        float64
	maxGap       time.Duration
	checkpoint   string
	dryRun       bool
	noProgress   bool
	maxInFlight  int
	skips        *streamflags.Skips
}

// NewCmd returns `jetctl replay`.
func NewCmd(f *factory.Factory) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:     "replay STREAM",
		Short:   "read a range of a stream as JSON lines, to a file, or republished to a subject",
		Long:    longHelp,
		Example: examples,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.fromFile != "" {
				if len(args) != 0 {
					return exitcode.UsageErrorf("--from-file reads a dump: give no STREAM")
				}
				return nil
			}
			if len(args) != 1 {
				return exitcode.UsageErrorf("replay takes one STREAM (or --from-file FILE)")
			}
			return nil
		},
		ValidArgsFunction: f.CompleteStreams(),
		RunE: func(cmd *cobra.Command, args []string) error {
			stream := ""
			if len(args) == 1 {
				stream = args[0]
			}
			return run(cmd.Context(), f, o, stream)
		},
	}
	fl := cmd.Flags()
	o.Range.Bind(fl, true)
	fl.StringVar(&o.to, "to", "", "republish to this subject ('{subject}' template or 'prefix.>' mapping)")
	fl.StringVar(&o.toServer, "to-server", "", "republish to this server instead (URLs)")
	fl.StringVar(&o.toContext, "to-context", "", "republish through this natscli context instead")
	fl.BoolVar(&o.noProvenance, "no-provenance", false, "do not add Jetctl-Source-* headers to copies")
	fl.BoolVar(&o.newMsgID, "new-msg-id", false, "copy again on purpose: message ids of this run's own, not deduplicated against earlier copies")
	fl.StringVar(&o.ttl, "ttl", "", `what a copy does with the original's Nats-TTL: "remaining" (what is left of it; a message whose TTL has passed is skipped), "keep" (the whole TTL again) or "drop" (none) (default remaining)`)
	fl.StringVar(&o.markers, "markers", "", `subject delete markers: "skip" them or "keep" them (default skip, keep when the target is a KV bucket's stream)`)
	fl.StringVar(&o.toFile, "to-file", "", "write the JSON lines to this file")
	fl.StringVar(&o.fromFile, "from-file", "", "read messages from a JSON-lines dump instead of a stream")
	fl.BoolVar(&o.raw, "raw", false, "print payloads only, one a line")
	fl.StringVar(&o.filter, "filter", "", "jq program: keep messages for which it is true")
	factory.RateVar(fl, &o.rate, "rate", "at most this many messages per second (e.g. 500/s)")
	fl.StringVar(&o.pace, "pace", "", `"original" reproduces the messages' original timing`)
	fl.Float64Var(&o.speed, "speed", 1, "with --pace original: play this many times faster")
	factory.DurationVar(fl, &o.maxGap, "max-gap", 0, "with --pace original: never wait longer than this between messages (90s, 5m, 2d)")
	fl.StringVar(&o.checkpoint, "checkpoint", "", "record progress in FILE and resume from it")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the resolved range, counts and bytes per subject; publish and write nothing")
	factory.AcceptedYes(fl)
	fl.BoolVar(&o.noProgress, "no-progress", false, "no progress bar on stderr")
	fl.IntVar(&o.maxInFlight, "max-in-flight", 1024, "unacknowledged publishes at most, when republishing")
	_ = cmd.RegisterFlagCompletionFunc("ttl", cobra.FixedCompletions(envelope.TTLModes, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("markers", cobra.FixedCompletions(replay.MarkersModes, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func run(ctx context.Context, f *factory.Factory, o *options, stream string) error {
	// Everything that can be checked without a server is checked first.
	if err := o.validate(); err != nil {
		return err
	}
	cfg, err := o.config(ctx, f, stream)
	if err != nil {
		return err
	}
	p, err := o.printer(f)
	if err != nil {
		return err
	}
	cfg.Sink = o.lineSink(f, p)
	if err := cfg.Check(); err != nil {
		return err
	}
	// A dump is read whole before anything is published: a bad line is
	// exit 2 naming it, with nothing sent.
	if o.fromFile != "" {
		file, info, err := openDump(ctx, o.fromFile)
		if err != nil {
			return err
		}
		defer file.Close()
		cfg.Dump, cfg.DumpName, cfg.DumpInfo = file, o.fromFile, info
	}
	// Another cluster's context is resolved before connecting anywhere.
	var target *natsconn.Resolved
	if o.to != "" && (o.toServer != "" || o.toContext != "") {
		if target, err = natsconn.Resolve(natsconn.Options{Server: o.toServer, Context: o.toContext, Timeout: f.Conn.Timeout}); err != nil {
			return err
		}
	}

	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	if target != nil {
		nc, err := target.Connect(ctx, "jetctl-replay-target")
		if err != nil {
			return err
		}
		defer nc.Close()
		if cfg.Target, err = target.JetStream(nc); err != nil {
			return err
		}
	}
	var bar *progress
	started := false
	cfg.Started = func(sum replay.Summary) { started, bar = true, newProgress(f, o, sum) }
	cfg.Progress = func(sum replay.Summary) { bar.update(sum) }
	sum, err := replay.Run(ctx, js, cfg)
	bar.finish()
	if !started {
		return err
	}
	if o.dryRun {
		if perr := printDryRun(p, sum, o.to != ""); perr != nil && err == nil {
			err = perr
		}
	}
	printSummary(f, o, sum)
	if perr := printRepublishJSON(f, o, p, sum); perr != nil && err == nil {
		err = perr
	}
	err = outcome(o.to != "", sum, err)
	auditRepublish(ctx, f, o, stream, sum, err)
	return err
}

// outcome is the exit of a finished run: a republish that stored nothing
// failed; one that stored some, partly. Copies left unconfirmed when the run
// was not interrupted (the target stopped acknowledging, and the wait for
// it ended) are not known to be stored: that is partial too, never success.
func outcome(republish bool, sum replay.Summary, err error) error {
	partial := exitcode.Partial
	if republish && sum.Messages+sum.Duplicates == 0 {
		partial = exitcode.Failure
	}
	if errors.Is(err, replay.ErrTargetFailing) {
		return exitcode.New(partial, fmt.Errorf("stopped: %w", err))
	}
	if err != nil {
		return err
	}
	if len(sum.Failed) > 0 {
		return exitcode.Silent(partial)
	}
	if sum.Unconfirmed > 0 {
		return exitcode.New(partial, fmt.Errorf("%s sent and not acknowledged: they may or may not be stored (a re-run with --checkpoint settles them)", output.Plural(sum.Unconfirmed, "message")))
	}
	return nil
}

// auditRepublish records a republish (--to) that stored messages; a
// replay to stdout or a file changes no server and writes no record.
func auditRepublish(ctx context.Context, f *factory.Factory, o *options, stream string, sum replay.Summary, err error) {
	if o.to == "" || o.dryRun || sum.Messages == 0 {
		return
	}
	if stream == "" {
		stream = sum.Stream
	}
	target := o.to
	switch {
	case o.toServer != "":
		target += " on server " + natsconn.RedactURL(o.toServer)
	case o.toContext != "":
		target += " through context " + o.toContext
	}
	summary := fmt.Sprintf("republished %s to %s", output.Plural(sum.Messages, "message"), target)
	if sum.FirstSeq > 0 {
		summary += fmt.Sprintf(" (seq %d..%d)", sum.FirstSeq, sum.LastSeq)
	}
	auditlog.Write(ctx, f, audit.Change{Stream: stream, Action: "republish", Summary: summary, Err: err, Target: target,
		Counts: map[string]int64{
			"messages": int64(sum.Messages), "bytes": int64(sum.Bytes), "duplicates": int64(sum.Duplicates),
			"unconfirmed": int64(sum.Unconfirmed), "failed": int64(len(sum.Failed)),
			"skipped_expired": int64(sum.SkippedExpired), "skipped_markers": int64(sum.SkippedMarkers),
		}})
}
