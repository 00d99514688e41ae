// Package lease is jetctl's one lease: a key in a KV bucket that one
// process at a time holds while it changes something that two must not
// change at once (a dlq sweep or redrive of a stream, a migration).
package lease

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
)

// DefaultTTL is how long a lock outlives a holder that died.
const DefaultTTL = 30 * time.Second

// Bucket is the KV bucket holding the leases. Its name is from when only
// dlq had leases; it stays, so that a lease an older jetctl holds is seen.
const Bucket = "jetctl_dlq_locks"

// ErrLocked: another process holds the lease.
var ErrLocked = errkind.New(errkind.Busy, "locked")

// Lock is a lease on a key of the Bucket: created only if absent, kept
// alive by its holder, and taken over by anyone once the holder has not
// renewed it for its TTL (the holder's TTL, stored in the lease), or at
// once when the holder ran on this host, in this process namespace, and
// its process no longer exists (a SIGKILLed sweep). Remove removes a lease
// whatever its state.
type Lock struct {
	kv  jetstream.KeyValue
	key string
	ttl time.Duration
	// unlockHint is the command that removes the lease, for messages.
	unlockHint string
	mu         sync.Mutex
	rev        uint64
	// renewedAt is when the last renewal that succeeded was sent, on the
	// local clock (only durations on it are read).
	renewedAt time.Time
	// failure is why the holder gave the lease up itself (its renewals
	// kept failing); nil when it was taken over or unlocked.
	failure error
	lost    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	closed  bool
}

// clock is the local clock. Expiry never compares it with the server's
// timestamps (see Lease.Expired); the holder measures on it only how long
// its renewals have failed. Tests skew it.
var clock = time.Now

// lockValue is what a lease stores.
type lockValue struct {
	Holder string        `json:"holder"`
	PID    int           `json:"pid"`
	PIDNS  string        `json:"pid_ns,omitempty"`
	Since  time.Time     `json:"since"`
	TTL    time.Duration `json:"ttl"`
}

// Lease is a lease as read from the Bucket.
type Lease struct {
	Key    string
	Holder string
	PID    int
	// PIDNS identifies the holder's PID namespace (Linux), "" elsewhere.
	PIDNS string
	Since time.Time
	// TTL is the holder's: the lease expires when the holder has not
	// renewed it for this long.
	TTL time.Duration
	// Renewed is when the holder last renewed it, on the server's clock.
	Renewed time.Time
	// ServerTime is the server's clock when the lease was read: its age is
	// ServerTime - Renewed, two times of one clock.
	ServerTime time.Time
	// Revision is the KV revision of the lease.
	Revision uint64
}

// HolderGone reports whether the holder ran on this host, in this
// process namespace, and its process is gone: then the lease is stale,
// whatever its TTL says.
func (l Lease) HolderGone() bool {
	host, _ := os.Hostname()
	return l.Holder != "" && l.Holder == host && l.PIDNS == pidNamespace() && l.PID > 0 &&
		l.PID != os.Getpid() && !processExists(l.PID)
}

// Age is how long ago the holder last renewed the lease, on the server's
// clock: a client's clock, however wrong, plays no part.
func (l Lease) Age() time.Duration { return l.ServerTime.Sub(l.Renewed) }

// Expired reports whether the holder has not renewed the lease for its TTL.
func (l Lease) Expired() bool { return l.Age() >= l.TTL }

// Describe says who holds the lease, for messages.
func (l Lease) Describe() string {
	return fmt.Sprintf("pid %d on %s since %s", l.PID, l.Holder, l.Since.Format(time.RFC3339))
}

// ErrLost: another process took the lease over, or it was unlocked,
// while its holder was working.
var ErrLost = errkind.New(errkind.Busy, "lost its lease")

func bucket(ctx context.Context, js jetstream.JetStream, create bool) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket, Description: "jetctl dlq sweep and redrive locks", History: 1})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, Bucket)
		}
	}
	return kv, err
}

// readLease reads the lease on key and then the server's clock (the
// bucket's stream info carries it), so that the lease's age is measured
// on the clock that stamped its renewal. A server that does not say its
// time leaves the local clock to stand in for it.
func readLease(ctx context.Context, kv jetstream.KeyValue, key string, defaultTTL time.Duration) (Lease, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		return Lease{}, err
	}
	var v lockValue
	_ = json.Unmarshal(e.Value(), &v)
	if v.TTL <= 0 {
		v.TTL = defaultTTL
	}
	status, err := kv.Status(ctx)
	if err != nil {
		return Lease{}, err
	}
	var now time.Time
	if bs, ok := status.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		now = bs.StreamInfo().TimeStamp
	}
	if now.IsZero() {
		now = clock()
	}
	return Lease{Key: key, Holder: v.Holder, PID: v.PID, PIDNS: v.PIDNS, Since: v.Since, TTL: v.TTL, Renewed: e.Created(), ServerTime: now, Revision: e.Revision()}, nil
}

