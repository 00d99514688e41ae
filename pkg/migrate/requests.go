package migrate

// Requests to the servers that ride out a server not answering for a
// moment.

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/retry"
)

// updateStream updates a stream, riding out a server that does not answer
// for a moment.
func updateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (*jetstream.StreamInfo, error) {
	var si *jetstream.StreamInfo
	err := retry.Do(ctx, retry.Policy{Attempts: 5, Pause: 100 * time.Millisecond, Retryable: retry.Transient}, func(ctx context.Context) error {
		s, err := js.UpdateStream(ctx, cfg)
		if err == nil {
			si = s.CachedInfo()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating %q: %w", cfg.Name, err)
	}
	return si, nil
}

func streamInfo(ctx context.Context, js jetstream.JetStream, name string, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	var si *jetstream.StreamInfo
	err := retry.Do(ctx, retry.Policy{Attempts: 5, Pause: 100 * time.Millisecond, Retryable: retry.Transient}, func(ctx context.Context) error {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return err
		}
		si, err = s.Info(ctx, opts...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", name, err)
	}
	return si, nil
}

func getMsg(ctx context.Context, js jetstream.JetStream, name string, seq uint64) (*jetstream.RawStreamMsg, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.GetMsg(ctx, seq)
}
