// Package streamflags holds the flags that select and filter a stream's
// messages, shared by the commands that read a stream (replay, stream
// tail): the range flags (Range), and the --filter and --jq programs run
// on each message (MessageFilter, JQFormat, Skips).
package streamflags

import (
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// Range holds the flags that select messages of a stream: replay binds
// them all, `stream tail` those without an end.
type Range struct {
	fromSeq  uint64
	toSeq    uint64
	since    time.Duration
	fromTime time.Time
	toTime   time.Time
	last     uint64
	subjects []string
	follow   bool
	reader   string
	withEnd  bool
}

// Bind adds the flags; withEnd adds the ones that bound the range's end.
func (r *Range) Bind(fs *pflag.FlagSet, withEnd bool) {
	r.withEnd = withEnd
	fs.Uint64Var(&r.fromSeq, "from-seq", 0, "start at this stream sequence")
	factory.DurationVar(fs, &r.since, "since", 0, "start this long ago (e.g. 15m, 2h, 7d)").Positive().Hint("use a duration like 15m, 2h or 7d")
	factory.TimeVar(fs, &r.fromTime, "from-time", "start at this time (RFC 3339)").Hint(timeHint)
	fs.Uint64Var(&r.last, "last", 0, "only the last N messages (of the range, matching --subject)")
	fs.StringArrayVar(&r.subjects, "subject", nil, "only messages on this subject (repeatable, wildcards allowed)")
	fs.StringVar(&r.reader, "reader", "", "how to read: ordered, direct or get (default: by the stream's retention)")
	if withEnd {
		fs.Uint64Var(&r.toSeq, "to-seq", 0, "end at this stream sequence (inclusive)")
		factory.TimeVar(fs, &r.toTime, "to-time", "end before this time (RFC 3339, exclusive)").Hint(timeHint)
		fs.BoolVar(&r.follow, "follow", false, "keep reading new messages after the range's end")
	}
}

// Any reports whether any flag narrowing the range was given.
func (r *Range) Any() bool {
	return r.fromSeq > 0 || r.toSeq > 0 || r.since > 0 || !r.fromTime.IsZero() || !r.toTime.IsZero() || r.last > 0 || len(r.subjects) > 0
}

// Starts reports whether a start was given (else a tail starts at new messages).
func (r *Range) Starts() bool {
	return r.fromSeq > 0 || r.since > 0 || !r.fromTime.IsZero() || r.last > 0
}

// Follow reports whether --follow was given.
func (r *Range) Follow() bool { return r.follow }

// Validate checks the flags without contacting anything.
func (r *Range) Validate() error {
	starts := 0
	for _, set := range []bool{r.fromSeq > 0, r.since > 0, !r.fromTime.IsZero()} {
		if set {
			starts++
		}
	}
	if starts > 1 {
		return exitcode.UsageErrorf("use one of --from-seq, --since and --from-time")
	}
	if r.toSeq > 0 && !r.toTime.IsZero() {
		return exitcode.UsageErrorf("use --to-seq or --to-time, not both")
	}
	if r.follow && (r.toSeq > 0 || !r.toTime.IsZero()) {
		return exitcode.UsageErrorf("--follow has no end: drop --to-seq/--to-time")
	}
	if r.last > math.MaxInt64 {
		return exitcode.UsageErrorf("--last %d is more than a stream can hold (at most %d)", r.last, int64(math.MaxInt64))
	}
	if r.fromSeq > 0 && r.toSeq > 0 && r.toSeq < r.fromSeq {
		return exitcode.UsageErrorf("--to-seq %d is before --from-seq %d", r.toSeq, r.fromSeq)
	}
	for _, s := range r.subjects {
		if err := streamread.ValidateSubject(s); err != nil {
			return exitcode.UsageErrorf("--subject %q: %v", s, err)
		}
	}
	switch streamread.ReaderKind(r.reader) {
	case streamread.ReaderAuto, streamread.ReaderOrdered, streamread.ReaderDirect, streamread.ReaderGet:
	default:
		return exitcode.UsageErrorf("--reader %q: use ordered, direct or get", r.reader)
	}
	return nil
}

// Config turns the flags into a range configuration for stream; times and
// durations are parsed here, before anything is contacted.
func (r *Range) Config(stream string) (streamread.Config, error) {
	if err := r.Validate(); err != nil {
		return streamread.Config{}, err
	}
	if stream != "" {
		if err := jsapi.ValidateStreamName(stream); err != nil {
			return streamread.Config{}, exitcode.New(exitcode.Usage, err)
		}
	}
	cfg := streamread.Config{
		Stream:   stream,
		FromSeq:  r.fromSeq,
		ToSeq:    r.toSeq,
		Last:     r.last,
		Subjects: r.subjects,
		Follow:   r.follow,
		Reader:   streamread.ReaderKind(r.reader),
	}
	if r.since > 0 {
		cfg.FromTime = time.Now().Add(-r.since)
	}
	if cfg.FromTime.IsZero() {
		cfg.FromTime = r.fromTime
	}
	if !r.toTime.IsZero() {
		cfg.ToTime = r.toTime
		if !cfg.FromTime.IsZero() && !cfg.ToTime.After(cfg.FromTime) {
			return cfg, exitcode.UsageErrorf("--to-time %s is not after the start %s", r.toTime.Format(time.RFC3339Nano), cfg.FromTime.Format(time.RFC3339))
		}
	}
	return cfg, nil
}

// timeHint is what replay's bad --from-time and --to-time suggest.
const timeHint = "use RFC 3339, e.g. 2026-11-29T02:10:00Z"
