package replay

import (
	"context"
	"errors"
	"io"
	"math"
	"os"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/streamflags"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/replay"
)

func (o *options) validate() error {
	if err := o.Range.Validate(); err != nil {
		return err
	}
	if o.to != "" {
		if err := replay.ValidateTarget(o.to); err != nil {
			return exitcode.UsageErrorf("--to: %v", err)
		}
	}
	if o.newMsgID && o.to == "" {
		return exitcode.UsageErrorf("--new-msg-id needs --to SUBJECT")
	}
	if (o.ttl != "" || o.markers != "") && o.to == "" {
		return exitcode.UsageErrorf("--ttl and --markers need --to SUBJECT: a dump keeps every header as stored")
	}
	// Empty is the default: remaining, and markers skipped unless the
	// target is a KV bucket's stream (replay.MarkersAuto).
	var err error
	if o.ttl != "" {
		if o.ttlMode, err = envelope.ParseTTLMode(o.ttl); err != nil {
			return exitcode.UsageErrorf("%v", err)
		}
	}
	if o.markers != "" {
		if o.markersMode, err = replay.ParseMarkersMode(o.markers); err != nil {
			return exitcode.UsageErrorf("%v", err)
		}
	}
	if (o.toServer != "" || o.toContext != "") && o.to == "" {
		return exitcode.UsageErrorf("--to-server and --to-context need --to SUBJECT")
	}
	if o.toServer != "" && o.toContext != "" {
		return exitcode.UsageErrorf("use --to-server or --to-context, not both")
	}
	sinks := 0
	for _, set := range []bool{o.to != "", o.toFile != "", o.raw} {
		if set {
			sinks++
		}
	}
	if sinks > 1 {
		return exitcode.UsageErrorf("choose one of --to, --to-file and --raw")
	}
	if o.fromFile != "" && (o.Range.Any() || o.Follow()) {
		return exitcode.UsageErrorf("--from-file replays the whole dump: range flags and --follow do not apply")
	}
	if o.Follow() && o.checkpoint != "" && o.to == "" {
		return exitcode.UsageErrorf("--checkpoint with --follow needs --to")
	}
	if o.pace != "" && o.pace != "original" {
		return exitcode.UsageErrorf(`--pace takes "original", got %q`, o.pace)
	}
	if !(o.speed > 0) || math.IsInf(o.speed, 1) {
		return exitcode.UsageErrorf("--speed must be a positive number, got %v", o.speed)
	}
	if o.rate > 0 && o.pace != "" {
		return exitcode.UsageErrorf("use --rate or --pace original, not both")
	}
	if o.maxInFlight < 1 {
		return exitcode.UsageErrorf("--max-in-flight must be at least 1")
	}
	return nil
}

// config turns the flags into what replay.Run is asked to do.
func (o *options) config(ctx context.Context, f *factory.Factory, stream string) (replay.Config, error) {
	rng, err := o.Range.Config(stream)
	if err != nil {
		return replay.Config{}, err
	}
	o.skips = streamflags.NewSkips(f.IO.ErrOut)
	filter, err := streamflags.MessageFilter(ctx, o.filter, o.skips)
	if err != nil {
		return replay.Config{}, err
	}
	cfg := replay.Config{
		Range:          rng,
		DryRun:         o.dryRun,
		NewMsgID:       o.newMsgID,
		ToFile:         o.toFile,
		CheckpointPath: o.checkpoint,
		Filter:         filter,
		Rate:           o.rate,
		PaceOriginal:   o.pace == "original",
		Speed:          o.speed,
		MaxGap:         o.maxGap,
	}
	if o.to != "" {
		cfg.Publish = &replay.PublishConfig{To: o.to, NoProvenance: o.noProvenance, TTL: o.ttlMode, Markers: o.markersMode,
			MaxInFlight: o.maxInFlight, OnConnection: connectionNotice(f)}
	}
	return cfg, nil
}

// printer applies -o: the dry run's report takes every format (a table by
// default); the messages are JSON lines (see output.RequireLines).
func (o *options) printer(f *factory.Factory) (*output.Printer, error) {
	if o.dryRun {
		return f.Printer("table")
	}
	p, err := f.Printer("jsonl")
	if err != nil {
		return nil, err
	}
	return p, p.RequireLines("replay")
}

// lineSink writes the messages on stdout as JSON lines, payloads (--raw)
// or --jq's output, when they go nowhere else.
func (o *options) lineSink(f *factory.Factory, p *output.Printer) replay.Sink {
	switch {
	case o.raw:
		return replay.NewLineSink(f.IO.Out, streamflags.RawFormat)
	case f.Output.JQ != "":
		return replay.NewLineSink(f.IO.Out, streamflags.JQFormat(p, o.skips))
	default:
		return replay.NewLineSink(f.IO.Out, nil)
	}
}

// openDump opens a --from-file dump and reads it whole: a missing file or
// a bad line is exit 2 before anything is contacted. It returns what the
// dump holds, for replay.Config.DumpInfo.
func openDump(ctx context.Context, path string) (*os.File, *replay.DumpInfo, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, exitcode.UsageErrorf("--from-file: %v", err)
	}
	info, err := replay.ValidateDump(ctx, file, path)
	if err == nil {
		_, err = file.Seek(0, io.SeekStart)
	}
	if err != nil {
		file.Close()
		var bad *replay.DumpError
		if errors.As(err, &bad) {
			return nil, nil, exitcode.New(exitcode.Usage, err)
		}
		return nil, nil, exitcode.New(exitcode.Failure, err)
	}
	return file, &info, nil
}
