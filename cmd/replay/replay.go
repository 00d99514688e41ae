// Package replay implements `jetctl replay STREAM`.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/streamflags"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/replay"
	"github.com/jetctl/jetctl/pkg/streamread"
	"github.com/jetctl/jetctl/pkg/units"
)

type options struct {
	streamflags.Range
	to           string
	toServer     string
	toContext    string
	noProvenance bool
	newMsgID     bool
	msgIDPrefix  string
	toFile       string
	fromFile     string
	raw          bool
	filter       string
	rate         string
	pace         string
	speed        float64
	maxGap       time.Duration
	checkpoint   string
	dryRun       bool
	noProgress   bool
	maxInFlight  int
	// target is --to-server/--to-context resolved, before connecting.
	target *natsconn.Resolved
	skips  *streamflags.Skips
}

// NewCmd returns `jetctl replay`.
func NewCmd(f *factory.Factory) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "replay STREAM",
		Short: "read a range of a stream as JSON lines, to a file, or republished to a subject",
		Long: `Read a range of a stream without consuming or changing it.

The range is fixed when the command starts, so replay always ends (unless
--follow): --from-seq/--to-seq (inclusive), --since, --from-time/--to-time
(RFC 3339; the end is exclusive), --last N, narrowed by --subject (repeatable,
wildcards allowed). Times resolve to sequences on the server. An empty range
is not an error.

By default each message is a JSON line on stdout:
  {"stream","seq","subject","time","headers","data" or "data_b64","size"}
--jq transforms each line (data decoded as JSON when it is JSON), --filter
keeps the messages for which a jq program is true, --raw prints payloads only.

--to SUBJECT republishes each message: SUBJECT may contain {subject} (the
original subject; '{subject}' alone keeps it) or be a prefix mapping like
'restore.>' (restore.orders.x for orders.x). Quote it: > is a shell redirect. --to-server/--to-context publish to another cluster. Headers
the server acts on (Nats-Msg-Id, Nats-Expected-*, Nats-TTL, ...) move to
Jetctl-Orig-<Name>; provenance goes into Jetctl-Source-Stream, -Seq, -Subject
and -Time (--no-provenance to leave it out). Each copy has
Nats-Msg-Id replay:<stream>:<seq>:<target subject>, so a re-run inside the
target's duplicate window stores nothing twice; with --checkpoint, a re-run
also looks in the target for copies stored after the checkpoint, so it adds
none twice even outside that window. The summary counts only copies the
target acknowledged; copies it already had are counted as duplicates
(nothing new stored). To copy again on purpose (say, after purging the
target), use --new-msg-id: the ids get a run id of their own (kept in the
checkpoint, so a resumed run stays one copy). Every acknowledgement is
checked; failures are retried, then listed; exit code 4 when some copies
were stored and some failed, 1 when none was stored. After a reconnect the
copies not acknowledged are sent again at once; stderr says when the
connection went away and when it came back. With --to, -o json (or --jq)
prints the summary on stdout: messages, bytes, duplicates, unconfirmed,
failed, ...

--to-file F writes the JSON lines to F; --from-file F reads such a dump back
(to stdout, or with --to to republish it). Payload bytes and headers survive
the round trip exactly. A dump is read whole before anything is published:
a bad line is exit 2 naming file:line, with nothing sent.

A --jq or --filter program that fails on a message (.data.x on a text
payload) skips it, with one warning naming its sequence; the summary counts
them. -o jsonl (default) and -o json print JSON lines; -o table and -o yaml
are refused, except with --dry-run, whose report takes any -o.

--checkpoint FILE records the last sequence done (the last acknowledged one
when republishing) and a re-run with the same file continues after it, up to
the end fixed by the first run. On SIGINT or SIGTERM replay stops reading,
waits for acknowledgements in flight (at most 2s, not while disconnected;
the rest are reported as unconfirmed), writes the checkpoint, prints its
summary and exits 130.

Readers (--reader): ordered (an ordered consumer; default for limits
streams), direct (batched direct get; default for workqueue and interest
streams, which a consumer could disturb), get (one request per message, on
the stream leader; where direct access is off).`,
		Example: `  jetctl replay ORDERS --since 15m
  jetctl replay ORDERS --from-time 2026-11-29T02:10:00Z --to-time 2026-11-29T02:25:00Z --subject 'orders.*'
  jetctl replay ORDERS --last 10 --jq '.data.order_id'
  jetctl replay ORDERS --to-file orders.jsonl
  jetctl replay --from-file orders.jsonl --to 'restore.>' --checkpoint restore.ckpt
  jetctl replay ORDERS --to 'replayed.{subject}' --rate 500/s --checkpoint orders.ckpt
  jetctl replay ORDERS --to '{subject}' --to-context dr-cluster
  jetctl replay ORDERS --to orders.reprocess --to-context dr-cluster --dry-run`,
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
	fl.StringVar(&o.toFile, "to-file", "", "write the JSON lines to this file")
	fl.StringVar(&o.fromFile, "from-file", "", "read messages from a JSON-lines dump instead of a stream")
	fl.BoolVar(&o.raw, "raw", false, "print payloads only, one a line")
	fl.StringVar(&o.filter, "filter", "", "jq program: keep messages for which it is true")
	fl.StringVar(&o.rate, "rate", "", "at most this many messages per second (e.g. 500/s)")
	fl.StringVar(&o.pace, "pace", "", `"original" reproduces the messages' original timing`)
	fl.Float64Var(&o.speed, "speed", 1, "with --pace original: play this many times faster")
	fl.DurationVar(&o.maxGap, "max-gap", 0, "with --pace original: never wait longer than this between messages")
	fl.StringVar(&o.checkpoint, "checkpoint", "", "record progress in FILE and resume from it")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the resolved range, counts and bytes per subject; publish and write nothing")
	fl.BoolVar(&o.noProgress, "no-progress", false, "no progress bar on stderr")
	fl.IntVar(&o.maxInFlight, "max-in-flight", 1024, "unacknowledged publishes at most, when republishing")
	return cmd
}

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
	if o.maxGap < 0 {
		return exitcode.UsageErrorf("--max-gap must not be negative, got %s", o.maxGap)
	}
	if o.rate != "" && o.pace != "" {
		return exitcode.UsageErrorf("use --rate or --pace original, not both")
	}
	if _, err := parseRate(o.rate); err != nil {
		return err
	}
	if o.maxInFlight < 1 {
		return exitcode.UsageErrorf("--max-in-flight must be at least 1")
	}
	return nil
}

