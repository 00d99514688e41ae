package kv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// scanSpec is one pass over a bucket's stream.
type scanSpec struct {
	// patterns are key patterns; none means every key.
	patterns  []string
	deliver   jetstream.DeliverPolicy
	startSeq  uint64
	startTime time.Time
	// follow keeps reading new revisions; without it the pass ends at the
	// stream's last sequence as of the start, so it always terminates.
	follow bool
}

// errStop ends a scan early without an error.
var errStop = errors.New("stop scan")

// scan delivers the matching revisions in stream order to fn until the end
// of the range (unless following), ctx is done, or fn returns errStop or an
// error. It reads with streamread.ReadOrdered, an in-order pull consumer
// that resumes after the last revision seen.
func (b *bucket) scan(ctx context.Context, js jetstream.JetStream, spec scanSpec, fn func(Entry) error) error {
	filters, match := b.consumerFilters(spec.patterns)
	if spec.deliver == jetstream.DeliverByStartTimePolicy && len(filters) > 1 {
		// nats-server 2.15 starts a consumer with several filters and a
		// start time at the first message of the filter that begins
		// latest, skipping earlier matches of the other filters. Resolve
		// the time to a sequence instead.
		seq, err := b.seqAtTime(ctx, js, spec.startTime)
		if err != nil {
			return err
		}
		if seq == 0 {
			filters, match = b.filters(nil), b.matcher(spec.patterns)
		} else {
			spec.deliver, spec.startSeq = jetstream.DeliverByStartSequencePolicy, seq
		}
	}
	read := streamread.OrderedRead{
		Label:    fmt.Sprintf("bucket %q", b.name),
		Consumer: jetstream.ConsumerConfig{FilterSubjects: filters, DeliverPolicy: spec.deliver},
		EndSeq:   b.info.State.LastSeq,
		Follow:   spec.follow,
		Match:    match,
	}
	switch spec.deliver {
	case jetstream.DeliverByStartSequencePolicy:
		read.Consumer.OptStartSeq = spec.startSeq
	case jetstream.DeliverByStartTimePolicy:
		t := spec.startTime.UTC()
		read.Consumer.OptStartTime = &t
	}
	if !read.Follow && read.EndSeq == 0 {
		return nil
	}
	return streamread.ReadOrdered(ctx, js, b.stream, read, func(m *streamread.StoredMsg) error {
		err := fn(b.entry(m.Subject, m.Seq, m.Time, m.Header, m.Data))
		if errors.Is(err, errStop) {
			return streamread.ErrStop
		}
		return err
	})
}

// consumerFilters turns key patterns into consumer filter subjects. The
// server refuses overlapping filters, so patterns that another one covers
// are dropped, and when two overlap otherwise the consumer reads the whole
// bucket and match filters in the client.
func (b *bucket) consumerFilters(patterns []string) ([]string, func(string) bool) {
	var kept []string
	for i, p := range patterns {
		covered := false
		for j, q := range patterns {
			if i != j && streamread.SubjectCovers(q, p) && (!streamread.SubjectCovers(p, q) || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			kept = append(kept, p)
		}
	}
	for i := range kept {
		for j := i + 1; j < len(kept); j++ {
			if streamread.SubjectsOverlap(kept[i], kept[j]) {
				return b.filters(nil), b.matcher(kept)
			}
		}
	}
	return b.filters(kept), nil
}

// matcher matches subjects against key patterns in the client.
func (b *bucket) matcher(patterns []string) func(string) bool {
	filters := b.filters(patterns)
	return func(subject string) bool {
		for _, f := range filters {
			if streamread.SubjectCovers(f, subject) {
				return true
			}
		}
		return false
	}
}

// seqAtTime is the sequence of the stream's first message at or after t,
// found with one direct get by start time; 0 when the stream has no such
// message or no direct get (callers then filter in the client). Past the
// last message it is the next sequence to be written.
func (b *bucket) seqAtTime(ctx context.Context, js jetstream.JetStream, t time.Time) (uint64, error) {
	if !b.info.Config.AllowDirect {
		return 0, nil
	}
	seq := b.info.State.LastSeq + 1
	err := streamread.DirectGet(ctx, js, b.info.Config.Name, jsapi.MsgGetRequest{StartTime: &t, Batch: 1}, func(m *envelope.Message) error {
		seq = m.Seq
		return streamread.ErrStop
	})
	if err != nil {
		return 0, fmt.Errorf("bucket %q: %w", b.name, err)
	}
	return seq, nil
}
