package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/streamread"
)

// pass is one read of a bucket's stream.
type pass struct {
	cfg jetstream.ConsumerConfig
	// endSeq is the last stream sequence a bounded pass reads.
	endSeq uint64
	// follow keeps reading new revisions until ctx ends or fn stops it.
	follow bool
	// match, if set, filters subjects in the client.
	match func(string) bool
}

// pullScan delivers the revisions of p's consumer in stream order to fn: up
// to p.endSeq or the stream's end, or, following, until ctx ends or fn
// returns errStop or an error. It reads with streamread.ReadOrdered, an in-order
// pull consumer that resumes after the last revision seen.
func (b *bucket) pullScan(ctx context.Context, js jetstream.JetStream, p pass, fn func(Entry) error) error {
	r := streamread.OrderedRead{
		Label:    fmt.Sprintf("bucket %q", b.name),
		Consumer: p.cfg,
		EndSeq:   p.endSeq,
		Follow:   p.follow,
		Match:    p.match,
	}
	err := streamread.ReadOrdered(ctx, js, b.stream, r, func(m *streamread.StoredMsg) error {
		err := fn(b.entry(m.Subject, m.Seq, m.Time, m.Header, m.Data))
		if errors.Is(err, errStop) {
			return streamread.ErrStop
		}
		return err
	})
	return err
}