// Acquire takes the lock on key, or fails with ErrLocked naming the
// holder and unlockHint (the command that removes the lease).
func Acquire(ctx context.Context, js jetstream.JetStream, key string, ttl time.Duration, unlockHint string) (*Lock, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	kv, err := bucket(ctx, js, true)
	if err != nil {
		return nil, fmt.Errorf("lock bucket %q: %w", Bucket, err)
	}
	host, _ := os.Hostname()
	val, _ := json.Marshal(lockValue{Holder: host, PID: os.Getpid(), PIDNS: pidNamespace(), Since: clock().UTC(), TTL: ttl})
	// A race lost (the lease released, or renewed by a holder that is gone:
	// a kill -9 leaves its last renewal on its way) is read again: only a
	// live holder's lease refuses.
	for try := 1; ; try++ {
		sent := clock()
		rev, err := kv.Create(ctx, key, val)
		if err == nil {
			return startLock(kv, key, ttl, rev, val, unlockHint, sent), nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("lock %q: %w", key, err)
		}
		held, gerr := readLease(ctx, kv, key, ttl)
		if errors.Is(gerr, jetstream.ErrKeyNotFound) && try < acquireTries {
			continue // released between the create and the get
		}
		if gerr != nil {
			return nil, fmt.Errorf("lock %q: %w", key, gerr)
		}
		if !held.HolderGone() && !held.Expired() {
			// No flag is named: migrate has a fixed TTL, dlq a --lock-ttl.
			return nil, fmt.Errorf("%w: %s is held by %s (renewed %s ago; it expires %s after its holder stops renewing it); "+
				"if that process is gone, run: %s",
				ErrLocked, key, held.Describe(), max(held.Age(), 0).Round(time.Millisecond), held.TTL, unlockHint)
		}
		sent = clock()
		rev, err = kv.Update(ctx, key, val, held.Revision)
		if err == nil {
			return startLock(kv, key, ttl, rev, val, unlockHint, sent), nil
		}
		if try >= acquireTries {
			return nil, fmt.Errorf("%w: %s was taken over by another process just now", ErrLocked, key)
		}
	}
}

// acquireTries bounds the races Acquire reads again before it gives up.
const acquireTries = 5

// startLock starts renewing a lease taken with a request sent at sent.
func startLock(kv jetstream.KeyValue, key string, ttl time.Duration, rev uint64, val []byte, unlockHint string, sent time.Time) *Lock {
	l := &Lock{kv: kv, key: key, ttl: ttl, unlockHint: unlockHint, rev: rev, renewedAt: sent,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(val)
	return l
}

// Get reads the lease on key; ErrNone when nobody holds it.
func Get(ctx context.Context, js jetstream.JetStream, key string) (Lease, error) {
	kv, err := bucket(ctx, js, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return Lease{}, fmt.Errorf("%w: %s", ErrNone, key)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("lock bucket %q: %w", Bucket, err)
	}
	l, err := readLease(ctx, kv, key, DefaultTTL)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Lease{}, fmt.Errorf("%w: %s", ErrNone, key)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("lock %q: %w", key, err)
	}
	return l, nil
}

// ErrNone: nobody holds the lease.
var ErrNone = errors.New("no lease")

// Remove removes the lease l as it was read. Its holder may renew it
// meanwhile (it does every quarter of its TTL): the lease is still the one
// the user chose to remove, and Remove removes it at its new revision. If
// another process took it over since, that lease stays (ErrLocked). A live
// holder whose lease is removed stops at its next renewal.
func Remove(ctx context.Context, js jetstream.JetStream, l Lease) error {
	kv, err := bucket(ctx, js, false)
	if err != nil {
		return fmt.Errorf("lock bucket %q: %w", Bucket, err)
	}
	for attempt := 0; ; attempt++ {
		err := kv.Delete(ctx, l.Key, jetstream.LastRevision(l.Revision))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("lock %q: %w", l.Key, err)
		}
		now, rerr := readLease(ctx, kv, l.Key, l.TTL)
		if errors.Is(rerr, jetstream.ErrKeyNotFound) {
			return nil // released or removed meanwhile: nobody holds it
		}
		if rerr != nil {
			return fmt.Errorf("lock %q: %w", l.Key, rerr)
		}
		if !now.sameHolder(l) {
			return fmt.Errorf("%w: %s was taken over just now by %s; nothing was changed", ErrLocked, l.Key, now.Describe())
		}
		if attempt == 4 {
			// Renewed five times while being removed: not a lease's pace.
			return fmt.Errorf("%w: %s keeps changing (renewed by %s as it was removed); nothing was changed", ErrLocked, l.Key, now.Describe())
		}
		l = now
	}
}

