package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultLockTTL is how long a lock outlives a holder that died.
const DefaultLockTTL = 30 * time.Second

// Lock is a lease on a key of the LockBucket: created only if absent, kept
// alive by its holder, and taken over by anyone once the holder has not
// renewed it for its TTL (a SIGKILLed sweep blocks the next one for at most
// the TTL).
type Lock struct {
	kv     jetstream.KeyValue
	key    string
	ttl    time.Duration
	mu     sync.Mutex
	rev    uint64
	lost   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

type lockValue struct {
	Holder string        `json:"holder"`
	PID    int           `json:"pid"`
	Since  time.Time     `json:"since"`
	TTL    time.Duration `json:"ttl"`
}

// AcquireLock takes the lock on key, or fails with ErrLocked.
func AcquireLock(ctx context.Context, js jetstream.JetStream, key string, ttl time.Duration) (*Lock, error) {
	if ttl <= 0 {
		ttl = DefaultLockTTL
	}
	kv, err := js.KeyValue(ctx, LockBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LockBucket, Description: "jetctl dlq sweep and redrive locks", History: 1})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, LockBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock bucket %q: %w", LockBucket, err)
	}
	host, _ := os.Hostname()
	val, _ := json.Marshal(lockValue{Holder: host, PID: os.Getpid(), Since: time.Now().UTC(), TTL: ttl})
	rev, err := kv.Create(ctx, key, val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		e, gerr := kv.Get(ctx, key)
		if gerr != nil {
			return nil, fmt.Errorf("lock %q: %w", key, gerr)
		}
		var held lockValue
		_ = json.Unmarshal(e.Value(), &held)
		if held.TTL <= 0 {
			held.TTL = ttl
		}
		// The entry's time is the holder's last renewal, on the server's clock.
		age := time.Since(e.Created())
		if age < held.TTL {
			return nil, fmt.Errorf("%w: %s is held by pid %d on %s since %s (renewed %s ago; it expires %s after the holder stops renewing it)",
				ErrLocked, key, held.PID, held.Holder, held.Since.Format(time.RFC3339), age.Round(time.Millisecond), held.TTL)
		}
		rev, err = kv.Update(ctx, key, val, e.Revision())
		if err != nil {
			return nil, fmt.Errorf("%w: %s was taken over by another process just now", ErrLocked, key)
		}
	} else if err != nil {
		return nil, fmt.Errorf("lock %q: %w", key, err)
	}
	l := &Lock{kv: kv, key: key, ttl: ttl, rev: rev, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(val)
	return l, nil
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

// Lost is closed when another process took the lock over (this one failed
// to renew it in time): the holder must stop.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

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
