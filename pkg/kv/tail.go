package kv

import (
	"context"
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
	Match func(Entry) bool
	// Count stops the tail after this many matches; zero never stops.
	Count int
}

// Tail follows a bucket with one ordered consumer and calls emit for each
// matching revision, in order. It returns the number of matches: after
// Count of them with a nil error, or when ctx ends with ctx's error.
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
	matched := 0
	err = b.scan(ctx, js, spec, func(e Entry) error {
		if e.Op != OpPut && !cfg.Deletes {
			return nil
		}
		if cfg.Match != nil && !cfg.Match(e) {
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
