package kv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

func createBucket(tb testing.TB, js jetstream.JetStream, name string, history uint8) jetstream.KeyValue {
	tb.Helper()
	kv, err := js.CreateKeyValue(testCtx(tb), jetstream.KeyValueConfig{Bucket: name, History: history})
	if err != nil {
		tb.Fatal(err)
	}
	return kv
}

func put(tb testing.TB, kv jetstream.KeyValue, key, value string) uint64 {
	tb.Helper()
	rev, err := kv.PutString(testCtx(tb), key, value)
	if err != nil {
		tb.Fatal(err)
	}
	return rev
}

func TestHistoryAndRevisions(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := createBucket(t, js, "cfg", 10)
	r1 := put(t, kv, "app", `{"replicas":3}`)
	other := put(t, kv, "other", `x`)
	r2 := put(t, kv, "app", `{"replicas":5}`)
	if err := kv.Delete(ctx, "app"); err != nil {
		t.Fatal(err)
	}

	h, err := History(ctx, js, HistoryConfig{Bucket: "cfg", Key: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Revision != r1 || h[1].Revision != r2 || h[2].Op != OpDel {
		t.Fatalf("history: %+v", h)
	}

	d, err := DiffRevisions(ctx, js, RevisionDiffConfig{Bucket: "cfg", Key: "app", ToRev: r2})
	if err != nil {
		t.Fatal(err)
	}
	if d.From == nil || d.From.Revision != r1 || render(d.Changes) != `~ .replicas: 3 → 5` {
		t.Fatalf("diff: %+v %s", d.From, render(d.Changes))
	}
	d, err = DiffRevisions(ctx, js, RevisionDiffConfig{Bucket: "cfg", Key: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if d.From.Revision != r2 || render(d.Changes) != `- .: {"replicas":5}` {
		t.Fatalf("diff against the delete: %s", render(d.Changes))
	}

	_, err = DiffRevisions(ctx, js, RevisionDiffConfig{Bucket: "cfg", Key: "app", FromRev: other})
	if !errors.Is(err, jetstream.ErrKeyNotFound) || !strings.Contains(err.Error(), `revision 2 belongs to key "other"`) {
		t.Fatalf("foreign revision: %v", err)
	}
	_, err = DiffRevisions(ctx, js, RevisionDiffConfig{Bucket: "cfg", Key: "app", FromRev: 99})
	if !errors.Is(err, jetstream.ErrKeyNotFound) || err.Error() != `bucket "cfg": key "app": revision 99: not found` {
		t.Fatalf("missing revision: %v", err)
	}
	_, err = History(ctx, js, HistoryConfig{Bucket: "nope", Key: "app"})
	if !errors.Is(err, jetstream.ErrBucketNotFound) || err.Error() != `bucket "nope": not found` {
		t.Fatalf("missing bucket: %v", err)
	}
}

func TestDiffTimesAndBuckets(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := createBucket(t, js, "cfg", 5)
	put(t, kv, "same", `1`)
	put(t, kv, "changed", `{"a":1}`)
	put(t, kv, "deleted", `x`)
	put(t, kv, "rewritten", `{"a":1}`)
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	put(t, kv, "changed", `{"a":2}`)
	put(t, kv, "added", `new`)
	if err := kv.Delete(ctx, "deleted"); err != nil {
		t.Fatal(err)
	}
	put(t, kv, "rewritten", `{ "a": 1 }`)

	d, err := DiffTimes(ctx, js, TimeDiffConfig{Bucket: "cfg", From: at})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.OnlyRight) != 1 || d.OnlyRight[0].Key != "added" ||
		len(d.OnlyLeft) != 1 || d.OnlyLeft[0].Key != "deleted" || string(d.OnlyLeft[0].Value) != "x" ||
		len(d.Changed) != 1 || d.Changed[0].Key != "changed" || render(d.Changed[0].Changes) != `~ .a: 1 → 2` ||
		d.Identical != 1 {
		t.Fatalf("time diff: %+v", d)
	}
	// A window that ends before the changes is empty.
	d, err = DiffTimes(ctx, js, TimeDiffConfig{Bucket: "cfg", From: at.Add(-time.Hour), To: at.Add(-time.Minute)})
	if err != nil || !d.Empty() {
		t.Fatalf("empty window: %+v %v", d, err)
	}

	other := createBucket(t, js, "cfg2", 1)
	put(t, other, "same", `1`)
	put(t, other, "changed", `{"a":3}`)
	put(t, other, "only-right", `y`)
	put(t, other, "rewritten", `{"a":1}`)
	d, err = DiffBuckets(ctx, js, js, BucketsDiffConfig{Left: "cfg", Right: "cfg2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.OnlyLeft) != 1 || d.OnlyLeft[0].Key != "added" ||
		len(d.OnlyRight) != 1 || d.OnlyRight[0].Key != "only-right" ||
		len(d.Changed) != 1 || render(d.Changed[0].Changes) != `~ .a: 2 → 3` || d.Identical != 2 {
		t.Fatalf("bucket diff: %+v", d)
	}
	// Narrowed to some keys, with a budget too small to keep any value.
	d, err = DiffBuckets(ctx, js, js, BucketsDiffConfig{Left: "cfg", Right: "cfg2", Keys: []string{"changed", "same"}, ValueBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.OnlyLeft)+len(d.OnlyRight) != 0 || len(d.Changed) != 1 || render(d.Changed[0].Changes) != `~ .a: 2 → 3` || d.Identical != 1 {
		t.Fatalf("narrowed bucket diff: %+v", d)
	}
}

func TestTail(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := createBucket(t, js, "cfg", 5)
	put(t, kv, "a.x", `1`)
	put(t, kv, "a.x", `2`)
	put(t, kv, "b.y", `3`)
	put(t, kv, "c", `4`)
	if err := kv.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}

	collect := func(cfg TailConfig) []string {
		t.Helper()
		var got []string
		_, err := Tail(ctx, js, cfg, func(e Entry) error {
			got = append(got, e.Key+"="+string(e.Value)+string(e.Op))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// c's last revision is its delete, so the current values are a.x and b.y.
	if got := strings.Join(collect(TailConfig{Bucket: "cfg", Count: 2}), " "); got != "a.x=2PUT b.y=3PUT" {
		t.Errorf("current: %s", got)
	}
	if got := strings.Join(collect(TailConfig{Bucket: "cfg", Keys: []string{"a.*", "b.>"}, Count: 2}), " "); got != "a.x=2PUT b.y=3PUT" {
		t.Errorf("current: %s", got)
	}
	if got := strings.Join(collect(TailConfig{Bucket: "cfg", Start: StartHistory, Deletes: true, Count: 5}), " "); got != "a.x=1PUT a.x=2PUT b.y=3PUT c=4PUT c=DEL" {
		t.Errorf("history: %s", got)
	}
	match := func(_ context.Context, e *Entry) (bool, error) { return string(e.Value) == "4", nil }
	if got := strings.Join(collect(TailConfig{Bucket: "cfg", Start: StartHistory, Match: match, Count: 1}), " "); got != "c=4PUT" {
		t.Errorf("filtered: %s", got)
	}

	// Live: a tail from now sees only what is written after it starts.
	done := make(chan []string)
	go func() { done <- collect(TailConfig{Bucket: "cfg", Start: StartNew, Count: 1}) }()
	time.Sleep(200 * time.Millisecond)
	put(t, kv, "d", `5`)
	if got := strings.Join(<-done, " "); got != "d=5PUT" {
		t.Errorf("live: %s", got)
	}

	// The context ends a tail that found too little.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	n, err := Tail(wctx, js, TailConfig{Bucket: "cfg", Keys: []string{"none"}, Count: 1}, func(Entry) error { return nil })
	if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait: %d %v", n, err)
	}
}

// nats-server 2.15 skips matches when a consumer has several filters and a
// start time, and one filter's first message comes after another's first
// match (see scan). The diff and the tail must still see every revision.
func TestStartTimeWithSeveralPatterns(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := createBucket(t, js, "cfg", 5)
	put(t, kv, "app", `1`)
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	put(t, kv, "app", `2`)
	put(t, kv, "newkey", `1`)

	d, err := DiffTimes(ctx, js, TimeDiffConfig{Bucket: "cfg", From: at, Keys: []string{"app", "newkey"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changed) != 1 || d.Changed[0].Key != "app" || len(d.OnlyRight) != 1 {
		t.Fatalf("diff: %+v", d)
	}
	var got []string
	_, err = Tail(ctx, js, TailConfig{Bucket: "cfg", Keys: []string{"app", "newkey"}, Start: StartTime, Since: at, Count: 2}, func(e Entry) error {
		got = append(got, e.Key+"="+string(e.Value))
		return nil
	})
	if err != nil || strings.Join(got, " ") != "app=2 newkey=1" {
		t.Fatalf("tail: %v %v", got, err)
	}
	// A start time after the last revision reads nothing and ends.
	d, err = DiffTimes(ctx, js, TimeDiffConfig{Bucket: "cfg", From: time.Now().Add(time.Second), Keys: []string{"app", "newkey"}})
	if err != nil || !d.Empty() {
		t.Fatalf("future: %+v %v", d, err)
	}
}
