package kv

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestParseAckReply(t *testing.T) {
	cases := []struct {
		reply string
		want  ackMeta
		ok    bool
	}{
		{"$JS.ACK.KV_cfg.c1.1.42.7.1700000000000000001.3", ackMeta{sseq: 42, cseq: 7, ts: 1700000000000000001, pending: 3}, true},
		{"$JS.ACK.hub.ACCHASH.KV_cfg.c1.1.42.7.1700000000000000001.0.rand", ackMeta{sseq: 42, cseq: 7, ts: 1700000000000000001}, true},
		{"$JS.ACK._.ACCHASH.KV_cfg.c1.1.42.7.1700000000000000001.0", ackMeta{sseq: 42, cseq: 7, ts: 1700000000000000001}, true},
		{"$JS.ACK.KV_cfg.c1.1.x.7.1.3", ackMeta{}, false},
		{"$JS.ACK.KV_cfg.c1.1.42.7.1", ackMeta{}, false},
		{"_INBOX.abc", ackMeta{}, false},
	}
	for _, c := range cases {
		got, ok := parseAckReply(c.reply)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: got %+v %v, want %+v %v", c.reply, got, ok, c.want, c.ok)
		}
	}
}

func TestAPIPrefix(t *testing.T) {
	for _, c := range []struct {
		o    jetstream.JetStreamOptions
		want string
	}{
		{jetstream.JetStreamOptions{}, "$JS.API."},
		{jetstream.JetStreamOptions{Domain: "hub"}, "$JS.hub.API."},
		{jetstream.JetStreamOptions{APIPrefix: "$JS.other.API"}, "$JS.other.API."},
		{jetstream.JetStreamOptions{APIPrefix: "x."}, "x."},
	} {
		if got := apiPrefix(c.o); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}

// A comparison of many changed keys hands them out in key order across the
// blocks its workers compute, and leaves no consumer behind.
func TestCompareManyKeysInOrder(t *testing.T) {
	js := startServer(t, t.TempDir())
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
