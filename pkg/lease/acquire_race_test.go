package lease

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A holder killed with -9 can leave a renewal on its way: it lands
// between the taker's read of the lease and its takeover, which then
// loses the race to a holder that is gone. Acquire reads the lease again
// and takes it over (dlq_kill_random's rerun once said "taken over by
// another process just now" and exited 1).
func TestAcquireTakesOverAfterALateRenewalOfAGoneHolder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	kv, err := bucket(ctx, js, true)
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	val, _ := json.Marshal(lockValue{Holder: host, PID: gone.Process.Pid, PIDNS: pidNamespace(), Since: time.Now().UTC(), TTL: time.Hour})
	if _, err := kv.Put(ctx, "sweep.JOBS", val); err != nil {
		t.Fatal(err)
	}
	// The third clock reading (after the create's and the lease read's)
	// is Acquire's just before its takeover: the gone holder's late
	// renewal lands there.
	var calls atomic.Int32
	restore := SetClock(func() time.Time {
		if calls.Add(1) == 3 {
			if _, err := kv.Put(ctx, "sweep.JOBS", val); err != nil {
				t.Error(err)
			}
		}
		return time.Now()
	})
	defer restore()
	l, err := Acquire(ctx, js, "sweep.JOBS", time.Minute, "jetctl dlq unlock --stream JOBS")
	if err != nil {
		t.Fatalf("a lease whose holder is gone, renewed late: %v", err)
	}
	l.Release(ctx)
	if calls.Load() < 5 {
		t.Fatalf("%d clock readings: the late renewal did not land before the takeover", calls.Load())
	}
}