// parseRate reads --rate: "500", "500/s", "30/m"; empty is no limit.
func parseRate(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	r, err := units.ParseRate(s)
	if err != nil {
		return 0, exitcode.UsageErrorf("invalid --rate %q: use e.g. 500/s", s)
	}
	return r, nil
}

func run(ctx context.Context, f *factory.Factory, o *options, stream string) error {
	// Everything that can be checked without a server is checked first.
	if err := o.validate(); err != nil {
		return err
	}
	cfg, err := o.Range.Config(stream)
	if err != nil {
		return err
	}
	o.skips = streamflags.NewSkips(f.IO.ErrOut)
	filter, err := streamflags.MessageFilter(ctx, o.filter, o.skips)
	if err != nil {
		return err
	}
	p, err := o.printer(f)
	if err != nil {
		return err
	}
	rate, _ := parseRate(o.rate)
	var cp *replay.Checkpoint
	if o.checkpoint != "" {
		if cp, err = replay.LoadCheckpoint(o.checkpoint); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
	}
	if o.msgIDPrefix, err = replay.MsgIDPrefixFor(cp, o.newMsgID); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	// A dump is read whole before anything is published: a bad line is
	// exit 2 naming it, with nothing sent.
	var file *os.File
	if o.fromFile != "" {
		if file, err = openDump(ctx, o.fromFile); err != nil {
			return err
		}
		defer file.Close()
	}
	// Another cluster's context is resolved before connecting anywhere.
	if o.to != "" && (o.toServer != "" || o.toContext != "") {
		if o.target, err = natsconn.Resolve(natsconn.Options{Server: o.toServer, Context: o.toContext, Timeout: f.Conn.Timeout}); err != nil {
			return err
		}
	}

	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	var src replay.Source
	sum := replay.Summary{Stream: stream}
	if o.fromFile != "" {
		after := uint64(0)
		if cp != nil {
			after, sum.Resumed = cp.LastSeq, cp.LastSeq
		}
		src = replay.FileSource(file, after)
		sum.Stream = "file:" + o.fromFile
	} else {
		r, err := streamread.Resolve(ctx, js, cfg)
		if err != nil {
			return mapErr(err)
		}
		if cp != nil {
			if r, err = replay.Resume(r, cp); err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			sum.Resumed = cp.LastSeq
		}
		sum.FirstSeq, sum.LastSeq = r.First, r.Last
		if r.Follow {
			sum.LastSeq = 0
		}
		src = replay.StreamSource(js, r)
	}

	sink, closeSink, err := o.sink(ctx, f, p, cp)
	if err != nil {
		return err
	}
	defer closeSink()

	opts := replay.Options{
		Rate:           rate,
		PaceOriginal:   o.pace == "original",
		Speed:          o.speed,
		MaxGap:         o.maxGap,
		CheckpointPath: o.checkpoint,
		Target:         o.to,
		Resume:         cp,
		Filter:         filter,
	}
	bar := newProgress(f, o, sum)
	if bar != nil {
		opts.Progress = bar.update
	}
	sum, err = replay.Run(ctx, src, sink, sum, opts)
	if bar != nil {
		bar.finish()
	}
	if o.dryRun {
		if perr := printDryRun(p, sum); perr != nil && err == nil {
			err = perr
		}
	}
	printSummary(f, o, sum, sink)
	if perr := printRepublishJSON(f, o, p, sum); perr != nil && err == nil {
		err = perr
	}
	// A republish that stored nothing failed; one that stored some, partly.
	partial := exitcode.Partial
	if o.to != "" && sum.Messages+sum.Duplicates == 0 {
		partial = exitcode.Failure
	}
	if errors.Is(err, replay.ErrTargetFailing) {
		return exitcode.New(partial, fmt.Errorf("stopped: %w", err))
	}
	if err != nil {
		return mapErr(err)
	}
	if len(sum.Failed) > 0 {
		return exitcode.Silent(partial)
	}
	return nil
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

// openDump opens a --from-file dump and reads it whole: a missing file or
// a bad line is exit 2 before anything is contacted.
func openDump(ctx context.Context, path string) (*os.File, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, exitcode.UsageErrorf("--from-file: %v", err)
	}
	_, err = replay.ValidateDump(ctx, file, path)
	if err == nil {
		_, err = file.Seek(0, io.SeekStart)
	}
	if err != nil {
		file.Close()
		var bad *replay.DumpError
		if errors.As(err, &bad) {
			return nil, exitcode.New(exitcode.Usage, err)
		}
		return nil, exitcode.New(exitcode.Failure, err)
	}
	return file, nil
}

