package kv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KeyState is one key's value on one side of a bucket diff.
type KeyState struct {
	Key      string
	Revision uint64
	Time     time.Time
	Value    []byte
	// Reason, on a deleted key (OnlyLeft), is the Nats-Marker-Reason of
	// the subject delete marker that deleted it: MaxAge when it expired.
	Reason string
	// Gone: the key expired and the server no longer holds its value
	// (Value is nil); Revision and Time are the marker's, when it expired.
	Gone bool
}

// KeyDiff is a key present on both sides with different values. Its
// KeyStates carry no values: Changes says how they differ.
type KeyDiff struct {
	Key     string
	Left    KeyState
	Right   KeyState
	Changes []Change
}

// BucketDiff compares two states of keys: a bucket at two times, or two
// buckets. Keys are sorted in every list.
type BucketDiff struct {
	// OnlyLeft are keys with a value on the left only: deleted since the
	// earlier time, or missing from the right bucket.
	OnlyLeft []KeyState
	// OnlyRight are keys with a value on the right only: added.
	OnlyRight []KeyState
	Changed   []KeyDiff
	// Identical counts keys with equal values on both sides. A diff between
	// times counts only keys written between them.
	Identical int
	// Warnings are caveats about the result, for people.
	Warnings []string
	Stats    Stats
}

// Empty reports whether the two sides are the same.
func (d *BucketDiff) Empty() bool {
	return len(d.OnlyLeft) == 0 && len(d.OnlyRight) == 0 && len(d.Changed) == 0
}

// TimeDiffConfig selects a bucket's states at two times.
type TimeDiffConfig struct {
	Bucket string
	// Keys are key patterns; none means every key.
	Keys []string
	// From is the earlier time; To the later one, zero meaning now. The
	// state at a time is every key's last revision strictly before it.
	From time.Time
	To   time.Time
	// ValueBudget bounds the bytes of values kept in memory; zero means
	// DefaultValueBudget.
	ValueBudget int64
	// Progress, if set, hears how many revisions the comparison has read,
	// now and then while it reads.
	Progress func(revisions int)
}

// Comparison is a bucket diff ready to be walked: the keys whose states
// differ byte for byte, in key order, with both states. The walks
// (OnlyLeft, OnlyRight, Changed) hand out one key at a time, so that a
// caller can write a diff of any size without holding it whole; each may
// be walked once.
type Comparison struct {
	// Warnings are caveats about the result, for people.
	Warnings []string

	pairs     []pair
	ls, rs    state
	identical int
	stats     Stats
	started   time.Time
	onlyLeft  int
	onlyRight int
	changed   int
}

// pair is one key's states on both sides; a nil record is no revision.
type pair struct {
	key  string
	l, r *record
}

// Stats is what the comparison read so far, and for how long.
func (c *Comparison) Stats() Stats {
	s := c.stats
	s.Elapsed, s.onRead = time.Since(c.started), nil
	return s
}

// Identical counts keys with equal values on both sides; it is complete
// once Changed has been walked. A diff between times counts only keys
// written between them.
func (c *Comparison) Identical() int { return c.identical }

// Differs reports whether a walk found a difference so far.
func (c *Comparison) Differs() bool { return c.onlyLeft+c.onlyRight+c.changed > 0 }

// Counts are how many keys the walks handed out so far.
func (c *Comparison) Counts() (onlyLeft, onlyRight, changed int) {
	return c.onlyLeft, c.onlyRight, c.changed
}

// OnlyLeft calls fn, in key order, for each key with a value on the left
// only: deleted since the earlier time, or missing from the right bucket.
func (c *Comparison) OnlyLeft(ctx context.Context, fn func(KeyState) error) error {
	return c.onlyOne(ctx, c.ls, func(p *pair) (*record, bool) { return p.l, p.l.present() && !p.r.present() }, &c.onlyLeft, func(k KeyState, p *pair) error {
		if p.r != nil {
			k.Reason = p.r.reason
		}
		return fn(k)
	})
}

