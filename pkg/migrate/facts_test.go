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

	"github.com/nats-io/nats.go"
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

// fetch fetches up to n messages (waiting at most wait) without acking them.
func fetch(t *testing.T, c jetstream.Consumer, n int, wait time.Duration) []jetstream.Msg {
	t.Helper()
	b, err := c.Fetch(n, jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for m := range b.Messages() {
		out = append(out, m)
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch: %v", err)
	}
	return out
}

func seqOf(t *testing.T, m jetstream.Msg) uint64 {
	t.Helper()
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	return md.Sequence.Stream
}

func seqs(t *testing.T, ms []jetstream.Msg) []uint64 {
	t.Helper()
	var out []uint64
	for _, m := range ms {
		out = append(out, seqOf(t, m))
	}
	return out
}

func ackSync(t *testing.T, ms ...jetstream.Msg) {
	t.Helper()
	for _, m := range ms {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

func consumerInfo(t *testing.T, js jetstream.JetStream, stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(ctx(t), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

type position struct {
	AckFloor, Delivered, DeliveredConsumer uint64
	AckPending, Redelivered, Pending       uint64
}

func positionOf(ci *jetstream.ConsumerInfo) position {
	return position{ci.AckFloor.Stream, ci.Delivered.Stream, ci.Delivered.Consumer, uint64(ci.NumAckPending), uint64(ci.NumRedelivered), ci.NumPending}
}

// The consumer reset API sets the consumer's next message to N: ack floor
// N-1, delivered N-1, nothing pending or redelivered, the consumer
// sequence back to 0; acks above N made before the reset are forgotten
// (those messages are delivered again), and N is delivered next, even
// below the old ack floor. Without a sequence it resets to ack floor + 1.
func TestFactConsumerResetPullDeliverAll(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 10)
	c, err := js.CreateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ms := fetch(t, c, 10, 5*time.Second)
	if got := seqs(t, ms); len(got) != 10 {
		t.Fatalf("fetched %v", got)
	}
	ackSync(t, ms[0], ms[1], ms[2], ms[4]) // 1,2,3 and 5 out of order
	if err := ms[3].Nak(); err != nil {    // 4 is redelivered
		t.Fatal(err)
	}
	re := fetch(t, c, 1, 5*time.Second) // all delivered: only 4 can come
	if got := seqs(t, re); len(got) != 1 || got[0] != 4 {
		t.Fatalf("redelivery after nak: %v", got)
	}
	before := positionOf(consumerInfo(t, js, "S", "C"))
	if want := (position{AckFloor: 3, Delivered: 10, DeliveredConsumer: 11, AckPending: 6, Redelivered: 1, Pending: 0}); before != want {
		t.Fatalf("before reset: %+v, want %+v", before, want)
	}

	r, err := js.ResetConsumerToSequence(ctx(t), "S", "C", 4)
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	if r.ResetSeq != 4 {
		t.Errorf("reset_seq %d, want 4", r.ResetSeq)
	}
	after := positionOf(consumerInfo(t, js, "S", "C"))
	if want := (position{AckFloor: 3, Delivered: 3, DeliveredConsumer: 0, AckPending: 0, Redelivered: 0, Pending: 7}); after != want {
		t.Errorf("after reset to 4: %+v, want %+v", after, want)
	}
	if got := positionOf(r.ConsumerInfo); got != after {
		t.Errorf("reset response %+v, info %+v", got, after)
	}
	ms = fetch(t, c, 3, 5*time.Second)
	if got := seqs(t, ms); fmt.Sprint(got) != "[4 5 6]" {
		t.Errorf("after reset to 4 delivered %v, want [4 5 6] (5 was acked before the reset)", got)
	}
	if md, _ := ms[0].Metadata(); md.NumDelivered != 1 || md.Sequence.Consumer != 1 {
		t.Errorf("first after reset: num_delivered %d consumer seq %d, want 1 and 1", md.NumDelivered, md.Sequence.Consumer)
	}
	ackSync(t, ms...)

	// Below the ack floor: acked messages come again.
	if _, err := js.ResetConsumerToSequence(ctx(t), "S", "C", 2); err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, js, "S", "C"); ci.AckFloor.Stream != 1 || ci.NumPending != 9 {
		t.Errorf("after reset to 2: ack floor %d pending %d, want 1 and 9", ci.AckFloor.Stream, ci.NumPending)
	}
	ms = fetch(t, c, 2, 5*time.Second)
	if got := seqs(t, ms); fmt.Sprint(got) != "[2 3]" {
		t.Errorf("after reset to 2 delivered %v, want [2 3]", got)
	}
	ackSync(t, ms[0])

	// No sequence: back to ack floor + 1 (3 was delivered, not acked).
	r, err = js.ResetConsumer(ctx(t), "S", "C")
	if err != nil {
		t.Fatal(err)
	}
	if r.ResetSeq != 3 {
		t.Errorf("reset without a sequence: reset_seq %d, want 3 (ack floor 2 + 1)", r.ResetSeq)
	}

	// Past the end: the messages in between are skipped.
	if _, err := js.ResetConsumerToSequence(ctx(t), "S", "C", 12); err != nil {
		t.Fatalf("reset past the last sequence: %v", err)
	}
	if ci := consumerInfo(t, js, "S", "C"); ci.AckFloor.Stream != 11 || ci.NumPending != 0 {
		t.Errorf("after reset to 12 (last 10): ack floor %d pending %d, want 11 and 0", ci.AckFloor.Stream, ci.NumPending)
	}
	publish(t, js, "s.a", 2) // 11, 12
	ms = fetch(t, c, 2, 2*time.Second)
	if got := seqs(t, ms); fmt.Sprint(got) != "[12]" {
		t.Errorf("after reset to 12 delivered %v, want [12]", got)
	}
}

// Which deliver policies take a reset to a sequence: all, by_start_sequence
// and by_start_time (not below their start); new, last and last_per_subject
// refuse (10204 "invalid reset", ErrConsumerInvalidReset) but take a reset to the ack
// floor (no sequence).
func TestFactConsumerResetDeliverPolicies(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 5)
	mid := time.Now()
	time.Sleep(10 * time.Millisecond)
	publish(t, js, "s.a", 5)
	for _, tc := range []struct {
		name    string
		cfg     jetstream.ConsumerConfig
		ok, bad uint64 // a sequence the reset takes, and one it refuses (0: none)
	}{
		{"all", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, 1, 0},
		{"by_start_sequence", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 5}, 5, 4},
		{"by_start_time", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &mid}, 6, 5},
		{"new", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy}, 0, 8},
		{"last", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverLastPolicy}, 0, 10},
		{"last_per_subject", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, FilterSubject: "s.>"}, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Durable, cfg.AckPolicy = tc.name, jetstream.AckExplicitPolicy
			if _, err := js.CreateConsumer(ctx(t), "S", cfg); err != nil {
				t.Fatal(err)
			}
			if tc.ok != 0 {
				if _, err := js.ResetConsumerToSequence(ctx(t), "S", tc.name, tc.ok); err != nil {
					t.Errorf("reset to %d: %v", tc.ok, err)
				}
			}
			if tc.bad != 0 {
				_, err := js.ResetConsumerToSequence(ctx(t), "S", tc.name, tc.bad)
				if !errors.Is(err, jetstream.ErrConsumerInvalidReset) {
					t.Errorf("reset to %d: %v, want ErrConsumerInvalidReset", tc.bad, err)
				}
				var apiErr *jetstream.APIError
				if errors.As(err, &apiErr) {
					t.Logf("reset to %d refused: %d %s", tc.bad, apiErr.ErrorCode, apiErr.Description)
				} else {
					t.Logf("reset to %d refused: %v", tc.bad, err)
				}
			}
			if _, err := js.ResetConsumer(ctx(t), "S", tc.name); err != nil {
				t.Errorf("reset to the ack floor: %v", err)
			}
		})
	}
}