// sameHolder reports whether l and o are one holder's lease (o perhaps
// renewed since), not a lease another process took over.
func (l Lease) sameHolder(o Lease) bool {
	return l.Holder == o.Holder && l.PID == o.PID && l.PIDNS == o.PIDNS && l.Since.Equal(o.Since)
}

// giveUpDivisor sets how long a holder's renewals may fail before it
// gives the lease up itself: TTL/giveUpDivisor. Another process can take
// the lease over once the server has not seen a renewal for the whole TTL;
// the holder must have stopped by then, and the other half is for the
// work in flight to finish.
const giveUpDivisor = 2

// renew renews the lease every quarter of its TTL, and after a failed
// renewal every tenth, until it is released. A renewal refused because the
// lease changed (taken over, unlocked) loses it at once. A renewal that
// succeeds, however late, proves that nobody took the lease over (it is
// conditional on the revision); renewals failing otherwise (the server or
// the bucket unreachable) for TTL/giveUpDivisor since the last one that
// succeeded was sent make the holder give the lease up.
func (l *Lock) renew(val []byte) {
	defer close(l.done)
	every, retry := l.ttl/4, max(l.ttl/10, time.Millisecond)
	giveUp := l.ttl / giveUpDivisor
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		left := giveUp - clock().Sub(l.renewedAt)
		// A late answer is as good as an early one: wait for it until the
		// holder would give up anyway.
		ctx, cancel := context.WithTimeout(context.Background(), max(left, retry))
		sent := clock()
		rev, err := l.kv.Update(ctx, l.key, val, l.rev)
		if err == nil {
			l.rev, l.renewedAt = rev, sent
		}
		failedFor := clock().Sub(l.renewedAt)
		l.mu.Unlock()
		cancel()
		switch {
		case err == nil:
			t.Reset(every)
		case errors.Is(err, jetstream.ErrKeyExists):
			close(l.lost)
			return
		case failedFor >= giveUp:
			l.giveUp(failedFor, err)
			return
		default:
			t.Reset(min(retry, giveUp-failedFor))
		}
	}
}

// giveUp ends the holder's lease itself: its renewals failed for failedFor.
func (l *Lock) giveUp(failedFor time.Duration, last error) {
	l.mu.Lock()
	l.failure = fmt.Errorf("%w %s: its renewals failed for %s, over half its TTL of %s (last: %v); "+
		"stopped before another process could take it over", ErrLost, l.key, failedFor.Round(time.Millisecond), l.ttl,
		strings.TrimPrefix(last.Error(), "nats: "))
	l.mu.Unlock()
	close(l.lost)
}

// Lost is closed when the lease was lost: another process took it over
// or unlocked it, or its renewals kept failing (see renew). The holder
// must stop.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// LostErr is ErrLost, naming the lease and why, once the lease was lost;
// nil before.
func (l *Lock) LostErr() error {
	select {
	case <-l.lost:
	default:
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure != nil {
		return l.failure
	}
	return fmt.Errorf("%w %s: another process took it over or unlocked it (it was not renewed within its TTL of %s, or %s removed it); "+
		"stopped after the work in flight", ErrLost, l.key, l.ttl, cmp.Or(l.unlockHint, "an unlock"))
}

// Release gives the lock up.
func (l *Lock) Release(ctx context.Context) {
	if l == nil || l.closed {
		return
	}
	l.closed = true
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
}

// WithLease returns ctx, cancelled when the lease is lost with LostErr as
// its cause (context.Cause): the work stops taking new items and, as its
// callers report, fails with LostErr.
func (l *Lock) WithLease(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-l.Lost():
			cancel(l.LostErr())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Explain is err, or, when err comes of the cancellation of a context
// WithLease made (ctx or one derived from it) because the lease was lost,
// the lease's LostErr: a failure with its reason, not an interruption.
func Explain(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrLost) {
		return cause
	}
	return err
}