// OnlyRight calls fn, in key order, for each key with a value on the right
// only: added.
func (c *Comparison) OnlyRight(ctx context.Context, fn func(KeyState) error) error {
	return c.onlyOne(ctx, c.rs, func(p *pair) (*record, bool) { return p.r, p.r.present() && !p.l.present() }, &c.onlyRight, func(k KeyState, _ *pair) error { return fn(k) })
}

func (c *Comparison) onlyOne(ctx context.Context, s state, pick func(*pair) (*record, bool), n *int, fn func(KeyState, *pair) error) error {
	for i := range c.pairs {
		p := &c.pairs[i]
		r, ok := pick(p)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := s.value(ctx, r)
		if err != nil {
			return err
		}
		*n++
		if err := fn(KeyState{Key: p.key, Revision: r.rev, Time: r.time, Value: v, Gone: r.gone}, p); err != nil {
			return err
		}
		r.value = nil
	}
	return nil
}

// changedBlock is how many changed keys one diff worker takes at a time.
const changedBlock = 256

// Changed calls fn, in key order, for each key whose values differ, with
// their changes and without the values. The diffs are computed on every
// core, a block of keys at a time, a few blocks ahead of fn; keys whose
// values turn out equal as JSON (spelled differently) count as identical.
func (c *Comparison) Changed(ctx context.Context, fn func(KeyDiff) error) error {
	var both []int
	for i := range c.pairs {
		if p := &c.pairs[i]; p.l.present() && p.r.present() {
			both = append(both, i)
		}
	}
	type block struct {
		diffs     []KeyDiff
		identical int
		err       error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Blocks are computed in parallel and handed to fn in order: each
	// block's result has its own channel, queued in order.
	queue := make(chan chan block, runtime.GOMAXPROCS(0)+1)
	go func() {
		defer close(queue)
		for start := 0; start < len(both); start += changedBlock {
			out := make(chan block, 1)
			select {
			case queue <- out:
			case <-ctx.Done():
				return
			}
			go func(idx []int) {
				var b block
				for _, i := range idx {
					if ctx.Err() != nil {
						b.err = ctx.Err()
						break
					}
					d, err := c.diffPair(ctx, &c.pairs[i])
					if err != nil {
						b.err = err
						break
					}
					if len(d.Changes) == 0 {
						b.identical++
						continue
					}
					b.diffs = append(b.diffs, d)
				}
				out <- b
			}(both[start:min(start+changedBlock, len(both))])
		}
	}()
	for out := range queue {
		b := <-out
		if b.err != nil {
			return b.err
		}
		c.identical += b.identical
		for _, d := range b.diffs {
			c.changed++
			if err := fn(d); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// diffPair computes one key's changes and lets its values go.
func (c *Comparison) diffPair(ctx context.Context, p *pair) (KeyDiff, error) {
	l, r := p.l, p.r
	lv, err := c.ls.value(ctx, l)
	if err != nil {
		return KeyDiff{}, err
	}
	rv, err := c.rs.value(ctx, r)
	if err != nil {
		return KeyDiff{}, err
	}
	changes, err := diffLabelled(ctx, lv, rv, func() (string, string) {
		return fmt.Sprintf("%s/%s@%d", c.ls.b.name, p.key, l.rev), fmt.Sprintf("%s/%s@%d", c.rs.b.name, p.key, r.rev)
	})
	if err != nil {
		return KeyDiff{}, err
	}
	l.value, r.value = nil, nil
	return KeyDiff{
		Key:     p.key,
		Left:    KeyState{Key: p.key, Revision: l.rev, Time: l.time},
		Right:   KeyState{Key: p.key, Revision: r.rev, Time: r.time},
		Changes: changes,
	}, nil
}

// Collect walks the whole comparison into a BucketDiff.
func (c *Comparison) Collect(ctx context.Context) (*BucketDiff, error) {
	d := &BucketDiff{Warnings: c.Warnings}
	err := c.OnlyLeft(ctx, func(k KeyState) error {
		d.OnlyLeft = append(d.OnlyLeft, k)
		return nil
	})
	if err == nil {
		err = c.OnlyRight(ctx, func(k KeyState) error {
			d.OnlyRight = append(d.OnlyRight, k)
			return nil
		})
	}
	if err == nil {
		err = c.Changed(ctx, func(k KeyDiff) error {
			d.Changed = append(d.Changed, k)
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	d.Identical = c.identical
	d.Stats = c.Stats()
	return d, nil
}

// add files one key's two states: identical ones are counted, and keys
// with no value on either side are left out.
func (c *Comparison) add(key string, l, r *record) {
	switch {
	case !l.present() && !r.present():
		return
	case l.present() && r.present() && sameValue(l, r):
		c.identical++
		c.ls.release(l)
		c.rs.release(r)
		return
	}
	c.pairs = append(c.pairs, pair{key: key, l: l, r: r})
}

// DiffTimes compares a bucket's state at From with its state at To: see
// CompareTimes.
func DiffTimes(ctx context.Context, js jetstream.JetStream, cfg TimeDiffConfig) (*BucketDiff, error) {
	c, err := CompareTimes(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	return c.Collect(ctx)
}

// CompareTimes reads a bucket's states at From and at To. Only keys
// written in [From, To) can differ. Against now, those are the keys whose
// last revision is at or after From, found with one last-per-subject pass;
// against an earlier To, one pass over the window. Their last revisions
// before From come from batched multi_last direct gets when they are few,
// else from one pass over the revisions before From. Memory holds those
// keys only, values within ValueBudget and hashes beyond.
func CompareTimes(ctx context.Context, js jetstream.JetStream, cfg TimeDiffConfig) (*Comparison, error) {
	started := time.Now()
	b, err := openBucket(ctx, js, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	budget := valueBudget(cfg.ValueBudget)
	side := state{b: b, budget: &budget}
	c := &Comparison{ls: side, rs: side, started: started}
	c.stats.onRead = cfg.Progress

	// right holds the keys written in [From, To) with their state at To;
	// every other key is the same at both times. mayHaveExisted marks keys
	// whose revisions before From a purge or the history limit may have
	// removed.
	right := map[string]*record{}
	mayHaveExisted := map[string]bool{}
	if cfg.To.IsZero() {
		// The state now is each key's last revision, and a key was written
		// since From exactly when that revision is: one last-per-subject
		// pass, whatever the number of revisions in the window.
		spec := scanSpec{patterns: cfg.Keys, deliver: jetstream.DeliverLastPerSubjectPolicy}
		err = b.scan(ctx, js, spec, func(e Entry) error {
			c.stats.add(e)
			if !e.Time.Before(cfg.From) {
				right[e.Key] = side.record(e)
				if e.Op == OpPurge || b.history() == 1 {
					mayHaveExisted[e.Key] = true
				}
			}
			return nil
		})
	} else {
		written := map[string]int64{}
		spec := scanSpec{patterns: cfg.Keys, deliver: jetstream.DeliverByStartTimePolicy, startTime: cfg.From}
		err = b.scan(ctx, js, spec, func(e Entry) error {
			if !e.Time.Before(cfg.To) {
				return errStop
			}
			c.stats.add(e)
			if old := right[e.Key]; old != nil {
				side.update(old, e)
			} else {
				right[e.Key] = side.record(e)
			}
			written[e.Key]++
			if e.Op == OpPurge || b.history() > 0 && written[e.Key] >= b.history() {
				mayHaveExisted[e.Key] = true
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(right))
	left, err := side.lastBefore(ctx, js, keys, cfg.Keys, cfg.From, &c.stats)
	if err != nil {
		return nil, err
	}

	gone := 0
	c.pairs = make([]pair, 0, len(keys))
	for _, k := range keys {
		l, r := left[k], right[k]
		switch {
		case l == nil && r.expired():
			// The server wrote the marker where the key's value expired
			// in the window, and removed the value: the key had one
			// before, which is gone. (It may have been written in the
			// window too: nothing the server holds tells.)
			l = expiredValue(r)
		case l == nil && mayHaveExisted[k]:
			gone++
		}
		c.add(k, l, r)
	}
	if gone > 0 {
		since := cfg.From.UTC().Format(time.RFC3339)
		keys := fmt.Sprintf("%d keys written since %s have no older revision left; they", gone, since)
		if gone == 1 {
			keys = fmt.Sprintf("1 key written since %s has no older revision left; it", since)
		}
		c.Warnings = append(c.Warnings, fmt.Sprintf(
			"bucket %q has history %d, and purges remove revisions: %s may have existed then (reported as added, or not at all when now deleted)",
			b.name, b.history(), keys))
	}
	return c, nil
}

// BucketsDiffConfig selects two buckets, possibly on two servers.
type BucketsDiffConfig struct {
	Left  string
	Right string
	// LeftPlace and RightPlace say where each bucket is when they are on
	// two connections ("context dr", a server URL), for errors about them.
	LeftPlace, RightPlace string
	// Keys are key patterns; none means every key.
	Keys        []string
	ValueBudget int64
	// Progress is as TimeDiffConfig's.
	Progress func(revisions int)
}

// DiffBuckets compares the current states of two buckets: see
// CompareBuckets.
func DiffBuckets(ctx context.Context, leftJS, rightJS jetstream.JetStream, cfg BucketsDiffConfig) (*BucketDiff, error) {
	c, err := CompareBuckets(ctx, leftJS, rightJS, cfg)
	if err != nil {
		return nil, err
	}
	return c.Collect(ctx)
}

// CompareBuckets reads the current states of two buckets: one
// last-per-subject pass over each, keeping the left side as hashes (and
// values while the budget lasts) and comparing the right side as it
// streams by, so that memory holds the left bucket and the keys that
// differ.
func CompareBuckets(ctx context.Context, leftJS, rightJS jetstream.JetStream, cfg BucketsDiffConfig) (*Comparison, error) {
	started := time.Now()
	lb, err := openBucket(ctx, leftJS, cfg.Left)
	if err != nil {
		return nil, placed(err, cfg.LeftPlace)
	}
	rb, err := openBucket(ctx, rightJS, cfg.Right)
	if err != nil {
		return nil, placed(err, cfg.RightPlace)
	}
	budget := valueBudget(cfg.ValueBudget)
	c := &Comparison{ls: state{b: lb, budget: &budget}, rs: state{b: rb, budget: &budget}, started: started}
	c.stats.onRead = cfg.Progress

	left := map[string]*record{}
	spec := scanSpec{patterns: cfg.Keys, deliver: jetstream.DeliverLastPerSubjectPolicy}
	err = lb.scan(ctx, leftJS, spec, func(e Entry) error {
		c.stats.add(e)
		if e.Op == OpPut {
			left[e.Key] = c.ls.record(e)
		}
		return nil
	})
	if err != nil {
		return nil, placed(err, cfg.LeftPlace)
	}
	err = rb.scan(ctx, rightJS, spec, func(e Entry) error {
		c.stats.add(e)
		if e.Op != OpPut {
			return nil
		}
		l := left[e.Key]
		delete(left, e.Key)
		c.add(e.Key, l, c.rs.record(e))
		return nil
	})
	if err != nil {
		return nil, placed(err, cfg.RightPlace)
	}
	for k, l := range left {
		c.add(k, l, nil)
	}
	slices.SortFunc(c.pairs, func(a, b pair) int { return strings.Compare(a.key, b.key) })
	return c, nil
}

func valueBudget(b int64) int64 {
	if b <= 0 {
		return DefaultValueBudget
	}
	return b
}

// placed says where the other bucket of a diff is in an error about it,
// so that "not found" names the side that is missing.
func placed(err error, place string) error {
	if place == "" || errors.Is(err, context.Canceled) {
		return err
	}
	var nf *NotFoundError
	if errors.As(err, &nf) {
		named := *nf
		named.Place = place
		return &named
	}
	return fmt.Errorf("%s: %w", place, err)
}
