package kv

// What the server writes when a key of a bucket with limit markers
// (limit_marker_ttl, the stream's subject_delete_marker_ttl) goes, and
// how nats.go's KV reads it: the facts the kv tools' reading of subject
// delete markers rests on (markerOp, docs/kv.md "Deletes"). If a server
// or nats.go release changes one, its test fails.

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// markerBucket creates bucket name with limit markers kept for an hour.
func markerBucket(t *testing.T, js jetstream.JetStream, name string, edit func(*jetstream.KeyValueConfig)) jetstream.KeyValue {
	t.Helper()
	cfg := jetstream.KeyValueConfig{Bucket: name, LimitMarkerTTL: time.Hour}
	if edit != nil {
		edit(&cfg)
	}
	kv, err := js.CreateKeyValue(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// waitMarker waits until the last message of subject is a subject delete
// marker and returns it with the key's other messages' count.
func waitMarker(t *testing.T, js jetstream.JetStream, stream, subject string) (*jetstream.RawStreamMsg, uint64) {
	t.Helper()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m, err := s.GetLastMsgForSubject(ctx, subject)
		if err == nil && m.Header.Get("Nats-Marker-Reason") != "" {
			si, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
			if err != nil {
				t.Fatal(err)
			}
			return m, si.State.Subjects[subject]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no subject delete marker on %s after 30s (last: %v, %v)", subject, m, err)
		}
	}
}

// A key put with a per-key TTL, in a bucket with limit markers: when the
// TTL passes, the server removes the value and writes a marker in its
// place, Nats-Marker-Reason: MaxAge, with the bucket's limit_marker_ttl as
// its own Nats-TTL and Nats-Rollup: sub, and no KV-Operation. nats.go's
// KV reads it as a PURGE: the key is not found, a watcher sees a purge.
func TestFactKeyTTLLeavesMaxAgeMarker(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := markerBucket(t, js, "sess", nil)
	if _, err := kv.Create(ctx, "token", []byte("abc"), jetstream.KeyTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	m, held := waitMarker(t, js, "KV_sess", "$KV.sess.token")
	want := nats.Header{"Nats-Marker-Reason": {"MaxAge"}, "Nats-TTL": {"1h0m0s"}, "Nats-Rollup": {"sub"}}
	for k, vs := range want {
		if got := m.Header.Values(k); len(got) != 1 || got[0] != vs[0] {
			t.Errorf("marker %s: %q, want %q", k, got, vs[0])
		}
	}
	if m.Header.Get(operationHeader) != "" || len(m.Data) != 0 || held != 1 {
		t.Errorf("marker: KV-Operation %q, %d bytes, %d messages on the key; want none, none and the marker alone",
			m.Header.Get(operationHeader), len(m.Data), held)
	}
	if _, err := kv.Get(ctx, "token"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("nats.go Get after the marker: %v, want key not found", err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IncludeHistory())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var ops []jetstream.KeyValueOp
	for e := range w.Updates() {
		if e == nil {
			break
		}
		ops = append(ops, e.Operation())
	}
	if len(ops) != 1 || ops[0] != jetstream.KeyValuePurge {
		t.Errorf("nats.go watcher: %v, want one purge", ops)
	}
	if got, reason := opOf(m.Header); got != OpPurge || reason != ReasonMaxAge {
		t.Errorf("jetctl reads the marker as %s (reason %q), want PURGE (MaxAge), as nats.go does", got, reason)
	}
}

// The bucket's own TTL (max_age) leaves the same MaxAge marker.
func TestFactBucketMaxAgeLeavesMaxAgeMarker(t *testing.T) {
	js := embeddedtest.JetStream(t)
	kv := markerBucket(t, js, "short", func(c *jetstream.KeyValueConfig) { c.TTL = time.Second })
	put(t, kv, "k", "v")
	m, held := waitMarker(t, js, "KV_short", "$KV.short.k")
	if m.Header.Get("Nats-Marker-Reason") != "MaxAge" || held != 1 {
		t.Fatalf("marker %v, %d messages on the key", m.Header, held)
	}
}

// Deletes and purges leave no Nats-Marker-Reason, limit markers or not:
// nats.go's Delete and Purge write KV-Operation DEL and PURGE (Purge with
// Nats-Rollup: sub), and the stream's own message delete and subject
// purge write nothing. The server defines the reasons Purge and Remove
// but writes only MaxAge (nats-server 2.15.2, server/stream.go); jetctl
// reads the other two as nats.go does, for a client that writes them.
func TestFactOnlyExpiryWritesMarkers(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := testCtx(t)
	kv := markerBucket(t, js, "cfg", func(c *jetstream.KeyValueConfig) { c.History = 5 })
	put(t, kv, "del", "1")
	if err := kv.Delete(ctx, "del"); err != nil {
		t.Fatal(err)
	}
	put(t, kv, "purge", "1")
	if err := kv.Purge(ctx, "purge"); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_cfg")
	if err != nil {
		t.Fatal(err)
	}
	last := func(key string) nats.Header {
		m, err := s.GetLastMsgForSubject(ctx, "$KV.cfg."+key)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return m.Header
	}
	if h := last("del"); h.Get(operationHeader) != "DEL" || h.Get("Nats-Marker-Reason") != "" {
		t.Errorf("Delete stored %v", h)
	}
	if h := last("purge"); h.Get(operationHeader) != "PURGE" || h.Get("Nats-Rollup") != "sub" || h.Get("Nats-Marker-Reason") != "" {
		t.Errorf("Purge stored %v", h)
	}
	// A bucket's stream denies message deletes: the stream's own delete and
	// subject purge, on a stream with subject delete markers.
	m, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "M", Subjects: []string{"M.>"}, SubjectDeleteMarkerTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "M.msgdel", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "M.purged", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteMsg(ctx, ack.Sequence); err != nil {
		t.Fatal(err)
	}
	if err := m.Purge(ctx, jetstream.WithPurgeSubject("M.purged")); err != nil {
		t.Fatal(err)
	}
	// Checked after a publish that follows them.
	if _, err := js.Publish(ctx, "M.after", []byte("1")); err != nil {
		t.Fatal(err)
	}
	si, err := m.Info(ctx, jetstream.WithSubjectFilter("M.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(si.State.Subjects) != 1 || si.State.Subjects["M.after"] != 1 {
		t.Errorf("after a message delete and a subject purge the stream holds %v; want M.after alone", si.State.Subjects)
	}
}
