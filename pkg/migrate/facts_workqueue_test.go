package migrate_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// factMsgs is how many messages the retention facts publish: the drain
// of a workqueue origin does not show with a handful (a mirror's first
// batch can arrive before the server acts on it).
const factMsgs = 20_000

// pubAsync publishes n messages round the subjects, pipelined, and waits
// for every ack.
func pubAsync(t *testing.T, js jetstream.JetStream, subjects []string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		// A loaded machine acks slowly: wait for room in the window as long
		// as the test may take, not nats.go's 200ms.
		if _, err := js.PublishAsync(subjects[i%len(subjects)], []byte(fmt.Sprintf("m%d", i)), jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx(t).Done():
		t.Fatal("acks of the async publishes did not all come")
	}
}

// makeSource makes SRC on s.> with retention ret and the consumers cons,
// and publishes factMsgs messages round s.a, s.b and s.c.
func makeSource(t *testing.T, js jetstream.JetStream, ret jetstream.RetentionPolicy, cons ...jetstream.ConsumerConfig) {
	t.Helper()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, Retention: ret}); err != nil {
		t.Fatal(err)
	}
	for _, cc := range cons {
		if _, err := js.CreateConsumer(ctx(t), "SRC", cc); err != nil {
			t.Fatal(err)
		}
	}
	pubAsync(t, js, []string{"s.a", "s.b", "s.c"}, factMsgs)
}

// retentionOrigin makes SRC (subjects s.>) with retention ret and the
// consumers cons (none acknowledges anything), publishes factMsgs
// messages round s.a, s.b and s.c, mirrors it to M, and returns how many
// messages SRC held before the mirror and after the mirror copied its
// last stored message and the count settled at want (or 20 s passed).
func retentionOrigin(t *testing.T, ret jetstream.RetentionPolicy, want uint64, cons ...jetstream.ConsumerConfig) (before, after, mirrored uint64) {
	t.Helper()
	js := embeddedtest.JetStream(t)
	makeSource(t, js, ret, cons...)
	si := streamInfo(t, js, "SRC")
	// The last stored message: an interest origin whose consumer wants
	// only s.a dropped the rest as they came.
	last := si.State.LastSeq
	s, err := js.Stream(ctx(t), "SRC")
	if err != nil {
		t.Fatal(err)
	}
	for ; last > 0; last-- {
		if _, err := s.GetMsg(ctx(t), last); err == nil {
			break
		}
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	mi := waitMirror(t, m, last)
	return si.State.Msgs, settledMsgs(t, js, "SRC", want), mi.State.Msgs
}

// settledMsgs is how many messages stream name holds once it holds want
// in five looks 50 ms apart (the server takes what a mirror read out of a
// workqueue origin a little after the mirror stored it, later on a busy
// machine), or what it holds after 20 s.
func settledMsgs(t *testing.T, js jetstream.JetStream, name string, want uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for same := 0; ; {
		n := streamInfo(t, js, name).State.Msgs
		if n == want {
			same++
		} else {
			same = 0
		}
		if same >= 5 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var explicit = jetstream.AckExplicitPolicy

// A mirror of a workqueue origin takes out of it every message it reads
// that no consumer of the origin owns: with no consumer the origin is
// emptied; with one filtered on s.a only the s.a messages stay; a consumer
// without a filter owns every message, and nothing goes. A mirror is
// therefore never used to copy a workqueue source: jetctl copies it with
// direct gets.
func TestFactMirrorDrainsWorkqueueOrigin(t *testing.T) {
	t.Run("no-consumer", func(t *testing.T) {
		before, after, mirrored := retentionOrigin(t, jetstream.WorkQueuePolicy, 0)
		if before != factMsgs || mirrored != factMsgs || after != 0 {
			t.Errorf("origin %d messages before the mirror, %d after, mirror %d; want %d, 0, %d", before, after, mirrored, factMsgs, factMsgs)
		}
	})
	t.Run("filtered-consumer", func(t *testing.T) {
		before, after, mirrored := retentionOrigin(t, jetstream.WorkQueuePolicy, (factMsgs+2)/3, jetstream.ConsumerConfig{Durable: "C", AckPolicy: explicit, FilterSubject: "s.a"})
		if want := uint64((factMsgs + 2) / 3); before != factMsgs || mirrored != factMsgs || after != want {
			t.Errorf("origin %d messages before the mirror, %d after, mirror %d; want %d, %d (the s.a ones), %d", before, after, mirrored, factMsgs, want, factMsgs)
		}
	})
	t.Run("unfiltered-consumer", func(t *testing.T) {
		before, after, mirrored := retentionOrigin(t, jetstream.WorkQueuePolicy, factMsgs, jetstream.ConsumerConfig{Durable: "C", AckPolicy: explicit})
		if before != factMsgs || mirrored != factMsgs || after != factMsgs {
			t.Errorf("origin %d messages before the mirror, %d after, mirror %d; want all %d", before, after, mirrored, factMsgs)
		}
	})
}

// A mirror of an interest origin removes nothing from it: a message stays
// until the origin's own consumers have acknowledged it (an origin whose
// consumer wants only s.a keeps only those, mirror or not). So interest
// sources are copied by a mirror, which keeps the timestamps.
func TestFactMirrorKeepsInterestOrigin(t *testing.T) {
	t.Run("unfiltered-consumer", func(t *testing.T) {
		before, after, mirrored := retentionOrigin(t, jetstream.InterestPolicy, factMsgs, jetstream.ConsumerConfig{Durable: "C", AckPolicy: explicit})
		if before != factMsgs || after != factMsgs || mirrored != factMsgs {
			t.Errorf("origin %d messages before the mirror, %d after, mirror %d; want all %d", before, after, mirrored, factMsgs)
		}
	})
	t.Run("filtered-consumer", func(t *testing.T) {
		before, after, mirrored := retentionOrigin(t, jetstream.InterestPolicy, (factMsgs+2)/3, jetstream.ConsumerConfig{Durable: "C", AckPolicy: explicit, FilterSubject: "s.a"})
		if want := uint64((factMsgs + 2) / 3); before != want || after != want || mirrored != want {
			t.Errorf("origin %d messages before the mirror, %d after, mirror %d; want %d (the s.a ones) each", before, after, mirrored, want)
		}
	})
}

// What jetctl's copy between servers that reach each other builds on: a
// stream listening on _jetctl.copy.T.> with a subject transform to ">"
// stores a message published to _jetctl.copy.T.s.a as s.a (expected
// stream and last sequence checked as usual), leaves a subject outside
// the transform's source as it is, while another stream on s.> sees
// nothing of either; the stream then takes s.> once it is free, with no
// transform.
func TestFactSubjectTransformTakesThePrefixOff(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "T", Subjects: []string{"_jetctl.copy.T.>", "_jetctl.migrating.T"},
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: "_jetctl.copy.T.>", Destination: ">"}}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "_jetctl.copy.T.s.a.b", Data: []byte("x")}, jetstream.WithExpectStream("T"), jetstream.WithExpectLastSequence(0))
	if err != nil || ack.Stream != "T" || ack.Sequence != 1 {
		t.Fatalf("publish under the prefix: %+v %v", ack, err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "_jetctl.copy.T.s.c", Data: []byte("y")}, jetstream.WithExpectLastSequence(0)); err == nil {
		t.Error("a publish expecting the wrong last sequence was stored")
	}
	if _, err := js.Publish(ctx(t), "_jetctl.migrating.T", nil, jetstream.WithExpectLastSequence(1)); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx(t), "T")
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{1: "s.a.b", 2: "_jetctl.migrating.T"} {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil || m.Subject != want {
			t.Errorf("seq %d: %v %v, want subject %s", seq, m, err, want)
		}
	}
	if si := streamInfo(t, js, "SRC"); si.State.Msgs != 0 {
		t.Errorf("the stream on s.> stored %d messages of the copy", si.State.Msgs)
	}
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "T", Subjects: []string{"s.>"}}); err != nil {
		t.Fatalf("taking s.> without the transform: %v", err)
	}
	if ack, err := js.Publish(ctx(t), "s.x", nil); err != nil || ack.Stream != "T" || ack.Sequence != 3 {
		t.Errorf("publish after: %+v %v", ack, err)
	}
}

