package dlq

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestRetryTransient(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := retryTransient(ctx, nil, time.Second, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("stream %q: message get: %w", "JOBS", nats.ErrTimeout)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("a server silent twice: err %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	answer := errors.New("stream not found")
	if err := retryTransient(ctx, nil, time.Second, func() error { calls++; return answer }); err != answer || calls != 1 {
		t.Errorf("an answer: err %v after %d calls, want it at once", err, calls)
	}

	calls = 0
	err = retryTransient(ctx, nil, time.Second, func() error { calls++; return context.DeadlineExceeded })
	if !errors.Is(err, context.DeadlineExceeded) || calls != transientAttempts {
		t.Errorf("a server gone: err %v after %d calls, want it after %d", err, calls, transientAttempts)
	}
}
