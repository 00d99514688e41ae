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
	err := retryTransient(ctx, nil, time.Second, func(context.Context) error {
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
	if err := retryTransient(ctx, nil, time.Second, func(context.Context) error { calls++; return answer }); err != answer || calls != 1 {
		t.Errorf("an answer: err %v after %d calls, want it at once", err, calls)
	}

	calls = 0
	err = retryTransient(ctx, nil, time.Second, func(context.Context) error { calls++; return context.DeadlineExceeded })
	if !errors.Is(err, context.DeadlineExceeded) || calls != transientAttempts {
		t.Errorf("a server gone: err %v after %d calls, want it after %d", err, calls, transientAttempts)
	}
}

// Each try waits at most the timeout, however far the caller's deadline:
// a request lost with the connection is never answered, and is sent
// again, not waited for until the caller's context ends.
func TestRetryTransientBoundsEachTry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	far, _ := ctx.Deadline()
	calls := 0
	err := retryTransient(ctx, nil, 20*time.Millisecond, func(try context.Context) error {
		calls++
		if d, ok := try.Deadline(); !ok || !d.Before(far) {
			t.Errorf("try %d: deadline %v (set %v), want the timeout's, before the caller's %v", calls, d, ok, far)
		}
		<-try.Done() // a request whose answer never comes
		return try.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != transientAttempts || ctx.Err() != nil {
		t.Errorf("err %v after %d calls (caller's ctx: %v), want a deadline after %d, the caller's ctx alive", err, calls, ctx.Err(), transientAttempts)
	}
}
