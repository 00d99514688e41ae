package migrate_test

// These tests pin down what nats-server allows for migrating a stream, the
// facts docs/migrate.md builds on. If a future server changes one of them,
// the test fails and the migration engine needs a look.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func publish(t *testing.T, js jetstream.JetStream, subj string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := js.Publish(ctx(t), subj, []byte(fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

func waitMirror(t *testing.T, s jetstream.Stream, last uint64) *jetstream.StreamInfo {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		si, err := s.Info(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if si.State.LastSeq >= last {
			return si
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror stuck at %d, want %d", si.State.LastSeq, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFactMirrorKeepsSequencesTimestampsAndDeletes(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 10)
	if err := src.DeleteMsg(ctx(t), 3); err != nil {
		t.Fatal(err)
	}
	if err := src.Purge(ctx(t), jetstream.WithPurgeSequence(2)); err != nil { // keeps 2..
		t.Fatal(err)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Storage: jetstream.MemoryStorage, Retention: jetstream.WorkQueuePolicy, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatalf("mirror with workqueue retention and memory storage: %v", err)
	}
	si := waitMirror(t, m, 10)
	t.Logf("mirror state %+v", si.State)
	for _, seq := range []uint64{2, 4, 10} {
		a, err := src.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatalf("mirror seq %d: %v", seq, err)
		}
		if !a.Time.Equal(b.Time) || string(a.Data) != string(b.Data) {
			t.Errorf("seq %d: %v %q vs %v %q", seq, a.Time, a.Data, b.Time, b.Data)
		}
	}
	if _, err := m.GetMsg(ctx(t), 3); err == nil {
		t.Errorf("seq 3 deleted before mirroring should be a gap")
	}
	// A delete after mirroring is not mirrored.
	if err := src.DeleteMsg(ctx(t), 5); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 1)
	waitMirror(t, m, 11)
	if _, err := m.GetMsg(ctx(t), 5); err != nil {
		t.Errorf("delete after mirroring: mirror lost seq 5: %v", err)
	}
	// Promote: remove the mirror and take subjects in one update; the source must free them first.
	cfg := m.CachedInfo().Config
	cfg.Mirror = nil
	cfg.Subjects = []string{"s.>"}
	if _, err := js.UpdateStream(ctx(t), cfg); err == nil {
		t.Errorf("promotion onto subjects still bound elsewhere should fail")
	} else {
		t.Logf("overlap: %v", err)
	}
	// Seal the source: it takes no more messages.
	scfg := src.CachedInfo().Config
	scfg.Sealed = true
	if _, err := js.UpdateStream(ctx(t), scfg); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx(t), "s.a", []byte("x")); err == nil {
		t.Errorf("publish to sealed stream succeeded")
	} else {
		t.Logf("sealed publish: %v", err)
	}
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("promotion: %v", err)
	}
	ack, err := js.Publish(ctx(t), "s.a", []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after promotion: seq %d stream %s", ack.Sequence, ack.Stream)
	m2, _ := js.Stream(ctx(t), "M")
	t.Logf("promoted retention %v storage %v", m2.CachedInfo().Config.Retention, m2.CachedInfo().Config.Storage)
}

func TestFactMirrorOfSealedSource(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 5)
	cfg := src.CachedInfo().Config
	cfg.Sealed = true
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 5)
	// first_seq on a plain stream
	f, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "F", Subjects: []string{"f"}, FirstSeq: 100})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx(t), "f", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first_seq: %d %v", ack.Sequence, f.CachedInfo().State)
	// Interest retention mirror
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MI", Retention: jetstream.InterestPolicy, Mirror: &jetstream.StreamSource{Name: "SRC"}}); err != nil {
		t.Logf("interest mirror: %v", err)
	}
	var apiErr *jetstream.APIError
	_ = errors.As(err, &apiErr)
}
