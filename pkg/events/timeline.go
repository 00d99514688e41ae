package events

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// TimelineConfig selects events.
type TimelineConfig struct {
	// Stream keeps the stream's events and its consumers'; Consumer
	// (with Stream) the consumer's and its stream's.
	Stream, Consumer string
	// From and To bound the stored time (To exclusive); zero: unbounded.
	From, To time.Time
	// Types keeps these event types only (Types); empty: all.
	Types []string
	// Keep, if set, keeps the events for which it is true (--filter).
	Keep func(*Event) bool
	// Follow reads on past the end for new events (tail); New starts
	// at new events (a tail without a start).
	Follow, New bool
	// Before, if set, hears when the record starts (its oldest event)
	// after From: nothing before that was recorded, or it was dropped by
	// the recorder's limits.
	Before func(recordStart time.Time)

	// subjects, when set, are the recorder's subjects to read instead of
	// Stream's and Consumer's, and the recorder alone is read (Recent).
	subjects []string
}

// Validate checks cfg without contacting anything.
func (c TimelineConfig) Validate(now time.Time) error {
	if c.Consumer != "" && c.Stream == "" {
		return invalidf("--consumer needs --stream: consumer names are per stream")
	}
	for _, n := range []struct{ flag, name string }{{"--stream", c.Stream}} {
		if n.name != "" {
			if err := jsapi.ValidateStreamName(n.name); err != nil {
				return invalidf("%s: %v", n.flag, err)
			}
		}
	}
	if c.Consumer != "" {
		if err := validToken(c.Consumer); err != nil {
			return invalidf("--consumer %q: %v", c.Consumer, err)
		}
	}
	if !c.From.IsZero() && c.From.After(now) {
		return invalidf("the start %s is in the future (now %s): nothing has been recorded yet",
			c.From.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if !c.To.IsZero() && !c.From.IsZero() && !c.To.After(c.From) {
		return invalidf("--to-time %s is not after the start %s", c.To.UTC().Format(time.RFC3339), c.From.UTC().Format(time.RFC3339))
	}
	return ValidateTypes(c.Types)
}

func validToken(s string) error {
	for _, r := range s {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return fmt.Errorf("a name cannot hold %q", r)
		}
	}
	return nil
}

// ErrNoRecorder: the account has no recorder.
var ErrNoRecorder = notFoundf("no event recorder in this account: run jetctl events record")

// part is one stretch of one stream that the timeline reads: subject
// filters (none: all) and a sequence range (0: open).
type part struct {
	stream      string
	filters     []string
	first, last uint64
	// ordered reads with an ordered consumer, else with direct gets
	// (direct) or gets: the captures' history is read without a
	// consumer, which would be one more event in the recorder.
	ordered, direct bool
	follow          bool
}

// plan finds what to read: the recorder on the filters cfg needs, and the
// advisories of DLQ captures that the recorder does not hold (a capture
// that owns its subjects; the advisories an adopted capture captured
// itself). It checks that the stream and consumer asked for exist, on the
// server or in the record.
func plan(ctx context.Context, js jetstream.JetStream, cfg TimelineConfig) ([]part, error) {
	if err := cfg.Validate(time.Now()); err != nil {
		return nil, err
	}
	rec, err := recorder.Find(ctx, js)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, ErrNoRecorder
	}
	start := rec.State.FirstTime
	if cfg.Before != nil && !cfg.From.IsZero() && !start.IsZero() && cfg.From.Before(start) {
		cfg.Before(start)
	}
	filters := recorderFilters(cfg.Stream, cfg.Consumer)
	if cfg.subjects != nil {
		filters = cfg.subjects
	} else if err := known(ctx, js, cfg, filters, start); err != nil {
		return nil, err
	}
	// The recorder is read by one ordered consumer, filtered by the
	// server on every subject asked for: in the recorder's order, and
	// faster than direct gets (bench/README.md). Its own consumer is an
	// event in the recorder, which the timeline leaves out (ownReader).
	rp := part{stream: recorder.Stream, filters: subjectsOf(filters[0]), ordered: true, direct: rec.Config.AllowDirect, follow: cfg.Follow}
	if len(filters) > 1 {
		rp.filters = filters
	}
	parts := []part{rp}
	if cfg.subjects != nil {
		return parts, nil
	}
	l := js.ListStreams(ctx)
	for si := range l.Info() {
		c := &si.Config
		if !dlq.IsCapture(c) || (cfg.Stream != "" && c.Metadata[dlq.MetaSource] != cfg.Stream) {
			continue
		}
		p := part{stream: c.Name, direct: c.AllowDirect}
		if cfg.Consumer != "" {
			p.filters = []string{advisoryPrefix + "CONSUMER.*." + cfg.Stream + "." + cfg.Consumer}
		}
		if own, reads := dlq.OwnUntil(c); reads {
			if own == 0 || cfg.Follow {
				continue // history only, and none
			}
			p.first, p.last = 1, own
		} else {
			p.follow = cfg.Follow
		}
		parts = append(parts, p)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	return parts, nil
}

// recorderFilters are the recorder's subjects that hold the events of
// stream (and consumer); [""] (all) for neither.
func recorderFilters(stream, consumer string) []string {
	switch {
	case stream == "":
		return []string{""}
	case consumer == "":
		return []string{
			advisoryPrefix + "STREAM.*." + stream,
			advisoryPrefix + "CONSUMER.*." + stream + ".*",
			recorder.AuditPrefix + "." + stream + ".>",
		}
	}
	return []string{
		advisoryPrefix + "STREAM.*." + stream,
		advisoryPrefix + "CONSUMER.*." + stream + "." + consumer,
		recorder.AuditPrefix + "." + stream + "." + consumer + ".>",
		recorder.AuditPrefix + "." + stream + "._.>",
	}
}

// known refuses a stream or consumer that is neither on the server nor in
// the record (exit 3), saying where the record starts.
func known(ctx context.Context, js jetstream.JetStream, cfg TimelineConfig, filters []string, start time.Time) error {
	if cfg.Stream == "" {
		return nil
	}
	what := fmt.Sprintf("stream %q", cfg.Stream)
	if cfg.Consumer != "" {
		what += fmt.Sprintf(": consumer %q", cfg.Consumer)
		filters = filters[1:3] // its own events, not its stream's
	}
	// Right after a leader election (a tail waiting for one) the stream or
	// consumer may not answer yet: ask again, each try bounded.
	err := retry.Do(ctx, retry.Policy{Within: 10 * time.Second, Pause: 50 * time.Millisecond, MaxPause: 500 * time.Millisecond,
		AttemptTimeout: streamread.ElectionAttempt, Retryable: retry.Transient}, func(ctx context.Context) error {
		if cfg.Consumer == "" {
			_, err := js.Stream(ctx, cfg.Stream)
			return err
		}
		_, err := js.Consumer(ctx, cfg.Stream, cfg.Consumer)
		return err
	})
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("%s: %w", what, err)
	}
	api := jsapi.New(js)
	for _, f := range filters {
		_, err := api.MsgGet(ctx, recorder.Stream, jsapi.MsgGetRequest{Seq: 1, NextFor: f})
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, jsapi.ErrNoMessage):
			return fmt.Errorf("stream %q: %w", recorder.Stream, err)
		}
	}
	since := ""
	if !start.IsZero() {
		since = " (the record starts at " + start.UTC().Format(time.RFC3339) + ")"
	}
	return fmt.Errorf("%s: %w on the server nor in the record%s", what, ErrNotFound, since)
}

