package kv

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A comparison of many changed keys hands them out in key order across the
// blocks its workers compute, and leaves no consumer behind.
func TestCompareManyKeysInOrder(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := createBucket(t, js, "big", 3)
	const n = 3*changedBlock + 17
	// Written out of key order.
	for i := 0; i < n; i++ {
		k := (i * 7919) % n
		put(t, kv, fmt.Sprintf("k.%04d", k), fmt.Sprintf(`{"v":%d}`, k))
	}
	put(t, kv, "gone", "x")
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k.%04d", i)
		if i%5 == 0 {
			// Rewritten equal as JSON: identical.
			put(t, kv, k, fmt.Sprintf(`{ "v" : %d }`, i))
		} else {
			put(t, kv, k, fmt.Sprintf(`{"v":%d,"w":true}`, i))
		}
	}
	if err := kv.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int64{0, 1} {
		c, err := CompareTimes(ctx, js, TimeDiffConfig{Bucket: "big", From: at, ValueBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		if err := c.Changed(ctx, func(d KeyDiff) error {
			keys = append(keys, d.Key)
			if len(d.Changes) == 0 {
				t.Errorf("%s: no changes", d.Key)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var deleted []string
		if err := c.OnlyLeft(ctx, func(k KeyState) error {
			deleted = append(deleted, k.Key+"="+string(k.Value))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		identical := (n + 4) / 5
		if !slices.IsSorted(keys) || len(keys) != n-identical || c.Identical() != identical || !slices.Equal(deleted, []string{"gone=x"}) {
			t.Fatalf("budget %d: %d changed (sorted %v), %d identical, deleted %v", budget, len(keys), slices.IsSorted(keys), c.Identical(), deleted)
		}
		if !c.Differs() {
			t.Fatal("no difference reported")
		}
	}
	// A walk that fails stops the comparison with its error.
	c, err := CompareTimes(ctx, js, TimeDiffConfig{Bucket: "big", From: at})
	if err != nil {
		t.Fatal(err)
	}
	stop := fmt.Errorf("enough")
	seen := 0
	if err := c.Changed(ctx, func(KeyDiff) error {
		if seen++; seen == changedBlock+1 {
			return stop
		}
		return nil
	}); err != stop {
		t.Fatalf("walk error %v, want %v", err, stop)
	}
	lister := js.ListStreams(context.Background())
	for info := range lister.Info() {
		if info.State.Consumers != 0 {
			t.Errorf("stream %s has %d consumers left", info.Config.Name, info.State.Consumers)
		}
	}
}
