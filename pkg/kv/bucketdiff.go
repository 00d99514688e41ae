package kv

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KeyState is one key's value on one side of a bucket diff.
type KeyState struct {
	Key      string
	Revision uint64
	Time     time.Time
	Value    []byte
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

	// names are the buckets of each changed key, for its diff's labels.
	names [][2]string
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
}

// DiffTimes compares a bucket's state at From with its state at To. Only
// keys written in [From, To) can differ. Against now, those are the keys
// whose last revision is at or after From, found with one last-per-subject
// pass; against an earlier To, one ordered-consumer pass over the window.
// Their last revisions before From come from batched multi_last direct gets
// when they are few, else from one pass over the revisions before From.
// Memory holds those keys only, values within ValueBudget.
func DiffTimes(ctx context.Context, js jetstream.JetStream, cfg TimeDiffConfig) (*BucketDiff, error) {
	started := time.Now()
	b, err := openBucket(ctx, js, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	budget := valueBudget(cfg.ValueBudget)
	side := state{b: b, budget: &budget}
	d := &BucketDiff{}

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
			d.Stats.add(e)
			if !e.Time.Before(cfg.From) {
				right[e.Key] = side.record(e)
				mayHaveExisted[e.Key] = e.Op == OpPurge || b.history() == 1
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
			d.Stats.add(e)
			if old := right[e.Key]; old != nil && old.kept {
				budget += int64(len(old.value))
			}
			right[e.Key] = side.record(e)
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
	keys := sortedKeys(right)
	left, err := side.lastBefore(ctx, js, keys, cfg.Keys, cfg.From, &d.Stats)
	if err != nil {
		return nil, err
	}

	gone := 0
	for _, k := range keys {
		l, r := left[k], right[k]
		if l == nil && mayHaveExisted[k] {
			gone++
		}
		if err := d.compare(ctx, k, side, l, side, r); err != nil {
			return nil, err
		}
		// Let the values go as soon as they are compared.
		delete(left, k)
		delete(right, k)
	}
	d.finish()
	if gone > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf(
			"bucket %q has history %d, and purges remove revisions: %d keys written since %s have no older revision left; they may have existed then (reported as added, or not at all when now deleted)",
			b.name, b.history(), gone, cfg.From.UTC().Format(time.RFC3339)))
	}
	d.Stats.Elapsed = time.Since(started)
	return d, nil
}

// BucketsDiffConfig selects two buckets, possibly on two servers.
type BucketsDiffConfig struct {
	Left  string
	Right string
	// Keys are key patterns; none means every key.
	Keys        []string
	ValueBudget int64
}

// DiffBuckets compares the current states of two buckets: one
// last-per-subject pass over each, keeping the left side as hashes (and
// values while the budget lasts) and comparing the right side as it
// streams by.
func DiffBuckets(ctx context.Context, leftJS, rightJS jetstream.JetStream, cfg BucketsDiffConfig) (*BucketDiff, error) {
	started := time.Now()
	lb, err := openBucket(ctx, leftJS, cfg.Left)
	if err != nil {
		return nil, err
	}
	rb, err := openBucket(ctx, rightJS, cfg.Right)
	if err != nil {
		return nil, err
	}
	budget := valueBudget(cfg.ValueBudget)
	ls, rs := state{b: lb, budget: &budget}, state{b: rb, budget: &budget}
	d := &BucketDiff{}

	left := map[string]*record{}
	spec := scanSpec{patterns: cfg.Keys, deliver: jetstream.DeliverLastPerSubjectPolicy}
	err = lb.scan(ctx, leftJS, spec, func(e Entry) error {
		d.Stats.add(e)
		if e.Op == OpPut {
			left[e.Key] = ls.record(e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = rb.scan(ctx, rightJS, spec, func(e Entry) error {
		d.Stats.add(e)
		if e.Op != OpPut {
			return nil
		}
		l := left[e.Key]
		delete(left, e.Key)
		if l != nil && l.kept {
			// Give the left value's memory back once it is compared.
			budget += int64(len(l.value))
		}
		return d.compare(ctx, e.Key, ls, l, rs, rs.record(e))
	})
	if err != nil {
		return nil, err
	}
	for k, l := range left {
		if err := d.compare(ctx, k, ls, l, rs, nil); err != nil {
			return nil, err
		}
	}
	d.finish()
	d.sort()
	d.Stats.Elapsed = time.Since(started)
	return d, nil
}

// compare files one key under only-left, only-right, changed or identical.
func (d *BucketDiff) compare(ctx context.Context, key string, ls state, l *record, rs state, r *record) error {
	switch {
	case !l.present() && !r.present():
		return nil
	case !r.present():
		v, err := ls.value(ctx, l)
		d.OnlyLeft = append(d.OnlyLeft, KeyState{Key: key, Revision: l.rev, Time: l.time, Value: v})
		return err
	case !l.present():
		v, err := rs.value(ctx, r)
		d.OnlyRight = append(d.OnlyRight, KeyState{Key: key, Revision: r.rev, Time: r.time, Value: v})
		return err
	case sameValue(l, r):
		d.Identical++
		return nil
	}
	lv, err := ls.value(ctx, l)
	if err != nil {
		return err
	}
	rv, err := rs.value(ctx, r)
	if err != nil {
		return err
	}
	// The value diffs are computed together, in parallel, by finish.
	d.Changed = append(d.Changed, KeyDiff{
		Key:   key,
		Left:  KeyState{Key: key, Revision: l.rev, Time: l.time, Value: lv},
		Right: KeyState{Key: key, Revision: r.rev, Time: r.time, Value: rv},
	})
	d.names = append(d.names, [2]string{ls.b.name, rs.b.name})
	return nil
}

// finish computes the value diffs of the changed keys on every core, drops
// the keys whose values turn out equal as JSON (counted as identical), and
// lets the values go.
func (d *BucketDiff) finish() {
	workers := min(runtime.GOMAXPROCS(0), len(d.Changed))
	var wg sync.WaitGroup
	next := make(chan int, len(d.Changed))
	for i := range d.Changed {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := &d.Changed[i]
				c.Changes = Diff(c.Left.Value, c.Right.Value,
					fmt.Sprintf("%s/%s@%d", d.names[i][0], c.Key, c.Left.Revision),
					fmt.Sprintf("%s/%s@%d", d.names[i][1], c.Key, c.Right.Revision))
				c.Left.Value, c.Right.Value = nil, nil
			}
		}()
	}
	wg.Wait()
	kept := d.Changed[:0]
	for _, c := range d.Changed {
		if len(c.Changes) == 0 {
			// Equal as JSON, spelled differently.
			d.Identical++
			continue
		}
		kept = append(kept, c)
	}
	d.Changed, d.names = kept, nil
}

func (d *BucketDiff) sort() {
	byKey := func(s []KeyState) {
		sort.Slice(s, func(i, j int) bool { return s[i].Key < s[j].Key })
	}
	byKey(d.OnlyLeft)
	byKey(d.OnlyRight)
	sort.Slice(d.Changed, func(i, j int) bool { return d.Changed[i].Key < d.Changed[j].Key })
}

func valueBudget(b int64) int64 {
	if b <= 0 {
		return DefaultValueBudget
	}
	return b
}
