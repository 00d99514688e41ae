package lease_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/lease"
)

// One holder at a time; Get shows it; Remove ends it, and the holder
// learns at its next renewal that it lost the lease; then it can be taken.
func TestAcquireGetRemoveLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)

	if _, err := lease.Get(ctx, js, "sweep.JOBS"); !errors.Is(err, lease.ErrNone) {
		t.Fatalf("no bucket yet: %v", err)
	}
	held, err := lease.Acquire(ctx, js, "sweep.JOBS", 300*time.Millisecond, "jetctl dlq unlock --stream JOBS")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	if _, err := lease.Acquire(ctx, js, "sweep.JOBS", time.Minute, "jetctl dlq unlock --stream JOBS"); !errors.Is(err, lease.ErrLocked) ||
		!strings.Contains(err.Error(), "jetctl dlq unlock --stream JOBS") {
		t.Fatalf("second holder: %v", err)
	}
	other, err := lease.Acquire(ctx, js, "sweep.OTHER", time.Minute, "")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other.Release(ctx)

	l, err := lease.Get(ctx, js, "sweep.JOBS")
	if err != nil {
		t.Fatal(err)
	}
	if l.PID != os.Getpid() || l.TTL != 300*time.Millisecond || l.HolderGone() {
		t.Fatalf("lease: %+v", l)
	}
	// Renewed between the Get and the Remove (every 100 ms here), it stays:
	// read it again.
	for err := lease.Remove(ctx, js, l); err != nil; err = lease.Remove(ctx, js, l) {
		if !errors.Is(err, lease.ErrLocked) || ctx.Err() != nil {
			t.Fatal(err)
		}
		if l, err = lease.Get(ctx, js, "sweep.JOBS"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-held.Lost():
	case <-ctx.Done():
		t.Fatal("the holder did not learn that it lost its lease")
	}
	if err := held.LostErr(); !errors.Is(err, lease.ErrLost) || !strings.Contains(err.Error(), "or jetctl dlq unlock --stream JOBS removed it") {
		t.Fatalf("LostErr: %v", err)
	}
	again, err := lease.Acquire(ctx, js, "sweep.JOBS", time.Minute, "")
	if err != nil {
		t.Fatalf("after the remove: %v", err)
	}
	again.Release(ctx)
	if _, err := lease.Get(ctx, js, "sweep.JOBS"); !errors.Is(err, lease.ErrNone) {
		t.Fatalf("after the release: %v", err)
	}
}
