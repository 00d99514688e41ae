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
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultTTL is how long a lock outlives a holder that died.
const DefaultTTL = 30 * time.Second

// Bucket is the KV bucket holding the leases. Its name is from when only
// dlq had leases; it stays, so that a lease an older jetctl holds is seen.
const Bucket = "jetctl_dlq_locks"

// ErrLocked: another process holds the lease.
var ErrLocked = errors.New("locked")

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
	lost       chan struct{}
	stop       chan struct{}
	done       chan struct{}
	closed     bool
}

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

// Expired reports whether the holder has not renewed the lease for its TTL.
func (l Lease) Expired(now time.Time) bool { return now.Sub(l.Renewed) >= l.TTL }

// Describe says who holds the lease, for messages.
func (l Lease) Describe() string {
	return fmt.Sprintf("pid %d on %s since %s", l.PID, l.Holder, l.Since.Format(time.RFC3339))
}

// ErrLost: another process took the lease over, or it was unlocked,
// while its holder was working.
var ErrLost = errors.New("lost its lease")

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
	return Lease{Key: key, Holder: v.Holder, PID: v.PID, PIDNS: v.PIDNS, Since: v.Since, TTL: v.TTL, Renewed: e.Created(), Revision: e.Revision()}, nil
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
	val, _ := json.Marshal(lockValue{Holder: host, PID: os.Getpid(), PIDNS: pidNamespace(), Since: time.Now().UTC(), TTL: ttl})
	rev, err := kv.Create(ctx, key, val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		held, gerr := readLease(ctx, kv, key, ttl)
		if errors.Is(gerr, jetstream.ErrKeyNotFound) {
			// Released between the create and the get: try once more.
			rev, err = kv.Create(ctx, key, val)
			if err != nil {
				return nil, fmt.Errorf("%w: %s was taken by another process just now", ErrLocked, key)
			}
			return startLock(kv, key, ttl, rev, val, unlockHint), nil
		}
		if gerr != nil {
			return nil, fmt.Errorf("lock %q: %w", key, gerr)
		}
		if !held.HolderGone() && !held.Expired(time.Now()) {
			age := time.Since(held.Renewed)
			// No flag is named: migrate has a fixed TTL, dlq a --lock-ttl.
			return nil, fmt.Errorf("%w: %s is held by %s (renewed %s ago; it expires %s after its holder stops renewing it); "+
				"if that process is gone, run: %s",
				ErrLocked, key, held.Describe(), age.Round(time.Millisecond), held.TTL, unlockHint)
		}
		rev, err = kv.Update(ctx, key, val, held.Revision)
		if err != nil {
			return nil, fmt.Errorf("%w: %s was taken over by another process just now", ErrLocked, key)
		}
	} else if err != nil {
		return nil, fmt.Errorf("lock %q: %w", key, err)
	}
	return startLock(kv, key, ttl, rev, val, unlockHint), nil
}

func startLock(kv jetstream.KeyValue, key string, ttl time.Duration, rev uint64, val []byte, unlockHint string) *Lock {
	l := &Lock{kv: kv, key: key, ttl: ttl, unlockHint: unlockHint, rev: rev, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
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

// Remove removes the lease l as it was read: if its holder renewed it
// since, it is alive and the lease stays (ErrLocked). A live holder whose
// lease is removed stops at its next renewal.
func Remove(ctx context.Context, js jetstream.JetStream, l Lease) error {
	kv, err := bucket(ctx, js, false)
	if err != nil {
		return fmt.Errorf("lock bucket %q: %w", Bucket, err)
	}
	if err := kv.Delete(ctx, l.Key, jetstream.LastRevision(l.Revision)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("%w: %s was renewed or taken over just now: its holder is alive; nothing was changed", ErrLocked, l.Key)
		}
		return fmt.Errorf("lock %q: %w", l.Key, err)
	}
	return nil
}

func (l *Lock) renew(val []byte) {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		l.mu.Lock()
		rev, err := l.kv.Update(ctx, l.key, val, l.rev)
		if err == nil {
			l.rev = rev
		}
		l.mu.Unlock()
		cancel()
		if err != nil && errors.Is(err, jetstream.ErrKeyExists) {
			close(l.lost)
			return
		}
	}
}

// Lost is closed when another process took the lock over or unlocked it
// (this one failed to renew it in time): the holder must stop.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// LostErr is ErrLost, with the key, once the lease was lost; nil before.
func (l *Lock) LostErr() error {
	select {
	case <-l.lost:
		return fmt.Errorf("%w %s: another process took it over or unlocked it (it was not renewed within its TTL of %s, or %s removed it); "+
			"stopped after the work in flight", ErrLost, l.key, l.ttl, cmp.Or(l.unlockHint, "an unlock"))
	default:
		return nil
	}
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

// WithLease returns ctx, cancelled when the lease is lost: the work stops
// taking new items and, as its callers report, fails with LostErr.
func (l *Lock) WithLease(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-l.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
