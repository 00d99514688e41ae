package migrate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// A stream with every setting a mirror refuses (atomic and fast batches,
// schedules, subject delete markers) and those a mirror must have from the
// start (TTLs, async persist) moves by a mirror, and the target has them
// all once promoted: a fast batch published to it after the move is
// stored, and every message before it was moved (the batches' included:
// an atomic batch's messages lose their Nats-Batch-* headers, which a
// mirror drops and the verification leaves out).
func TestMoveKeepsWhatAMirrorRefuses(t *testing.T) {
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{
		Name: "FB", Subjects: []string{"fb.>"},
		AllowBatchPublish: true, AllowAtomicPublish: false, AllowMsgSchedules: true,
		AllowMsgTTL: true, SubjectDeleteMarkerTTL: time.Minute, PersistMode: jetstream.AsyncPersistMode,
	}
	if _, err := js.CreateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	// Atomic batches cannot go with async persist (the server refuses
	// it): a second stream carries allow_atomic.
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "AT", Subjects: []string{"at.>"}, AllowAtomicPublish: true, AllowBatchPublish: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"FB", "AT"} {
		prefix := map[string]string{"FB": "fb", "AT": "at"}[name]
		publish(t, js, prefix+".plain", 3)
		if seq := fastBatch(t, js.Conn(), prefix+".batch", "b1", "one", "two", "three"); seq != 6 {
			t.Fatalf("%s: fast batch committed at seq %d, want 6", name, seq)
		}
		msgs := uint64(6)
		if name == "AT" {
			// An atomic batch: stored with its Nats-Batch-* headers, which
			// a mirror drops (TestFactMirrorDropsBatchHeaders).
			nc := js.Conn()
			if err := nc.PublishMsg(&nats.Msg{Subject: "at.atomic", Header: nats.Header{"Nats-Batch-Id": {"a1"}, "Nats-Batch-Sequence": {"1"}}, Data: []byte("a1")}); err != nil {
				t.Fatal(err)
			}
			if _, err := nc.RequestMsg(&nats.Msg{Subject: "at.atomic", Header: nats.Header{"Nats-Batch-Id": {"a1"}, "Nats-Batch-Sequence": {"2"}, "Nats-Batch-Commit": {"1"}}, Data: []byte("a2")}, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			msgs = 8
		}
		before := snapshot(t, js, name)
		src, err := js.Stream(ctx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		want := src.CachedInfo().Config
		sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: name, Target: name + "2", Cutover: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sum.Mechanism != "mirror" || !sum.Verified || sum.Messages != msgs {
			t.Fatalf("%s: summary %+v", name, sum)
		}
		got := streamInfo(t, js, name+"2").Config
		for _, f := range []struct {
			field     string
			got, want any
		}{
			{"allow_batched", got.AllowBatchPublish, want.AllowBatchPublish},
			{"allow_atomic", got.AllowAtomicPublish, want.AllowAtomicPublish},
			{"allow_msg_schedules", got.AllowMsgSchedules, want.AllowMsgSchedules},
			{"allow_msg_ttl", got.AllowMsgTTL, want.AllowMsgTTL},
			{"subject_delete_marker_ttl", got.SubjectDeleteMarkerTTL, want.SubjectDeleteMarkerTTL},
			{"persist_mode", got.PersistMode, want.PersistMode},
			{"subjects", fmt.Sprint(got.Subjects), fmt.Sprint(want.Subjects)},
		} {
			if f.got != f.want {
				t.Errorf("%s2: %s %v, the source had %v", name, f.field, f.got, f.want)
			}
		}
		after := snapshot(t, js, name+"2")
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s2 holds %v, the source held %v", name, after, before)
		}
		if seq := fastBatch(t, js.Conn(), prefix+".batch", "b2", "four", "five"); seq != msgs+2 {
			t.Fatalf("%s2: a fast batch after the move committed at seq %d, want %d", name, seq, msgs+2)
		}
	}
}