// batchSize is how many events a reader hands the merge at once.
const batchSize = 256

type batch struct {
	events []*Event
	err    error
}

// read reads one part in its own goroutine and sends its events, decoded
// and filtered, in batches; the channel closes at the end.
func read(ctx context.Context, js jetstream.JetStream, cfg TimelineConfig, p part) <-chan batch {
	out := make(chan batch, 4)
	go func() {
		defer close(out)
		var cur []*Event
		send := func(b batch) bool {
			select {
			case out <- b:
				return true
			case <-ctx.Done():
				return false
			}
		}
		reader := streamread.ReaderGet
		switch {
		case p.ordered && !p.follow:
			reader = streamread.ReaderOrdered
		case p.ordered:
			// A tail asks the recorder's leader, one get at a time (at
			// the rate events happen): on a cluster the server places
			// an ordered consumer on any replica, and a direct get is
			// answered by any replica, and a lagging one now and then
			// held back the next event for a minute on a loaded
			// machine (testscripts/cluster/events_elections.txtar).
			reader = streamread.ReaderGet
		case p.direct:
			reader = streamread.ReaderDirect
		}
		var recovered *recoveries
		if p.stream == recorder.Stream {
			recovered = newRecoveries(js)
		}
		sc := streamread.Config{Stream: p.stream, FromSeq: p.first, ToSeq: p.last, FromTime: cfg.From, ToTime: cfg.To,
			Subjects: p.filters, Reader: reader, Follow: p.follow, New: cfg.New && p.follow}
		r, err := streamread.Resolve(ctx, js, sc)
		if err == nil {
			err = streamread.Read(ctx, js, r, func(m *envelope.Message) error {
				e, ok := Decode(m)
				if !ok {
					return nil
				}
				if recovered != nil {
					recovered.see(ctx, e)
				}
				if !cfg.keeps(e) {
					return nil
				}
				cur = append(cur, e)
				if len(cur) >= batchSize || p.follow {
					if !send(batch{events: cur}) {
						return ctx.Err()
					}
					cur = nil
				}
				return nil
			})
		}
		if err != nil && errors.Is(err, jetstream.ErrStreamNotFound) && p.stream != recorder.Stream {
			err = nil // a capture deleted since the listing: nothing to read
		}
		if len(cur) > 0 || err != nil {
			send(batch{events: cur, err: err})
		}
	}()
	return out
}

