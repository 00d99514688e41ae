package lease_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	held, err := lease.Acquire(ctx, js, "sweep.JOBS", 2*time.Second, "jetctl dlq unlock --stream JOBS")
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
	if l.PID != os.Getpid() || l.TTL != 2*time.Second || l.HolderGone() {
		t.Fatalf("lease: %+v", l)
	}
	// Renewed between the Get and the Remove (every 500 ms here), it stays:
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

// A lease's expiry is judged on the server's clock alone: a client whose
// clock is an hour ahead does not take over a lease its holder (on another
// host) renews, and one an hour behind still takes it over once the holder
// stopped renewing it for its TTL.
func TestExpiryIgnoresTheClientsClock(t *testing.T) {
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(fmt.Sprintf("client clock %+v", skew), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			js := embeddedtest.JetStream(t)
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: lease.Bucket, History: 1})
			if err != nil {
				t.Fatal(err)
			}
			// The holder, on another host, renews its 3s lease every 100ms
			// until it stops.
			val := []byte(`{"holder":"elsewhere","pid":4242,"since":"2026-01-01T00:00:00Z","ttl":3000000000}`)
			rev, err := kv.Create(ctx, "sweep.JOBS", val)
			if err != nil {
				t.Fatal(err)
			}
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if r, err := kv.Update(ctx, "sweep.JOBS", val, rev); err == nil {
						rev = r
					}
				}
			}()
			defer func() {
				select {
				case <-stop:
				default:
					close(stop)
				}
				<-stopped
			}()

			restore := lease.SetClock(func() time.Time { return time.Now().Add(skew) })
			defer restore()
			if _, err := lease.Acquire(ctx, js, "sweep.JOBS", time.Minute, "jetctl dlq unlock --stream JOBS"); !errors.Is(err, lease.ErrLocked) ||
				!strings.Contains(err.Error(), "held by pid 4242 on elsewhere") {
				t.Fatalf("a live lease, client clock %+v: %v", skew, err)
			}
			l, err := lease.Get(ctx, js, "sweep.JOBS")
			if err != nil {
				t.Fatal(err)
			}
			if l.Expired() {
				t.Fatalf("a live lease reads as expired: renewed %s, server time %s", l.Renewed, l.ServerTime)
			}

			// The holder stops: once the server has not seen a renewal for the
			// TTL, the lease is taken over.
			close(stop)
			<-stopped
			for {
				held, err := lease.Acquire(ctx, js, "sweep.JOBS", time.Minute, "")
				if err == nil {
					held.Release(ctx)
					break
				}
				if !errors.Is(err, lease.ErrLocked) || ctx.Err() != nil {
					t.Fatalf("the expired lease was not taken over: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// A holder whose renewals keep failing (here the lease's bucket is gone)
// gives the lease up itself: its context is cancelled with an error that
// names the lease, before another process could take it over.
func TestHolderStopsWhenRenewalsFail(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	held, err := lease.Acquire(ctx, js, "migrate.ORDERS", time.Second, "jetctl migrate unlock --stream ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	work, stopWork := held.WithLease(ctx)
	defer stopWork()
	if err := js.DeleteKeyValue(ctx, lease.Bucket); err != nil {
		t.Fatal(err)
	}
	select {
	case <-work.Done():
	case <-ctx.Done():
		t.Fatal("the holder did not stop: its renewals failed for a minute")
	}
	cause := context.Cause(work)
	if !errors.Is(cause, lease.ErrLost) || !errors.Is(held.LostErr(), lease.ErrLost) {
		t.Fatalf("cause %v, LostErr %v: want ErrLost", cause, held.LostErr())
	}
	for _, want := range []string{"lost its lease migrate.ORDERS: its renewals failed for ", "over half its TTL of 1s", "stopped before another process could take it over"} {
		if !strings.Contains(cause.Error(), want) {
			t.Errorf("cause %q: want %q", cause, want)
		}
	}
	if cause.Error() != held.LostErr().Error() {
		t.Errorf("cause %q, LostErr %q", cause, held.LostErr())
	}
	// What the work returns, cancelled, is explained as the lost lease, in
	// a context derived from the lease's too; a plain cancellation stays one.
	step, stepDone := context.WithTimeout(work, time.Minute)
	defer stepDone()
	if err := lease.Explain(step, fmt.Errorf("reading: %w", step.Err())); err != cause {
		t.Errorf("Explain: %v, want %v", err, cause)
	}
	if err := lease.Explain(context.Background(), context.Canceled); err != context.Canceled {
		t.Errorf("Explain of a plain cancellation: %v", err)
	}
}

// The holder renewing its lease while it is being removed (unlock reads
// it, asks, then removes) does not save it: it is the lease the user chose.
// A lease another process took over meanwhile stays.
func TestRemoveRenewedNotTakenOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)

	held, err := lease.Acquire(ctx, js, "sweep.JOBS", 400*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	read, err := lease.Get(ctx, js, "sweep.JOBS")
	if err != nil {
		t.Fatal(err)
	}
	for { // until the holder has renewed it (every 100 ms)
		now, err := lease.Get(ctx, js, "sweep.JOBS")
		if err != nil {
			t.Fatal(err)
		}
		if now.Revision != read.Revision {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("never renewed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := lease.Remove(ctx, js, read); err != nil {
		t.Fatalf("remove a renewed lease: %v", err)
	}
	select {
	case <-held.Lost():
	case <-ctx.Done():
		t.Fatal("the holder did not learn that it lost its lease")
	}

	// Taken over between the read and the remove: it stays.
	second, err := lease.Acquire(ctx, js, "sweep.JOBS", time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	read, err = lease.Get(ctx, js, "sweep.JOBS")
	if err != nil {
		t.Fatal(err)
	}
	second.Release(ctx)
	kv, err := js.KeyValue(ctx, lease.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "sweep.JOBS", []byte(`{"holder":"elsewhere","pid":4242,"since":"2026-01-01T00:00:00Z","ttl":3600000000000}`)); err != nil {
		t.Fatal(err)
	}
	err = lease.Remove(ctx, js, read)
	if !errors.Is(err, lease.ErrLocked) || !strings.Contains(err.Error(), "taken over just now by pid 4242 on elsewhere") {
		t.Fatalf("remove a lease taken over: %v", err)
	}
	if l, err := lease.Get(ctx, js, "sweep.JOBS"); err != nil || l.Holder != "elsewhere" {
		t.Fatalf("the new holder's lease: %+v, %v", l, err)
	}
}
