package kv

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// HistoryConfig selects the revisions `kv history` shows.
type HistoryConfig struct {
	Bucket string
	// Key is a key or a key pattern.
	Key string
}

// History returns every revision the bucket keeps for the key (or the
// keys matching the pattern), oldest first, in one pass over the bucket's stream.
// A key without revisions is a NotFoundError.
func History(ctx context.Context, js jetstream.JetStream, cfg HistoryConfig) ([]Entry, error) {
	b, err := openBucket(ctx, js, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	entries := []Entry{}
	err = b.scan(ctx, js, scanSpec{patterns: []string{cfg.Key}, deliver: jetstream.DeliverAllPolicy}, func(e Entry) error {
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, &NotFoundError{Bucket: cfg.Bucket, Key: cfg.Key}
	}
	return entries, nil
}