func (c *TimelineConfig) keeps(e *Event) bool {
	if ownReader(e) {
		return false
	}
	if len(c.Types) > 0 && !slices.Contains(c.Types, e.Type) {
		return false
	}
	return c.Keep == nil || c.Keep(e)
}

// ownReader reports whether e is a consumer of the recorder itself
// created or deleted: the timeline's and tail's own ordered consumers,
// the DLQ captures' sources, natscli reading it. They are readers of the
// record, not events of the streams it records.
func ownReader(e *Event) bool {
	return e.Stream == recorder.Stream && (e.Type == TypeConsumerCreated || e.Type == TypeConsumerDeleted)
}

// Timeline reads the events cfg selects in the order they were stored
// (a k-way merge of the streams it reads, by stored time), and passes each
// to emit. It streams: what it holds at once is a few batches per stream
// read, whatever the number of events.
func Timeline(ctx context.Context, js jetstream.JetStream, cfg TimelineConfig, emit func(*Event) error) error {
	cfg.Follow, cfg.New = false, false
	parts, err := plan(ctx, js, cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &merge{}
	for _, p := range parts {
		src := &source{ch: read(ctx, js, cfg, p)}
		ok, err := src.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Push(h, src)
		}
	}
	for h.Len() > 0 {
		src := (*h)[0]
		if err := emit(src.head()); err != nil {
			return err
		}
		ok, err := src.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return ctx.Err()
}

// Follow reads the events cfg selects as they are stored, from cfg.From
// (or from now with cfg.New), until ctx ends or emit fails. Events of
// different streams come in the order they are read.
func Follow(ctx context.Context, js jetstream.JetStream, cfg TimelineConfig, emit func(*Event) error) error {
	cfg.Follow = true
	parts, err := plan(ctx, js, cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := make(chan batch)
	done := make(chan struct{})
	for _, p := range parts {
		ch := read(ctx, js, cfg, p)
		go func() {
			defer func() { done <- struct{}{} }()
			for b := range ch {
				select {
				case all <- b:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	running := len(parts)
	for running > 0 {
		select {
		case b := <-all:
			for _, e := range b.events {
				if err := emit(e); err != nil {
					return err
				}
			}
			if b.err != nil {
				return b.err
			}
		case <-done:
			running--
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// source is one part's events as the merge sees them.
type source struct {
	ch  <-chan batch
	cur []*Event
	i   int
}

func (s *source) head() *Event { return s.cur[s.i] }

// next moves to the next event; false at the end.
func (s *source) next() (bool, error) {
	s.i++
	for s.i >= len(s.cur) {
		b, ok := <-s.ch
		if !ok {
			return false, nil
		}
		if b.err != nil {
			return false, b.err
		}
		s.cur, s.i = b.events, 0
	}
	return true, nil
}

// merge is a heap of sources by their next event's stored time.
type merge []*source

func (m merge) Len() int { return len(m) }
func (m merge) Less(i, j int) bool {
	a, b := m[i].head(), m[j].head()
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if a.From != b.From {
		return a.From < b.From
	}
	return a.FromSeq < b.FromSeq
}
func (m merge) Swap(i, j int) { m[i], m[j] = m[j], m[i] }
func (m *merge) Push(x any)   { *m = append(*m, x.(*source)) }
func (m *merge) Pop() any {
	old := *m
	s := old[len(old)-1]
	*m = old[:len(old)-1]
	return s
}
