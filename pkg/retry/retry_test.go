package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errBusy = errors.New("busy")

func TestDoRetriesUntilAnswer(t *testing.T) {
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 5, Pause: time.Microsecond}, func(context.Context) error {
		calls++
		if calls < 3 {
			return errBusy
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("err %v after %d calls; want nil after 3", err, calls)
	}
}

func TestDoStops(t *testing.T) {
	other := errors.New("refused")
	for _, c := range []struct {
		name  string
		p     Policy
		errs  []error
		calls int
		want  error
	}{
		{"attempts", Policy{Attempts: 3, Pause: time.Microsecond}, []error{errBusy, errBusy, errBusy, errBusy}, 3, errBusy},
		{"not retryable", Policy{Attempts: 9, Pause: time.Microsecond, Retryable: func(err error) bool { return err == errBusy }}, []error{errBusy, other, errBusy}, 2, other},
		{"within", Policy{Within: time.Millisecond, Pause: time.Hour}, []error{errBusy, errBusy}, 1, errBusy},
	} {
		calls := 0
		err := Do(context.Background(), c.p, func(context.Context) error {
			calls++
			return c.errs[calls-1]
		})
		if err != c.want || calls != c.calls {
			t.Errorf("%s: %v after %d calls; want %v after %d", c.name, err, calls, c.want, c.calls)
		}
	}
}

// A pause ends with the context, and Do returns fn's last error.
func TestDoEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan error)
	go func() {
		done <- Do(ctx, Policy{Pause: time.Hour}, func(context.Context) error { calls++; return errBusy })
	}()
	cancel()
	if err := <-done; err != errBusy || calls != 1 {
		t.Errorf("%v after %d calls; want errBusy after 1", err, calls)
	}
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on an ended context: %v", err)
	}
}

func TestBackoffDoublesToMaxAndResets(t *testing.T) {
	b := Policy{Pause: time.Microsecond, MaxPause: 4 * time.Microsecond}.Backoff()
	var got []time.Duration
	for range 4 {
		got = append(got, b.Next())
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{time.Microsecond, 2 * time.Microsecond, 4 * time.Microsecond, 4 * time.Microsecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses %v, want %v", got, want)
		}
	}
	b.Reset()
	if b.Next() != time.Microsecond {
		t.Errorf("after Reset: %v", b.Next())
	}
}

// AttemptTimeout ends each try's context, not the caller's: a try that
// would wait for an answer that never comes gives way to the next.
func TestAttemptTimeout(t *testing.T) {
	tries := 0
	err := Do(context.Background(), Policy{Attempts: 3, AttemptTimeout: 20 * time.Millisecond, Retryable: func(error) bool { return true }},
		func(ctx context.Context) error {
			tries++
			if tries < 3 {
				<-ctx.Done() // no answer
				return ctx.Err()
			}
			if _, ok := ctx.Deadline(); !ok {
				t.Error("the try's context has no deadline")
			}
			return nil
		})
	if err != nil || tries != 3 {
		t.Fatalf("err %v after %d tries, want nil after 3", err, tries)
	}
}
