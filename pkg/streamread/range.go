package streamread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/retry"
)

// ReaderKind names how messages are read.
type ReaderKind string

// Readers. Auto picks ordered for limits streams, direct for workqueue and
// interest streams (a consumer could disturb them), get where direct access
// is off.
const (
	ReaderAuto    ReaderKind = ""
	ReaderOrdered ReaderKind = "ordered"
	ReaderDirect  ReaderKind = "direct"
	ReaderGet     ReaderKind = "get"
)

// Config selects what to read. Zero values mean "unbounded".
type Config struct {
	Stream   string
	FromSeq  uint64
	ToSeq    uint64 // inclusive
	FromTime time.Time
	ToTime   time.Time // exclusive
	Last     uint64
	Subjects []string
	// Follow keeps reading past the range's end for new messages.
	Follow bool
	// New starts after the stream's current last message (stream tail).
	New    bool
	Reader ReaderKind
}

// Range is a resolved, fixed range: First..Last inclusive.
type Range struct {
	Stream   string
	First    uint64
	Last     uint64
	Subjects []string
	Follow   bool
	Reader   ReaderKind
	// Direct reports whether the stream allows direct get.
	Direct bool
	// StreamConfig is the stream's configuration when the range was
	// fixed: what a copy of its messages may carry (replay --to).
	StreamConfig jetstream.StreamConfig
}

// Empty reports whether the range holds no sequence.
func (r Range) Empty() bool { return !r.Follow && r.Last < r.First }

// ErrUnsupported is returned when a reader cannot serve a stream.
var ErrUnsupported = errkind.New(errkind.Invalid, "unsupported")

// electionWithin bounds how long Resolve rides out a stream without a
// leader (an election takes a few seconds at most).
const electionWithin = 10 * time.Second

// ElectionAttempt bounds one request to a stream or consumer that may be
// electing a leader, which leaves it unanswered: the next try reaches the
// new leader.
const ElectionAttempt = 2 * time.Second

// Resolve fixes cfg's range against the stream's current state, so that a
// replay always ends (unless following).
func Resolve(ctx context.Context, js jetstream.JetStream, cfg Config) (Range, error) {
	// A stream electing a leader does not answer for a moment: ride it out.
	var s jetstream.Stream
	err := retry.Do(ctx, retry.Policy{Within: electionWithin, Pause: 100 * time.Millisecond, MaxPause: time.Second, AttemptTimeout: ElectionAttempt, Retryable: retry.Transient},
		func(ctx context.Context) (err error) {
			s, err = js.Stream(ctx, cfg.Stream)
			return err
		})
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return Range{}, fmt.Errorf("stream %q: %w", cfg.Stream, jetstream.ErrStreamNotFound)
		}
		return Range{}, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	info := s.CachedInfo()
	st := info.State
	r := Range{
		Stream:   cfg.Stream,
		First:    max(st.FirstSeq, 1),
		Last:     st.LastSeq,
		Subjects: cfg.Subjects,
		Follow:   cfg.Follow,
		Direct:   info.Config.AllowDirect,

		StreamConfig: info.Config,
	}
	reader, err := chooseReader(cfg.Reader, info)
	if err != nil {
		return Range{}, err
	}
	r.Reader = reader
	if cfg.New {
		r.First = st.LastSeq + 1
	}
	if cfg.FromSeq > 0 {
		r.First = max(r.First, cfg.FromSeq)
	}
	if cfg.ToSeq > 0 {
		r.Last = min(r.Last, cfg.ToSeq)
	}
	api := newAPI(js, cfg.Stream)
	if !cfg.FromTime.IsZero() {
		seq, ok, err := api.seqAtOrAfter(ctx, cfg.FromTime)
		if err != nil {
			return Range{}, err
		}
		if !ok {
			seq = st.LastSeq + 1
		}
		r.First = max(r.First, seq)
	}
	if !cfg.ToTime.IsZero() {
		seq, ok, err := api.seqAtOrAfter(ctx, cfg.ToTime)
		if err != nil {
			return Range{}, err
		}
		if ok {
			r.Last = min(r.Last, seq-1)
		}
	}
	if cfg.Last > 0 && r.Last >= r.First {
		first, err := nthLast(ctx, js, api, info, r, cfg.Last)
		if err != nil {
			return Range{}, err
		}
		r.First = max(r.First, first)
	}
	if r.Follow {
		r.Last = ^uint64(0)
	}
	return r, nil
}

func chooseReader(asked ReaderKind, info *jetstream.StreamInfo) (ReaderKind, error) {
	retention := info.Config.Retention
	switch asked {
	case ReaderAuto:
		switch {
		case retention == jetstream.LimitsPolicy:
			return ReaderOrdered, nil
		case info.Config.AllowDirect:
			return ReaderDirect, nil
		default:
			return ReaderGet, nil
		}
	case ReaderOrdered:
		if retention == jetstream.WorkQueuePolicy {
			return "", fmt.Errorf("stream %q: %w: the ordered reader on a workqueue stream (the server refuses a second consumer); use --reader direct or get", info.Config.Name, ErrUnsupported)
		}
		return asked, nil
	case ReaderDirect:
		if !info.Config.AllowDirect {
			return "", fmt.Errorf("stream %q: %w: the direct reader needs allow_direct on the stream; use --reader get", info.Config.Name, ErrUnsupported)
		}
		return asked, nil
	case ReaderGet:
		return asked, nil
	}
	return "", fmt.Errorf("%w: reader %q (use ordered, direct or get)", ErrUnsupported, asked)
}

// nthLast returns the sequence at which the last n matching messages of r
// start, searching on the count of matching messages from a sequence.
func nthLast(ctx context.Context, js jetstream.JetStream, api *api, info *jetstream.StreamInfo, r Range, n uint64) (uint64, error) {
	if len(r.Subjects) == 0 && info.State.NumDeleted == 0 {
		if n > r.Last-r.First { // r.Last >= r.First: no overflow
			return r.First, nil
		}
		return r.Last + 1 - n, nil
	}
	count := func(seq uint64) (uint64, error) { return api.countFrom(ctx, js, info, r.Subjects, seq) }
	after, err := count(r.Last + 1)
	if err != nil {
		return 0, err
	}
	total, err := count(r.First)
	if err != nil {
		return 0, err
	}
	if total-after <= n {
		return r.First, nil
	}
	// The largest seq whose count in range is still >= n.
	lo, hi := r.First, r.Last
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		c, err := count(mid)
		if err != nil {
			return 0, err
		}
		if c-after >= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}