// printRepublishJSON prints a republish's summary on stdout when -o or
// --jq asks for it (--to writes nothing else there).
func printRepublishJSON(f *factory.Factory, o *options, p *output.Printer, sum replay.Summary) error {
	if o.to == "" || o.dryRun || (f.Output.Format == "" && f.Output.JQ == "") {
		return nil
	}
	if sum.Failed == nil {
		sum.Failed = []uint64{}
	}
	return p.Print(sum, nil)
}

// connectionNotice says on stderr when the target's connection went away
// and when it came back.
func connectionNotice(f *factory.Factory) func(up bool, server string, down time.Duration) {
	return func(up bool, server string, down time.Duration) {
		if !up {
			fmt.Fprintf(f.IO.ErrOut, "jetctl: lost the connection to %s; reconnecting\n", server)
			return
		}
		fmt.Fprintf(f.IO.ErrOut, "jetctl: reconnected to %s after %s; sending again what was not acknowledged\n", server, down.Round(time.Millisecond))
	}
}

func mapErr(err error) error {
	if errors.Is(err, streamread.ErrUnsupported) {
		return exitcode.New(exitcode.Usage, err)
	}
	return err
}

// sink builds where messages go; closeSink releases files and connections.
func (o *options) sink(ctx context.Context, f *factory.Factory, p *output.Printer, cp *replay.Checkpoint) (replay.Sink, func(), error) {
	nothing := func() {}
	switch {
	case o.dryRun:
		return &replay.StatsSink{}, nothing, nil
	case o.to != "":
		target, closeTarget, err := o.targetJetStream(ctx, f)
		if err != nil {
			return nil, nil, err
		}
		return replay.NewPublisher(target, replay.PublishConfig{To: o.to, NoProvenance: o.noProvenance, MaxInFlight: o.maxInFlight,
			MsgIDPrefix: o.msgIDPrefix, OnConnection: connectionNotice(f)}), closeTarget, nil
	case o.toFile != "":
		// Resuming cuts the file back to the checkpoint's length.
		file, err := replay.OpenFileSink(o.toFile, cp, o.checkpoint != "")
		if errors.Is(err, replay.ErrCheckpointMismatch) {
			return nil, nil, exitcode.New(exitcode.Usage, err)
		}
		if err != nil {
			return nil, nil, exitcode.New(exitcode.Failure, err)
		}
		return file, func() { file.CloseFile() }, nil
	case o.raw:
		return replay.NewLineSink(f.IO.Out, streamflags.RawFormat), nothing, nil
	case f.Output.JQ != "":
		return replay.NewLineSink(f.IO.Out, streamflags.JQFormat(p, o.skips)), nothing, nil
	default:
		return replay.NewLineSink(f.IO.Out, nil), nothing, nil
	}
}

