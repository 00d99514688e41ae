package kv

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Start is where a tail begins.
type Start int

// Where a tail can begin.
const (
	// StartCurrent delivers each key's current value, then updates (what
	// `nats kv watch` does).
	StartCurrent Start = iota
	// StartNew delivers only revisions written after the tail starts.
	StartNew
	// StartHistory delivers every revision the bucket keeps.
	StartHistory
	// StartTime delivers revisions written at or after TailConfig.Since.
	StartTime
	// StartRevision delivers revisions from TailConfig.FromRev on.
	StartRevision
)

// TailConfig describes a tail of a bucket.
type TailConfig struct {
	Bucket string
	// Keys are key patterns; none means every key.
	Keys    []string
	Start   Start
	Since   time.Time
	FromRev uint64
	// Deletes includes DEL and PURGE revisions.
	Deletes bool
	// Match keeps an entry when it returns true; nil keeps every entry.
	// An error means "no match"; OnMatchError hears of it, in stream order.
	// Match is called from several goroutines at once, with a context that
	// ends with the tail: a filter that runs long must stop with it.
	Match func(context.Context, *Entry) (bool, error)
	// OnMatchError, if set, is called with each entry Match failed on.
	OnMatchError func(*Entry, error)
	// Count stops the tail after this many matches; zero never stops.
	Count int
}

// Tail follows a bucket with one in-order pull consumer, recreated after
// the last revision seen when the connection or the server comes back, and
// calls emit for each matching revision, in order. It returns the number
// of matches: after Count of them with a nil error, or when ctx ends with
// ctx's error.
func Tail(ctx context.Context, js jetstream.JetStream, cfg TailConfig, emit func(Entry) error) (int, error) {
	b, err := openBucket(ctx, js, cfg.Bucket)
	if err != nil {
		return 0, err
	}
	spec := scanSpec{patterns: cfg.Keys, follow: true}
	switch cfg.Start {
	case StartCurrent:
		spec.deliver = jetstream.DeliverLastPerSubjectPolicy
	case StartNew:
		spec.deliver = jetstream.DeliverNewPolicy
	case StartHistory:
		spec.deliver = jetstream.DeliverAllPolicy
	case StartTime:
		spec.deliver, spec.startTime = jetstream.DeliverByStartTimePolicy, cfg.Since
	case StartRevision:
		spec.deliver, spec.startSeq = jetstream.DeliverByStartSequencePolicy, cfg.FromRev
	}
	if cfg.Match == nil {
		return tailInOrder(ctx, js, b, spec, cfg, emit)
	}
	return tailFiltered(ctx, js, b, spec, cfg, emit)
}

func tailInOrder(ctx context.Context, js jetstream.JetStream, b *bucket, spec scanSpec, cfg TailConfig, emit func(Entry) error) (int, error) {
	matched := 0
	err := b.scan(ctx, js, spec, func(e Entry) error {
		if e.Op != OpPut && !cfg.Deletes {
			return nil
		}
		matched++
		if err := emit(e); err != nil {
			return err
		}
		if cfg.Count > 0 && matched >= cfg.Count {
			return errStop
		}
		return nil
	})
	return matched, err
}

// filterSlot is one entry on its way through the filter workers.
type filterSlot struct {
	e    Entry
	keep bool
	err  error
	done chan struct{}
}

// tailFiltered runs Match on several cores, since decoding values and
// running jq cost more than reading, and emits the matches in stream order.
func tailFiltered(ctx context.Context, js jetstream.JetStream, b *bucket, spec scanSpec, cfg TailConfig, emit func(Entry) error) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := max(2, runtime.GOMAXPROCS(0))
	order := make(chan *filterSlot, 4096)
	work := make(chan *filterSlot, 4096)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sl := range work {
				sl.keep, sl.err = cfg.Match(ctx, &sl.e)
				close(sl.done)
			}
		}()
	}
	matched := 0
	collected := make(chan error, 1)
	go func() {
		var emitErr error
		for sl := range order {
			<-sl.done
			if emitErr != nil {
				continue
			}
			// Failures after the tail was stopped are the stop itself.
			if sl.err != nil && cfg.OnMatchError != nil && ctx.Err() == nil {
				cfg.OnMatchError(&sl.e, sl.err)
			}
			if !sl.keep {
				continue
			}
			matched++
			if err := emit(sl.e); err != nil {
				emitErr = err
				cancel(err)
				continue
			}
			if cfg.Count > 0 && matched >= cfg.Count {
				emitErr = errStop
				cancel(errStop)
			}
		}
		collected <- emitErr
	}()
	err := b.scan(ctx, js, spec, func(e Entry) error {
		if e.Op != OpPut && !cfg.Deletes {
			return nil
		}
		sl := &filterSlot{e: e, done: make(chan struct{})}
		select {
		case order <- sl:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		work <- sl
		return nil
	})
	close(work)
	close(order)
	wg.Wait()
	emitErr := <-collected
	switch {
	case errors.Is(emitErr, errStop):
		return matched, nil
	case emitErr != nil:
		return matched, emitErr
	}
	return matched, err
}