// A mirror drops the Nats-Expected-* headers of what it copies (a publish's
// expectations, stored with it by the origin) and keeps the others, the
// message ID included. The verification of a mirror's copy leaves them
// out; jetctl's own copy keeps them, renamed.
func TestFactMirrorDropsExpectedHeaders(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.a", Header: nats.Header{"X": []string{"1"}}}, jetstream.WithExpectStream("SRC"), jetstream.WithExpectLastSequence(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.a"}, jetstream.WithExpectLastSequencePerSubject(1), jetstream.WithMsgID("id-2")); err != nil {
		t.Fatal(err)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 2)
	want := map[string]map[uint64]string{
		"SRC": {1: "map[Nats-Expected-Last-Sequence:[0] Nats-Expected-Stream:[SRC] X:[1]]", 2: "map[Nats-Expected-Last-Subject-Sequence:[1] Nats-Msg-Id:[id-2]]"},
		"M":   {1: "map[X:[1]]", 2: "map[Nats-Msg-Id:[id-2]]"},
	}
	for name, seqs := range want {
		s, err := js.Stream(ctx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		for seq, w := range seqs {
			msg, err := s.GetMsg(ctx(t), seq)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(msg.Header); got != w {
				t.Errorf("%s seq %d: headers %s, want %s", name, seq, got, w)
			}
		}
	}
}

// A publish that expects a last sequence the stream does not have is
// refused (10071) and stores nothing, not even a sequence: the cutover
// uses one on the source's placeholder as a barrier, since its answer
// comes after every publish the stream had queued before it.
func TestFactWrongLastSequenceStoresNothing(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	pubAsync(t, js, []string{"s.a"}, 10)
	_, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.b"}, jetstream.WithExpectStream("SRC"), jetstream.WithExpectLastSequence(1<<63))
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("publish expecting a wrong last sequence: %v, want error 10071", err)
	}
	if ack, err := js.Publish(ctx(t), "s.a", nil); err != nil || ack.Sequence != 11 {
		t.Errorf("next publish: %+v %v, want seq 11 (nothing stored, no sequence taken)", ack, err)
	}
}