// targetJetStream is the JetStream to republish to: the source's, or
// another cluster's.
func (o *options) targetJetStream(ctx context.Context, f *factory.Factory) (jetstream.JetStream, func(), error) {
	if o.toServer == "" && o.toContext == "" {
		js, err := f.JetStream(ctx)
		return js, func() {}, err
	}
	r := o.target
	nc, err := r.Connect(ctx, "jetctl-replay-target")
	if err != nil {
		return nil, nil, err
	}
	js, err := r.JetStream(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

func printDryRun(p *output.Printer, sum replay.Summary) error {
	type subjectCount struct {
		Subject  string `json:"subject"`
		Messages uint64 `json:"messages"`
	}
	type dryRun struct {
		Stream   string         `json:"stream"`
		FirstSeq uint64         `json:"first_seq"`
		LastSeq  uint64         `json:"last_seq"`
		Messages uint64         `json:"messages"`
		Bytes    uint64         `json:"bytes"`
		Subjects []subjectCount `json:"subjects"`
	}
	d := dryRun{Stream: sum.Stream, FirstSeq: sum.FirstSeq, LastSeq: sum.LastSeq, Messages: sum.Messages, Bytes: sum.Bytes, Subjects: []subjectCount{}}
	for s, n := range sum.Subjects {
		d.Subjects = append(d.Subjects, subjectCount{s, n})
	}
	sort.Slice(d.Subjects, func(i, j int) bool { return d.Subjects[i].Subject < d.Subjects[j].Subject })
	return p.Print(d, func() []output.Table {
		head := output.Table{Header: []string{"stream", "range", "messages", "bytes"}}
		rng := "empty"
		if d.LastSeq >= d.FirstSeq && d.LastSeq > 0 {
			rng = fmt.Sprintf("%d..%d", d.FirstSeq, d.LastSeq)
		}
		head.Row(d.Stream, rng, humanize.Comma(int64(d.Messages)), humanize.IBytes(d.Bytes))
		subjects := output.Table{Header: []string{"subject", "messages"}}
		for _, s := range d.Subjects {
			subjects.Row(s.Subject, humanize.Comma(int64(s.Messages)))
		}
		return []output.Table{head, subjects}
	})
}

// printSummary writes the one-line summary to stderr.
func printSummary(f *factory.Factory, o *options, sum replay.Summary, sink replay.Sink) {
	verb := "replayed"
	switch {
	case o.dryRun:
		verb = "would replay"
	case o.to != "":
		verb = "republished"
	}
	line := fmt.Sprintf("%s %s (%s) in %.2fs, %s msgs/s",
		verb, output.Plural(sum.Messages-o.skips.JQ, "message"), humanize.IBytes(sum.Bytes), sum.Seconds, humanize.Comma(int64(sum.PerSecond)))
	if sum.Duplicates > 0 {
		line += fmt.Sprintf("; %s already in the target", output.Plural(uint64(sum.Duplicates), "duplicate"))
		if sum.Resumed == 0 {
			// Resuming, they are the earlier run's copies: nothing to do.
			line += " (--new-msg-id copies again)"
		}
	}
	if sum.Unconfirmed > 0 {
		line += fmt.Sprintf("; %s unconfirmed (sent, not acknowledged)", humanize.Comma(int64(sum.Unconfirmed)))
	}
	if sum.Resumed > 0 {
		line += fmt.Sprintf("; resumed after seq %d", sum.Resumed)
	}
	if o.checkpoint != "" && sum.Checkpoint > 0 {
		line += fmt.Sprintf("; checkpoint seq %d", sum.Checkpoint)
	}
	line += o.skips.Summary()
	fmt.Fprintln(f.IO.ErrOut, "jetctl: "+line)
	if n := len(sum.Failed); n > 0 {
		detail := ""
		if pub, ok := sink.(*replay.Publisher); ok && pub.LastError() != nil {
			detail = ": " + exitcode.Message(pub.LastError())
		}
		seqs := "seqs"
		if n == 1 {
			seqs = "seq"
		}
		fmt.Fprintf(f.IO.ErrOut, "jetctl: %s could not be republished (%s %s)%s\n", output.Plural(uint64(n), "message"), seqs, seqList(sum.Failed), detail)
	}
}

func seqList(seqs []uint64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i == 10 {
			fmt.Fprintf(&b, ", … (%d more)", len(seqs)-10)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, s)
	}
	return b.String()
}
