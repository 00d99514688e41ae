package migrate_test

// These tests pin down what nats-server allows for migrating a stream, the
// facts docs/migrate.md builds on. If a future server changes one of them,
// the test fails and the migration engine needs a look.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// ctx bounds a test's requests: a safety net against a hang, not a speed
// target (under -race on a loaded 2-core machine a kill-and-rerun step took
// over 30 s).
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	} else if apiErr := (*jetstream.APIError)(nil); !errors.As(err, &apiErr) || apiErr.ErrorCode != 10065 {
		t.Errorf("promotion onto subjects still bound elsewhere: %v, want 10065", err)
	}
	// Seal the source: it takes no more messages.
	scfg := src.CachedInfo().Config
	scfg.Sealed = true
	if _, err := js.UpdateStream(ctx(t), scfg); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx(t), "s.a", []byte("x")); err == nil {
		t.Errorf("publish to sealed stream succeeded")
	} else if apiErr := (*jetstream.APIError)(nil); !errors.As(err, &apiErr) || apiErr.ErrorCode != 10109 {
		t.Errorf("sealed publish: %v, want error 10109", err)
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
	if ack.Sequence != 100 {
		t.Errorf("first publish to a stream with first_seq 100: seq %d (%v)", ack.Sequence, f.CachedInfo().State)
	}
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
	var c interface {
		Info(context.Context) (*jetstream.ConsumerInfo, error)
	}
	c, err := js.Consumer(ctx(t), stream, name)
	if errors.Is(err, jetstream.ErrNotPullConsumer) {
		c, err = js.PushConsumer(ctx(t), stream, name)
	}
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

// A push consumer takes a reset too: the pending deliveries are dropped
// and N comes next, with consumer sequence 1.
func TestFactConsumerResetPush(t *testing.T) {
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 10)
	sub, err := nc.SubscribeSync("dlv.P")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// MaxAckPending 5 and no acks: exactly 1..5 are pushed before the reset.
	if _, err := js.CreatePushConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "P", DeliverSubject: "dlv.P", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxAckPending: 5}); err != nil {
		t.Fatal(err)
	}
	next := func() (stream, consumer uint64) {
		t.Helper()
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		return md.Sequence.Stream, md.Sequence.Consumer
	}
	for want := uint64(1); want <= 5; want++ {
		if s, _ := next(); s != want {
			t.Fatalf("push delivered %d, want %d", s, want)
		}
	}
	if _, err := js.ResetConsumerToSequence(ctx(t), "S", "P", 3); err != nil {
		t.Fatalf("reset of a push consumer: %v", err)
	}
	if s, c := next(); s != 3 || c != 1 {
		t.Errorf("after reset to 3 pushed stream seq %d consumer seq %d, want 3 and 1", s, c)
	}
}

// On a workqueue stream a reset below the acked (removed) messages
// delivers the first message still there.
func TestFactConsumerResetWorkqueue(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "W", Subjects: []string{"w.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "w.a", 10)
	c, err := js.CreateConsumer(ctx(t), "W", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ms := fetch(t, c, 10, 5*time.Second)
	ackSync(t, ms[0], ms[1], ms[3]) // 1, 2, 4: removed
	if _, err := js.ResetConsumerToSequence(ctx(t), "W", "C", 1); err != nil {
		t.Fatalf("reset on a workqueue stream: %v", err)
	}
	ci := consumerInfo(t, js, "W", "C")
	if ci.AckFloor.Stream != 0 || ci.NumPending != 7 || ci.NumAckPending != 0 {
		t.Errorf("after reset to 1: ack floor %d pending %d ack pending %d, want 0, 7, 0", ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending)
	}
	ms = fetch(t, c, 2, 5*time.Second)
	if got := seqs(t, ms); fmt.Sprint(got) != "[3 5]" {
		t.Errorf("after reset to 1 delivered %v, want [3 5]", got)
	}
}

// On an interest stream a reset acknowledges for that consumer whatever
// lies below the new position: messages no other consumer wants are
// removed at once. Consumers must all exist before any is reset.
func TestFactConsumerResetInterestRemoves(t *testing.T) {
	js := embeddedtest.JetStream(t)
	s, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "I", Subjects: []string{"i.>"}, Retention: jetstream.InterestPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"A", "B"} {
		if _, err := js.CreateConsumer(ctx(t), "I", jetstream.ConsumerConfig{Durable: n, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	publish(t, js, "i.a", 10)
	if _, err := js.ResetConsumerToSequence(ctx(t), "I", "A", 6); err != nil {
		t.Fatal(err)
	}
	if si, _ := s.Info(ctx(t)); si.State.Msgs != 10 {
		t.Errorf("A reset to 6 while B is at 0: %d messages, want 10", si.State.Msgs)
	}
	if _, err := js.ResetConsumerToSequence(ctx(t), "I", "B", 3); err != nil {
		t.Fatal(err)
	}
	si, _ := s.Info(ctx(t))
	if si.State.Msgs != 8 || si.State.FirstSeq != 3 {
		t.Errorf("B reset to 3: %d messages from %d, want 8 from 3", si.State.Msgs, si.State.FirstSeq)
	}
}

// A paused pull consumer delivers nothing, acks of messages delivered
// before the pause still count, a reset keeps it paused, and a resume
// delivers again to new pull requests; a pull request already waiting at
// the resume gets nothing (until it expires) unless the consumer is reset
// (or a message arrives) after the resume.
func TestFactConsumerPausePull(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 5)
	c, err := js.CreateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ms := fetch(t, c, 2, 5*time.Second)
	pr, err := js.PauseConsumer(ctx(t), "S", "C", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	if !pr.Paused {
		t.Errorf("pause response: not paused")
	}
	if got := fetch(t, c, 1, time.Second); len(got) != 0 {
		t.Errorf("paused consumer delivered %v", seqs(t, got))
	}
	ackSync(t, ms...)
	ci := consumerInfo(t, js, "S", "C")
	if ci.AckFloor.Stream != 2 || ci.NumAckPending != 0 || !ci.Paused {
		t.Errorf("acks while paused: ack floor %d ack pending %d paused %v, want 2, 0, true", ci.AckFloor.Stream, ci.NumAckPending, ci.Paused)
	}
	if _, err := js.ResetConsumerToSequence(ctx(t), "S", "C", 4); err != nil {
		t.Fatalf("reset while paused: %v", err)
	}
	if ci := consumerInfo(t, js, "S", "C"); !ci.Paused {
		t.Errorf("a reset resumed the consumer")
	}
	if got := fetch(t, c, 1, time.Second); len(got) != 0 {
		t.Errorf("paused consumer delivered %v after a reset", seqs(t, got))
	}
	// A pull request waiting when the consumer is resumed is not served:
	// an explicit resume does not kick delivery.
	waiting := func(wait time.Duration) chan []uint64 {
		got := make(chan []uint64, 1)
		go func() {
			var out []uint64
			b, err := c.Fetch(1, jetstream.FetchMaxWait(wait))
			if err == nil {
				for m := range b.Messages() {
					if md, err := m.Metadata(); err == nil {
						out = append(out, md.Sequence.Stream)
					}
				}
			}
			got <- out
		}()
		deadline := time.Now().Add(10 * time.Second)
		for consumerInfo(t, js, "S", "C").NumWaiting == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the pull request never reached the consumer")
			}
			time.Sleep(10 * time.Millisecond)
		}
		// The request's arrival wakes the paused consumer's delivery loop;
		// give it time to go back to sleep, or that wake-up (seen under
		// load) delivers after the resume below.
		time.Sleep(300 * time.Millisecond)
		return got
	}
	got := waiting(2 * time.Second)
	if _, err := js.ResumeConsumer(ctx(t), "S", "C"); err != nil {
		t.Fatal(err)
	}
	if got := <-got; len(got) != 0 {
		t.Errorf("a pull waiting across the resume got %v: the server now kicks delivery on resume", got)
	}
	// A reset after the resume does kick it.
	if _, err := js.PauseConsumer(ctx(t), "S", "C", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got = waiting(5 * time.Second)
	if _, err := js.ResumeConsumer(ctx(t), "S", "C"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.ResetConsumer(ctx(t), "S", "C"); err != nil {
		t.Fatal(err)
	}
	if got := <-got; fmt.Sprint(got) != "[4]" {
		t.Errorf("a pull waiting across resume and reset got %v, want [4]", got)
	}
	if got := seqs(t, fetch(t, c, 1, 5*time.Second)); fmt.Sprint(got) != "[5]" {
		t.Errorf("after resume delivered %v, want [5]", got)
	}
}

// A paused push consumer pushes nothing. An explicit resume does not
// start it again while no new message arrives (the server kicks delivery
// only when a pause deadline passes, a message arrives or the consumer is
// reset); a reset after the resume does, and so does a pause that ends by
// its deadline.
func TestFactConsumerPausePush(t *testing.T) {
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	subs := map[string]*nats.Subscription{}
	for _, name := range []string{"P", "Q"} {
		sub, err := nc.SubscribeSync("dlv." + name)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		subs[name] = sub
		if _, err := js.CreatePushConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: name, DeliverSubject: "dlv." + name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.PauseConsumer(ctx(t), "S", "P", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("pause of a push consumer: %v", err)
	}
	if _, err := js.PauseConsumer(ctx(t), "S", "Q", time.Now().Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 3)
	if m, err := subs["P"].NextMsg(time.Second); err == nil {
		t.Errorf("paused push consumer pushed %q", m.Data)
	}
	if _, err := js.ResumeConsumer(ctx(t), "S", "P"); err != nil {
		t.Fatal(err)
	}
	if m, err := subs["P"].NextMsg(time.Second); err == nil {
		t.Errorf("a resumed push consumer pushed %q without a new message: the server now kicks delivery on resume", m.Data)
	}
	if ci := consumerInfo(t, js, "S", "P"); ci.Paused || ci.NumPending != 3 || ci.Delivered.Stream != 0 {
		t.Errorf("resumed: paused %v pending %d delivered %d, want false 3 0", ci.Paused, ci.NumPending, ci.Delivered.Stream)
	}
	if _, err := js.ResetConsumer(ctx(t), "S", "P"); err != nil {
		t.Fatal(err)
	}
	m, err := subs["P"].NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("resumed and reset: nothing pushed: %v", err)
	}
	if md, _ := m.Metadata(); md == nil || md.Sequence.Stream != 1 {
		t.Errorf("resumed and reset: pushed %v, want seq 1", md)
	}
	// The pause that ends by its deadline starts delivery by itself.
	m, err = subs["Q"].NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("pause deadline passed: nothing pushed: %v", err)
	}
	if md, _ := m.Metadata(); md == nil || md.Sequence.Stream != 1 {
		t.Errorf("pause deadline passed: pushed %v, want seq 1", md)
	}
}

func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return si
}

// A durable consumer can be created on a mirror and keeps its state (ack
// floor, delivered, pending) when the mirror is promoted; it then gets
// what is published to the promoted stream.
func TestFactConsumerOnMirrorSurvivesPromotion(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 10)
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 10)
	c, err := js.CreateConsumer(ctx(t), "M", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatalf("consumer on a mirror: %v", err)
	}
	ms := fetch(t, c, 3, 5*time.Second)
	ackSync(t, ms[0], ms[1])
	before := positionOf(consumerInfo(t, js, "M", "C"))
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	cfg := m.CachedInfo().Config
	cfg.Mirror, cfg.Subjects = nil, []string{"s.>"}
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("promotion: %v", err)
	}
	after := positionOf(consumerInfo(t, js, "M", "C"))
	if want := (position{AckFloor: 2, Delivered: 3, DeliveredConsumer: 3, AckPending: 1, Pending: 7}); before != want || after != want {
		t.Errorf("consumer on the mirror before promotion %+v, after %+v, want %+v", before, after, want)
	}
	publish(t, js, "s.a", 1)
	ms = fetch(t, c, 8, 5*time.Second)
	if got := seqs(t, ms); len(got) != 8 || got[0] != 4 || got[7] != 11 {
		t.Errorf("after promotion delivered %v, want 4..11", got)
	}
}

// A workqueue mirror takes a consumer, and its acks remove messages from
// the mirror, which does not copy them again: the mirror then differs
// from its origin. Consumers belong on the target only after the copy is
// verified.
func TestFactConsumerOnWorkqueueMirror(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 5)
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MW", Retention: jetstream.WorkQueuePolicy, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 5)
	c, err := js.CreateConsumer(ctx(t), "MW", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("consumer on a workqueue mirror: %v", err)
	}
	ackSync(t, fetch(t, c, 2, 5*time.Second)...)
	publish(t, js, "s.a", 1)
	si := waitMirror(t, m, 6)
	if si.State.Msgs != 4 || si.State.FirstSeq != 3 {
		t.Errorf("workqueue mirror after 2 acks: %d messages from %d, want 4 from 3", si.State.Msgs, si.State.FirstSeq)
	}
}

// The origin of a mirror can have its subjects swapped to a placeholder
// (what the cutover does) and back: publishes to the old subjects then get
// no stream (no responders), those to the placeholder are stored, and the
// mirror keeps copying throughout.
func TestFactMirrorOriginSubjectsSwapped(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 3)
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 3)
	cfg := src.CachedInfo().Config
	cfg.Subjects = []string{"_jetctl.migrating.SRC"}
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("subjects to a placeholder: %v", err)
	}
	if _, err := js.Publish(ctx(t), "s.a", []byte("x")); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Errorf("publish to the freed subject: %v, want ErrNoStreamResponse", err)
	}
	ack, err := js.Publish(ctx(t), "_jetctl.migrating.SRC", []byte("p"))
	if err != nil || ack.Stream != "SRC" || ack.Sequence != 4 {
		t.Errorf("publish to the placeholder: %+v %v, want SRC seq 4", ack, err)
	}
	waitMirror(t, m, 4)
	cfg.Subjects = []string{"s.>"}
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("subjects back: %v", err)
	}
	publish(t, js, "s.a", 1)
	waitMirror(t, m, 5)
}

// A stream updated to no subjects gets its name as its subject, as at
// creation: [] cannot free a stream's subjects, and fails if another stream
// holds the name as a subject.
func TestFactStreamUpdateEmptySubjects(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "X", Subjects: []string{"x.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "X"}); err != nil {
		t.Fatalf("update to no subjects: %v", err)
	}
	if si := streamInfo(t, js, "X"); fmt.Sprint(si.Config.Subjects) != "[X]" {
		t.Errorf("update to no subjects: subjects %v, want [X]", si.Config.Subjects)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "Y", Subjects: []string{"Y"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "Z", Subjects: []string{"z"}}); err != nil {
		t.Fatal(err)
	}
	_, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "Z", Subjects: []string{"Y"}})
	if err == nil {
		t.Fatal("taking another stream's subject succeeded")
	}
	// Another stream's subject equal to the name: the [] update overlaps.
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "W", Subjects: []string{"w"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "Y", Subjects: []string{"W"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "W"}); err == nil {
		t.Errorf("W updated to no subjects (so [W]) while Y holds W: no overlap error")
	} else {
		t.Logf("overlap: %v", err)
	}
}

// An interest-retention stream keeps nothing while it has no consumer:
// published messages are acknowledged and dropped, and a mirror with
// interest retention drops what it copies (its last sequence moves on).
func TestFactInterestWithoutConsumers(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 5)
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MI", Retention: jetstream.InterestPolicy, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatalf("interest mirror: %v", err)
	}
	si := waitMirror(t, m, 5)
	if si.State.Msgs != 0 {
		t.Errorf("interest mirror without consumers holds %d messages, want 0", si.State.Msgs)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "I", Subjects: []string{"i.>"}, Retention: jetstream.InterestPolicy}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "i.a", 3)
	if si := streamInfo(t, js, "I"); si.State.Msgs != 0 || si.State.LastSeq != 3 {
		t.Errorf("interest stream without consumers: %d messages, last %d; want 0, 3", si.State.Msgs, si.State.LastSeq)
	}
}

// A mirror with max_age keeps the origin's timestamps, so it expires
// the copied messages by their original time; but messages already older
// than max_age at copy time are copied all the same and stay until the
// store's first age check, max_age after the first message is stored.
// (Only a lagging mirror could show that expiry counts from the original
// and not the copy time; the server expires by the stored timestamp, which
// is the original.)
func TestFactMirrorMaxAgeByOriginalTime(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 3)
	time.Sleep(2500 * time.Millisecond)
	publish(t, js, "s.a", 3)
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", MaxAge: 2 * time.Second, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	var sawAll, sawNone bool
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !sawNone {
		si, err := m.Info(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if si.State.Msgs == 6 && !sawAll {
			sawAll = true
			a, _ := src.GetMsg(ctx(t), 1)
			b, err := m.GetMsg(ctx(t), 1)
			if err != nil || a == nil || !a.Time.Equal(b.Time) {
				t.Errorf("mirror seq 1 with max_age: %v; want the origin's time %v", err, a)
			}
		}
		sawNone = si.State.Msgs == 0 && si.State.LastSeq == 6
		time.Sleep(10 * time.Millisecond)
	}
	if !sawAll || !sawNone {
		t.Errorf("mirror with max_age 2s of 3 messages 2.5s old and 3 new: all 6 copied %v, then all expired %v", sawAll, sawNone)
	}
}

func sameMessages(t *testing.T, a, b jetstream.Stream, present []uint64, gaps []uint64) {
	t.Helper()
	for _, seq := range present {
		x, err := a.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.GetMsg(ctx(t), seq)
		if err != nil {
			t.Errorf("seq %d: %v", seq, err)
			continue
		}
		if !x.Time.Equal(y.Time) || string(x.Data) != string(y.Data) || x.Subject != y.Subject {
			t.Errorf("seq %d: %s %v %q vs %s %v %q", seq, x.Subject, x.Time, x.Data, y.Subject, y.Time, y.Data)
		}
	}
	for _, seq := range gaps {
		if _, err := b.GetMsg(ctx(t), seq); err == nil {
			t.Errorf("seq %d should be a gap", seq)
		}
	}
}

// A mirror in another JetStream domain, reached over a leaf node
// connection through the origin's domain API ($JS.<domain>.API), copies
// with sequences, timestamps and gaps, both from hub to leaf and from leaf
// to hub, and a client of either server can create it through the
// target's domain.
func TestFactCrossDomainMirror(t *testing.T) {
	hub, leaf := embeddedtest.DomainPair(t)
	jsHub := embeddedtest.Connect(t, hub, "")
	jsLeaf := embeddedtest.Connect(t, leaf, "")
	jsLeafViaHub := embeddedtest.Connect(t, hub, "leaf")
	jsHubViaLeaf := embeddedtest.Connect(t, leaf, "hub")
	for _, tc := range []struct {
		name             string
		origin, target   jetstream.JetStream
		originDomain     string
		create           jetstream.JetStream
		subject, targetN string
	}{
		{"hub to leaf", jsHub, jsLeaf, "hub", jsLeaf, "o", "M_LEAF"},
		{"leaf to hub", jsLeaf, jsHub, "leaf", jsHubViaLeaf, "l", "M_HUB"},
		{"hub to leaf, created from the hub", jsHub, jsLeafViaHub, "hub", jsLeafViaHub, "p", "M_LEAF2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "O_" + tc.subject
			src, err := tc.origin.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Subjects: []string{tc.subject + ".>"}})
			if err != nil {
				t.Fatal(err)
			}
			publish(t, tc.origin, tc.subject+".a", 10)
			if err := src.DeleteMsg(ctx(t), 3); err != nil {
				t.Fatal(err)
			}
			m, err := tc.create.CreateStream(ctx(t), jetstream.StreamConfig{Name: tc.targetN, Storage: jetstream.MemoryStorage, Mirror: &jetstream.StreamSource{
				Name: name, External: &jetstream.ExternalStream{APIPrefix: "$JS." + tc.originDomain + ".API"}}})
			if err != nil {
				t.Fatalf("cross-domain mirror: %v", err)
			}
			waitMirror(t, m, 10)
			publish(t, tc.origin, tc.subject+".b", 2)
			si := waitMirror(t, m, 12)
			target, err := tc.target.Stream(ctx(t), tc.targetN)
			if err != nil {
				t.Fatal(err)
			}
			sameMessages(t, src, target, []uint64{1, 2, 4, 10, 12}, []uint64{3})
			if si.Mirror == nil || si.Mirror.Error != nil || si.Mirror.External == nil || si.Mirror.External.APIPrefix != "$JS."+tc.originDomain+".API" {
				t.Errorf("mirror info %+v", si.Mirror)
			}
		})
	}
}

// Across domains the server does not refuse a promotion onto subjects the
// origin still holds (10065 is per server): a publish then reaches both
// streams over the leaf connection. The origin's subjects must be freed
// first. Once they are, a publish on the hub is stored by the promoted
// stream in the leaf domain.
func TestFactCrossDomainPromotion(t *testing.T) {
	hub, leaf := embeddedtest.DomainPair(t)
	jsHub := embeddedtest.Connect(t, hub, "")
	jsLeaf := embeddedtest.Connect(t, leaf, "")
	src, err := jsHub.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"o.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, jsHub, "o.a", 5)
	m, err := jsLeaf.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Mirror: &jetstream.StreamSource{Name: "ORDERS", External: &jetstream.ExternalStream{APIPrefix: "$JS.hub.API"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 5)
	cfg := m.CachedInfo().Config
	cfg.Mirror, cfg.Subjects = nil, []string{"o.>"}
	if _, err := jsLeaf.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("promotion onto subjects held in the other domain: %v", err)
	}
	// Interest in o.> crosses the leaf connection a moment later; from then
	// on each publish on the hub is stored by both streams.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		payload := fmt.Sprintf("p%d", i)
		if _, err := jsHub.Publish(ctx(t), "o.a", []byte(payload)); err != nil {
			t.Fatal(err)
		}
		l, err := m.GetLastMsgForSubject(ctx(t), "o.a")
		if err != nil {
			t.Fatal(err)
		}
		if string(l.Data) == payload {
			// The publish's acknowledgement is the first stream's to
			// answer: the other stores it a moment later.
			for {
				h, err := src.GetLastMsgForSubject(ctx(t), "o.a")
				if err != nil {
					t.Fatal(err)
				}
				if string(h.Data) == payload {
					break
				}
				if time.Now().After(deadline.Add(10 * time.Second)) {
					t.Fatalf("a publish reached the promoted stream in the leaf domain but not the origin: %q", h.Data)
				}
				time.Sleep(20 * time.Millisecond)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a publish on the hub never reached the promoted stream in the leaf domain")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Free the origin's subjects: publishes on the hub go to the leaf only.
	scfg := src.CachedInfo().Config
	scfg.Subjects = []string{"_jetctl.migrating.ORDERS"}
	if _, err := jsHub.UpdateStream(ctx(t), scfg); err != nil {
		t.Fatal(err)
	}
	before := streamInfo(t, jsHub, "ORDERS").State.LastSeq
	ack, err := jsHub.Publish(ctx(t), "o.a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Domain != "leaf" || ack.Stream != "ORDERS" {
		t.Errorf("publish on the hub acknowledged by %+v, want stream ORDERS in domain leaf", ack)
	}
	if after := streamInfo(t, jsHub, "ORDERS").State.LastSeq; after != before {
		t.Errorf("the origin took a message after its subjects were freed")
	}
}

// A mirror whose external API nobody answers (servers not connected) is
// created without an error, and its info never says so: no error, lag 0,
// active -1 (never heard from the origin), for as long as it lasts. The
// engine must treat "active < 0 after a while" as unreachable. A reachable
// domain without the origin stream reports 10059 (stream not found) in
// the mirror info within a second or so.
func TestFactMirrorUnreachableExternal(t *testing.T) {
	js := embeddedtest.JetStream(t)
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "ORDERS", External: &jetstream.ExternalStream{APIPrefix: "$JS.hub.API"}}})
	if err != nil {
		t.Fatalf("mirror of an unreachable external stream: %v", err)
	}
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(250 * time.Millisecond) {
		si, err := m.Info(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if mi := si.Mirror; mi == nil || mi.Error != nil || mi.Active >= 0 || mi.Lag != 0 {
			t.Fatalf("unreachable mirror after %s: %+v (error %v), want no error, active < 0, lag 0", time.Since(start), mi, mi.Error)
		}
	}
	_, leaf := embeddedtest.DomainPair(t)
	jsLeaf := embeddedtest.Connect(t, leaf, "")
	m, err = jsLeaf.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "NOPE", External: &jetstream.ExternalStream{APIPrefix: "$JS.hub.API"}}})
	if err != nil {
		t.Fatalf("mirror of a missing external stream: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		si, err := m.Info(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if e := si.Mirror.Error; e != nil {
			if e.ErrorCode != 10059 {
				t.Errorf("mirror of a missing stream: error %v, want 10059", e)
			}
			if si.Mirror.Active >= 0 {
				t.Errorf("mirror of a missing stream: active %v", si.Mirror.Active)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror of a missing stream reports no error: %+v", si.Mirror)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A KV bucket's stream can be mirrored with another storage, keeping the
// bucket's settings, and the bucket moved under its own name in two hops
// (KV_cfg -> temporary mirror -> KV_cfg); once the last hop is promoted
// with the $KV.<bucket>.> subjects the KV API works on it: values,
// deletes, history with revisions equal to the old sequences, and new
// puts continuing the sequence.
func TestFactKVBucketMirroredAndPromoted(t *testing.T) {
	js := embeddedtest.JetStream(t)
	kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "cfg", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct{ key, value string }{{"a", "1"}, {"a", "2"}, {"b", "x"}, {"b", ""}, {"a", "3"}} {
		if op.value == "" {
			err = kv.Delete(ctx(t), op.key)
		} else {
			_, err = kv.PutString(ctx(t), op.key, op.value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	orig := streamInfo(t, js, "KV_cfg").Config
	hop := func(from, to string) {
		t.Helper()
		cfg := orig
		cfg.Name, cfg.Storage, cfg.Subjects = to, jetstream.MemoryStorage, nil
		cfg.Mirror = &jetstream.StreamSource{Name: from}
		m, err := js.CreateStream(ctx(t), cfg)
		if err != nil {
			t.Fatalf("mirror %s of %s with the bucket's settings: %v", to, from, err)
		}
		si := waitMirror(t, m, 5)
		if !si.Config.MirrorDirect {
			t.Errorf("%s: a mirror with allow_direct of a bucket: mirror_direct false", to)
		}
		fcfg := streamInfo(t, js, from).Config
		fcfg.Subjects = []string{"_jetctl.migrating." + from}
		if from != "KV_cfg" {
			if _, err := js.UpdateStream(ctx(t), fcfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := js.DeleteStream(ctx(t), from); err != nil {
			t.Fatal(err)
		}
		cfg.Mirror, cfg.Subjects = nil, []string{"$KV.cfg.>"}
		if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
			t.Fatalf("promote %s: %v", to, err)
		}
		if streamInfo(t, js, to).Config.MirrorDirect {
			t.Errorf("promoted %s still has mirror_direct", to)
		}
	}
	hop("KV_cfg", "KV_cfg_JETCTL_MIGRATE")
	hop("KV_cfg_JETCTL_MIGRATE", "KV_cfg")

	kv, err = js.KeyValue(ctx(t), "cfg")
	if err != nil {
		t.Fatalf("bucket after the move: %v", err)
	}
	st, err := kv.Status(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.History() != 5 || st.Values() != 5 {
		t.Errorf("status: history %d values %d, want 5 and 5", st.History(), st.Values())
	}
	if si := streamInfo(t, js, "KV_cfg"); si.Config.Storage != jetstream.MemoryStorage {
		t.Errorf("storage %v, want memory", si.Config.Storage)
	}
	e, err := kv.Get(ctx(t), "a")
	if err != nil || string(e.Value()) != "3" || e.Revision() != 5 {
		t.Errorf("get a: %v %v, want 3 at revision 5", e, err)
	}
	if _, err := kv.Get(ctx(t), "b"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("get deleted b: %v, want ErrKeyNotFound", err)
	}
	h, err := kv.History(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	var revs []uint64
	for _, e := range h {
		revs = append(revs, e.Revision())
	}
	if fmt.Sprint(revs) != "[1 2 5]" {
		t.Errorf("history of a: revisions %v, want [1 2 5]", revs)
	}
	rev, err := kv.PutString(ctx(t), "a", "4")
	if err != nil || rev != 6 {
		t.Errorf("put after the move: revision %d %v, want 6", rev, err)
	}
	if _, err := kv.Update(ctx(t), "a", []byte("5"), 6); err != nil {
		t.Errorf("update at revision 6: %v", err)
	}
}

// A mirror of an origin with allow_direct inherits mirror_direct (the
// server sets it from the origin, whatever the mirror's own allow_direct):
// once nearly caught up it answers direct gets addressed to the origin,
// with its own name in Nats-Stream, so readers of the origin (a KV bucket's
// Get) may read from a copy that lags. A promotion keeps mirror_direct as
// the update says: the config read from the mirror's info says true, and
// the promoted stream then still answers the old name's direct gets.
func TestFactMirrorDirect(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 3)
	var mirrors []jetstream.Stream
	for _, tc := range []struct {
		name        string
		allowDirect bool
	}{{"M", true}, {"M2", false}} {
		m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: tc.name, AllowDirect: tc.allowDirect, Mirror: &jetstream.StreamSource{Name: "SRC"}})
		if err != nil {
			t.Fatal(err)
		}
		if si := waitMirror(t, m, 3); !si.Config.MirrorDirect || si.Config.AllowDirect != tc.allowDirect {
			t.Errorf("mirror %s with allow_direct %v: mirror_direct %v allow_direct %v, want true and %v", tc.name, tc.allowDirect, si.Config.MirrorDirect, si.Config.AllowDirect, tc.allowDirect)
		}
		mirrors = append(mirrors, m)
	}
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	answeredBy := func() string {
		t.Helper()
		r, err := js.Conn().Request("$JS.API.DIRECT.GET.SRC", []byte(`{"last_by_subj":"s.a"}`), 5*time.Second)
		if err != nil {
			t.Fatalf("direct get of the deleted origin: %v", err)
		}
		if r.Header.Get("Nats-Sequence") != "3" {
			t.Errorf("direct get of the deleted origin: %v %q", r.Header, r.Data)
		}
		return r.Header.Get("Nats-Stream")
	}
	if by := answeredBy(); by != "M" && by != "M2" {
		t.Errorf("direct get of the deleted origin answered by %q, want a mirror", by)
	}
	// M promoted with mirror_direct false, M2 with the config from its info.
	cfg := mirrors[0].CachedInfo().Config
	cfg.Mirror, cfg.Subjects, cfg.MirrorDirect = nil, []string{"m.>"}, false
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("promotion with mirror_direct false: %v", err)
	}
	cfg = mirrors[1].CachedInfo().Config
	cfg.Mirror, cfg.Subjects, cfg.AllowDirect = nil, []string{"s.>"}, true
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("promotion keeping mirror_direct: %v", err)
	}
	if si := streamInfo(t, js, "M"); si.Config.MirrorDirect {
		t.Errorf("M promoted with mirror_direct false: still true")
	}
	if si := streamInfo(t, js, "M2"); !si.Config.MirrorDirect || !si.Config.AllowDirect {
		t.Errorf("M2 promoted with the info's config: mirror_direct %v allow_direct %v, want true, true", si.Config.MirrorDirect, si.Config.AllowDirect)
	}
	for i := 0; i < 5; i++ {
		if by := answeredBy(); by != "M2" {
			t.Errorf("after the promotions direct gets of SRC are answered by %q, want M2 (mirror_direct kept)", by)
		}
	}
}

// A stream that sources another (rather than mirroring it) stores the
// messages under its own sequences, closing the origin's gaps, with the
// time it stored them: a source cannot carry consumer positions or
// timestamps across, which is why a move uses a mirror.
func TestFactSourceRenumbers(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 5)
	if err := src.DeleteMsg(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	s, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Sources: []*jetstream.StreamSource{{Name: "SRC"}}})
	if err != nil {
		t.Fatal(err)
	}
	si := waitMirror(t, s, 4)
	if si.State.Msgs != 4 || si.State.FirstSeq != 1 || si.State.LastSeq != 4 {
		t.Errorf("sourced stream: %d messages %d..%d, want 4 messages 1..4", si.State.Msgs, si.State.FirstSeq, si.State.LastSeq)
	}
	a, err := src.GetMsg(ctx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.GetMsg(ctx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Data) != string(b.Data) {
		t.Fatalf("origin seq 3 %q, sourced seq 2 %q", a.Data, b.Data)
	}
	if b.Time.Sub(a.Time) < 50*time.Millisecond {
		t.Errorf("sourced message time %v, origin %v: want the (later) time it was stored", b.Time, a.Time)
	}
}

// Interest retention on the target: an interest mirror keeps what it
// copies once a consumer exists (one created before the copy, here), and
// a limits mirror can be promoted to interest retention in the promotion
// update itself, with its consumers already reset: the messages below
// every consumer's ack floor are removed at once, the rest kept.
func TestFactInterestTarget(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	mi, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MI", Retention: jetstream.InterestPolicy, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx(t), "MI", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 10)
	if si := waitMirror(t, mi, 10); si.State.Msgs != 10 {
		t.Errorf("interest mirror with a consumer from before the copy: %d messages, want 10", si.State.Msgs)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 10)
	for _, c := range []struct {
		n   string
		seq uint64
	}{{"A", 4}, {"B", 7}} {
		if _, err := js.CreateConsumer(ctx(t), "M", jetstream.ConsumerConfig{Durable: c.n, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.ResetConsumerToSequence(ctx(t), "M", c.n, c.seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := js.DeleteStream(ctx(t), "MI"); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	cfg := m.CachedInfo().Config
	cfg.Mirror, cfg.Subjects, cfg.Retention = nil, []string{"s.>"}, jetstream.InterestPolicy
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("promotion to interest: %v", err)
	}
	if si := streamInfo(t, js, "M"); si.State.Msgs != 7 || si.State.FirstSeq != 4 || si.Config.Retention != jetstream.InterestPolicy {
		t.Errorf("promoted to interest with consumers at 4 and 7: %d messages from %d, retention %v; want 7 from 4, interest", si.State.Msgs, si.State.FirstSeq, si.Config.Retention)
	}
	for _, c := range []struct {
		n     string
		floor uint64
	}{{"A", 3}, {"B", 6}} {
		if ci := consumerInfo(t, js, "M", c.n); ci.AckFloor.Stream != c.floor || ci.NumPending != 10-c.floor {
			t.Errorf("%s after promotion to interest: ack floor %d pending %d, want %d and %d", c.n, ci.AckFloor.Stream, ci.NumPending, c.floor, 10-c.floor)
		}
	}
}

// A workqueue stream takes one consumer per subject: an unfiltered
// consumer beside others is refused (10099), one whose filter overlaps
// another's too (10100),
// so a stream whose consumers overlap cannot move to workqueue retention.
// Nor can retention become workqueue in the promotion update (10052).
func TestFactWorkqueueConsumersAndPromotion(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "W", Subjects: []string{"w.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	code := func(err error) int {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			return int(apiErr.ErrorCode)
		}
		return 0
	}
	if _, err := js.CreateConsumer(ctx(t), "W", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "w.a.>"}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx(t), "W", jetstream.ConsumerConfig{Durable: "B", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "w.b.>"}); err != nil {
		t.Errorf("disjoint filters on a workqueue stream: %v", err)
	}
	if _, err := js.CreateConsumer(ctx(t), "W", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "w.a.x"}); code(err) != 10100 {
		t.Errorf("overlapping filter on a workqueue stream: %v, want 10100", err)
	} else {
		t.Logf("overlapping filter: %v", err)
	}
	if _, err := js.CreateConsumer(ctx(t), "W", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy}); code(err) != 10099 {
		t.Errorf("unfiltered consumer beside filtered ones on a workqueue stream: %v, want 10099", err)
	} else {
		t.Logf("unfiltered: %v", err)
	}

	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	cfg := m.CachedInfo().Config
	cfg.Mirror, cfg.Subjects, cfg.Retention = nil, []string{"s.>"}, jetstream.WorkQueuePolicy
	if _, err := js.UpdateStream(ctx(t), cfg); code(err) != 10052 {
		t.Errorf("promotion changing retention to workqueue: %v, want 10052", err)
	} else {
		t.Logf("promotion to workqueue: %v", err)
	}
}

// A promoted mirror does not know the message IDs (Nats-Msg-Id) of what it
// copied: a publish retried across the cutover with the ID of a message
// the origin stored (its ack lost) is stored again. IDs published to the
// promoted stream itself are deduplicated as usual.
func TestFactPromotedMirrorForgetsMsgIDs(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx(t), "s.a", []byte("1"), jetstream.WithMsgID("x1")); err != nil {
		t.Fatal(err)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 1)
	if err := js.DeleteStream(ctx(t), "SRC"); err != nil {
		t.Fatal(err)
	}
	cfg := m.CachedInfo().Config
	cfg.Mirror, cfg.Subjects = nil, []string{"s.>"}
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx(t), "s.a", []byte("1"), jetstream.WithMsgID("x1"))
	if err != nil || ack.Duplicate || ack.Sequence != 2 {
		t.Errorf("x1 again after promotion: %+v %v, want stored again at seq 2 (not a duplicate)", ack, err)
	}
	if _, err := js.Publish(ctx(t), "s.a", []byte("2"), jetstream.WithMsgID("x2")); err != nil {
		t.Fatal(err)
	}
	ack, err = js.Publish(ctx(t), "s.a", []byte("2"), jetstream.WithMsgID("x2"))
	if err != nil || !ack.Duplicate || ack.Sequence != 3 {
		t.Errorf("x2 twice after promotion: %+v %v, want a duplicate of seq 3", ack, err)
	}
}

// What the 2.15 server accepts in a mirror's config and in the update
// that promotes it, what a mirror does with per-message TTLs, how a
// counter stream can be copied, and the consumers through which a stream
// sources another: the facts the mirror's config (mirrorConfig), the
// counter way (counter.go), jetctl's copy of TTLs and the downstream
// sourcing streams (downstream.go) are built on.

// apiCode is err's JetStream API error code, 0 for none.
func apiCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode
	}
	return 0
}

// A mirror refuses allow_msg_counter (10173), allow_atomic (10198),
// allow_batched (10209), allow_msg_schedules (10186) and
// subject_delete_marker_ttl (10052, "subject delete markers forbidden on
// mirrors"); it takes allow_msg_ttl and persist_mode async. The update that
// promotes it (mirror removed, subjects added) may turn on allow_atomic,
// allow_batched, allow_msg_schedules and subject_delete_marker_ttl, but not
// allow_msg_counter (10052: the counter setting cannot change) nor
// persist_mode (10052): those two must be right when the target is created.
func TestFactMirrorConfigRefusals(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 3)
	for _, f := range []struct {
		flag string
		set  func(*jetstream.StreamConfig)
		// mirror is the code a mirror with the flag is refused with, 0
		// when it is taken; promotion is the code of a promotion that
		// turns the flag on, 0 when it is taken.
		mirror, promotion jetstream.ErrorCode
	}{
		{"allow_msg_counter", func(c *jetstream.StreamConfig) { c.AllowMsgCounter = true }, 10173, 10052},
		{"allow_atomic", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = true }, 10198, 0},
		{"allow_batched", func(c *jetstream.StreamConfig) { c.AllowBatchPublish = true }, 10209, 0},
		{"allow_msg_schedules", func(c *jetstream.StreamConfig) { c.AllowMsgSchedules = true }, 10186, 0},
		{"subject_delete_marker_ttl", func(c *jetstream.StreamConfig) { c.SubjectDeleteMarkerTTL = time.Minute }, 10052, 0},
		{"allow_msg_ttl", func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true }, 0, 0},
		{"persist_mode", func(c *jetstream.StreamConfig) { c.PersistMode = jetstream.AsyncPersistMode }, 0, 10052},
	} {
		t.Run(f.flag, func(t *testing.T) {
			name := "M_" + strings.ToUpper(f.flag)
			mc := jetstream.StreamConfig{Name: name, Mirror: &jetstream.StreamSource{Name: "SRC"}}
			f.set(&mc)
			m, err := js.CreateStream(ctx(t), mc)
			if got := apiCode(err); got != f.mirror || (f.mirror == 0 && err != nil) {
				t.Fatalf("a mirror with %s: %v, want error %d", f.flag, err, f.mirror)
			}
			if err == nil {
				waitMirror(t, m, 3)
				if err := js.DeleteStream(ctx(t), name); err != nil {
					t.Fatal(err)
				}
			}
			// Without the flag, then promoted with it, onto subjects of
			// its own.
			m, err = js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Mirror: &jetstream.StreamSource{Name: "SRC"}})
			if err != nil {
				t.Fatal(err)
			}
			waitMirror(t, m, 3)
			pc := m.CachedInfo().Config
			pc.Mirror, pc.Subjects = nil, []string{"p." + name + ".>"}
			f.set(&pc)
			si, err := js.UpdateStream(ctx(t), pc)
			if got := apiCode(err); got != f.promotion || (f.promotion == 0 && err != nil) {
				t.Fatalf("a promotion turning %s on: %v, want error %d", f.flag, err, f.promotion)
			}
			if err == nil {
				got := si.CachedInfo().Config
				want := got
				f.set(&want)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("promoted with %s: config %+v does not have it", f.flag, got)
				}
				if n := si.CachedInfo().State.Msgs; n != 3 {
					t.Fatalf("promoted: %d messages, want 3", n)
				}
			}
		})
	}
}

// A mirror copies a message's Nats-TTL as it is stored. With allow_msg_ttl
// it honours it (the copy goes once its TTL is up, as the origin's does);
// without, it keeps the header and the message for good.
func TestFactMirrorKeepsAndHonoursTTL(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, AllowMsgTTL: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.short", Header: nats.Header{"Nats-TTL": {"2s"}}, Data: []byte("short")}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.long", Header: nats.Header{"Nats-TTL": {"1h"}}, Data: []byte("long")}); err != nil {
		t.Fatal(err)
	}
	honours, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "TTL_ON", AllowMsgTTL: true, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatalf("a mirror with allow_msg_ttl: %v", err)
	}
	keeps, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "TTL_OFF", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, honours, 2)
	waitMirror(t, keeps, 2)
	for _, s := range []jetstream.Stream{honours, keeps} {
		m, err := s.GetMsg(ctx(t), 1)
		if err != nil {
			t.Fatalf("%s seq 1: %v", s.CachedInfo().Config.Name, err)
		}
		if got := m.Header.Get("Nats-TTL"); got != "2s" {
			t.Fatalf("%s: Nats-TTL %q, want 2s as stored", s.CachedInfo().Config.Name, got)
		}
	}
	gone := func(s jetstream.Stream) bool {
		_, err := s.GetMsg(ctx(t), 1)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !gone(src) || !gone(honours) {
		if time.Now().After(deadline) {
			t.Fatalf("seq 1 (Nats-TTL 2s) still in the origin (%v) or the mirror with allow_msg_ttl (%v) after 20 s", !gone(src), !gone(honours))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if gone(keeps) {
		t.Fatal("the mirror without allow_msg_ttl removed seq 1: it honours Nats-TTL")
	}
	for _, s := range []jetstream.Stream{src, honours, keeps} {
		if _, err := s.GetMsg(ctx(t), 2); err != nil {
			t.Fatalf("%s: seq 2 (Nats-TTL 1h): %v", s.CachedInfo().Config.Name, err)
		}
	}
}

// fastBatch publishes msgs to subject as one fast batch (allow_batched):
// the batch is in the reply subject, <inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI,
// not in headers. It returns the commit's acknowledgement.
func fastBatch(t *testing.T, nc *nats.Conn, subject, id string, msgs ...string) (seq uint64) {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox + ".>")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	for i, data := range msgs {
		op := 1 // append
		switch {
		case i == len(msgs)-1:
			op = 2 // commit
		case i == 0:
			op = 0 // start
		}
		reply := fmt.Sprintf("%s.%s.%d.fail.%d.%d.$FI", inbox, id, 100, i+1, op)
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("fast batch %s: no acknowledgement of its commit: %v", id, err)
		}
		var ack struct {
			Seq   uint64          `json:"seq"`
			Batch string          `json:"batch"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(m.Data, &ack) != nil {
			continue
		}
		if len(ack.Error) > 0 {
			t.Fatalf("fast batch %s: %s", id, m.Data)
		}
		if ack.Seq > 0 {
			return ack.Seq
		}
	}
	t.Fatalf("fast batch %s: no acknowledgement of its commit", id)
	return 0
}

// A fast batch (allow_batched) is stored as plain messages: no Nats-Batch-*
// header (the batch travels in the reply subject). A mirror without
// allow_batched copies them, and its promotion turns allow_batched on.
func TestFactFastBatchStoredPlain(t *testing.T) {
	js := embeddedtest.JetStream(t)
	s, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "FB", Subjects: []string{"fb.>"}, AllowBatchPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	if seq := fastBatch(t, js.Conn(), "fb.a", "b1", "one", "two", "three"); seq != 3 {
		t.Fatalf("commit acknowledged at seq %d, want 3", seq)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatal(err)
		}
		for k := range m.Header {
			if strings.HasPrefix(k, "Nats-Batch") {
				t.Fatalf("seq %d stored with %s: %v", seq, k, m.Header)
			}
		}
	}
}

// A counter stream (allow_msg_counter) cannot be mirrored (10173), but a
// counter stream can source one: it stores each message it sources again,
// under its own sequences, with the origin's payload (the subject's total:
// it applies the difference from the last total it had from that origin,
// so with one source its total is the origin's), Nats-Incr set to that
// difference, Nats-Counter-Sources {"<origin>":{"<subject>":"<total>"}}
// and Nats-Stream-Source "<origin> <origin seq> ...". A gap in the origin is
// a gap in nothing: the sourced stream renumbers (created with the
// origin's first sequence as first_seq, it keeps the sequences only where
// the origin has no gaps). A message of the sourced stream deleted does not
// change what the next sourced message stores. Promoted (the source
// removed, subjects added), it takes increments on from the totals. A
// stream that is not a counter stores what it sources as it is (Nats-Incr
// and the total), and can never become a counter stream (10052).
func TestFactCounterSourced(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "C", Subjects: []string{"c.>"}, AllowMsgCounter: true})
	if err != nil {
		t.Fatal(err)
	}
	incr := func(subject, by string) uint64 {
		t.Helper()
		ack, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: subject, Header: nats.Header{"Nats-Incr": {by}}})
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	incr("c.a", "2")
	incr("c.a", "+3")
	incr("c.b", "7")
	incr("c.a", "-1")
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "CM", AllowMsgCounter: true, Mirror: &jetstream.StreamSource{Name: "C"}}); apiCode(err) != 10173 {
		t.Fatalf("a counter mirror of a counter stream: %v, want error 10173", err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "PM", Mirror: &jetstream.StreamSource{Name: "C"}}); err != nil {
		t.Fatalf("a plain mirror of a counter stream: %v", err)
	}
	// A gap: seq 2 deleted before it is sourced.
	if err := src.DeleteMsg(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	cs, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "CS", AllowMsgCounter: true, Sources: []*jetstream.StreamSource{{Name: "C"}}})
	if err != nil {
		t.Fatalf("a counter stream sourcing a counter stream: %v", err)
	}
	waitMirror(t, cs, 3)
	type sourced struct {
		subject, val, incr, counterSources, from string
	}
	read := func(s jetstream.Stream, seq uint64) sourced {
		t.Helper()
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		return sourced{m.Subject, string(m.Data), m.Header.Get("Nats-Incr"), m.Header.Get("Nats-Counter-Sources"), m.Header.Get("Nats-Stream-Source")}
	}
	for i, want := range []struct {
		seq                    uint64
		subject, val, incr, cs string
		from                   string
	}{
		{1, "c.a", `{"val":"2"}`, "2", `{"C":{"c.a":"2"}}`, "C 1 "},
		{2, "c.b", `{"val":"7"}`, "7", `{"C":{"c.b":"7"}}`, "C 3 "},
		{3, "c.a", `{"val":"4"}`, "2", `{"C":{"c.a":"4"}}`, "C 4 "},
	} {
		got := read(cs, want.seq)
		if got.subject != want.subject || got.val != want.val || got.incr != want.incr || got.counterSources != want.cs || !strings.HasPrefix(got.from, want.from) {
			t.Errorf("sourced #%d: %+v, want %+v", i, got, want)
		}
		// The origin's payload, message by message.
		seq, _ := strconv.ParseUint(strings.Fields(got.from)[1], 10, 64)
		if o := read(src, seq); o.val != got.val || o.subject != got.subject {
			t.Errorf("sourced #%d: %s %s, the origin's seq %d %s %s", i, got.subject, got.val, seq, o.subject, o.val)
		}
	}
	// The sourced stream's last message on c.a deleted: the next one
	// sourced still stores the origin's total.
	if err := cs.DeleteMsg(ctx(t), 3); err != nil {
		t.Fatal(err)
	}
	incr("c.a", "10")
	waitMirror(t, cs, 4)
	if got := read(cs, 4); got.val != `{"val":"14"}` || got.incr != "12" {
		t.Fatalf("after deleting the sourced stream's last c.a: %+v, want the origin's total 14 (Nats-Incr 12 from the total 2 it still holds)", got)
	}
	// Sequences kept where the origin has no gaps: a counter stream
	// created with the origin's first sequence as first_seq.
	c3, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "C3", Subjects: []string{"c3.>"}, AllowMsgCounter: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c3.a", Header: nats.Header{"Nats-Incr": {"1"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c3.Purge(ctx(t), jetstream.WithPurgeSequence(3)); err != nil {
		t.Fatal(err)
	}
	cf, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "CF", AllowMsgCounter: true, FirstSeq: 3, Sources: []*jetstream.StreamSource{{Name: "C3"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, cf, 5)
	for _, seq := range []uint64{3, 4, 5} {
		if got := read(cf, seq); !strings.HasPrefix(got.from, fmt.Sprintf("C3 %d ", seq)) || got.val != fmt.Sprintf(`{"val":"%d"}`, seq) {
			t.Errorf("first_seq 3, no gaps from 3: seq %d is %+v", seq, got)
		}
	}
	// Promoted: the source removed, the subjects added; increments go on
	// from the totals.
	if err := js.DeleteStream(ctx(t), "C"); err != nil {
		t.Fatal(err)
	}
	pc := cs.CachedInfo().Config
	pc.Sources, pc.Subjects = nil, []string{"c.>"}
	if _, err := js.UpdateStream(ctx(t), pc); err != nil {
		t.Fatalf("promoting the sourced counter stream: %v", err)
	}
	ack, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c.b", Header: nats.Header{"Nats-Incr": {"1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(cs, ack.Sequence); got.val != `{"val":"8"}` {
		t.Fatalf("an increment after the promotion: %+v, want the total 8", got)
	}
	// A plain stream sourcing a counter stream stores what it sources as
	// it is, and cannot become a counter stream.
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "C2", Subjects: []string{"c2.>"}, AllowMsgCounter: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c2.a", Header: nats.Header{"Nats-Incr": {"5"}}}); err != nil {
		t.Fatal(err)
	}
	ps, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "PS", Sources: []*jetstream.StreamSource{{Name: "C2"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, ps, 1)
	if got := read(ps, 1); got.val != `{"val":"5"}` || got.incr != "5" {
		t.Fatalf("a plain stream sourcing a counter: %+v", got)
	}
	pcfg := ps.CachedInfo().Config
	pcfg.AllowMsgCounter = true
	if _, err := js.UpdateStream(ctx(t), pcfg); apiCode(err) != 10052 {
		t.Fatalf("turning a plain stream into a counter: %v, want error 10052", err)
	}
}

// A stream that sources a workqueue or an interest stream reads it, on a
// single server, through a durable consumer the server creates on it:
// named JS_SRC_<hash>, with the metadata _nats.src.stream (the sourcing
// stream), _nats.src.acc, and never _nats.source.*; jsapi.ReplicationConsumer
// says it is replication. Its reads take the messages out of a workqueue
// origin; an interest origin keeps a message until it, too, has read it.
// A stream sourcing a limits stream reads it through a consumer that is not
// listed.
func TestFactSourceDurableMetadata(t *testing.T) {
	js := embeddedtest.JetStream(t)
	for _, o := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		durable   bool
		keeps     uint64 // what the origin holds once the downstream read it
	}{
		{"WQ", jetstream.WorkQueuePolicy, true, 0},
		{"INT", jetstream.InterestPolicy, true, 0},
		{"LIM", jetstream.LimitsPolicy, false, 5},
	} {
		t.Run(o.name, func(t *testing.T) {
			if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: o.name, Subjects: []string{o.name + ".>"}, Retention: o.retention}); err != nil {
				t.Fatal(err)
			}
			down := o.name + "_DOWN"
			d, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: down, Sources: []*jetstream.StreamSource{{Name: o.name}}})
			if err != nil {
				t.Fatal(err)
			}
			// An interest stream keeps only what is published once a
			// consumer exists: the downstream's, here.
			rc := sourcingConsumer(t, js, o.name, o.durable)
			publish(t, js, o.name+".a", 5)
			waitMirror(t, d, 5)
			if rc == nil {
				// The downstream has read them all: its consumer exists.
				rc = sourcingConsumer(t, js, o.name, false)
			}
			if !o.durable {
				if rc != nil {
					t.Fatalf("%s: the consumer of a stream sourcing a limits stream is listed: %+v", o.name, rc)
				}
				return
			}
			if rc == nil {
				t.Fatalf("%s: no consumer listed", o.name)
			}
			t.Logf("%s: consumer %s durable %q metadata %v", o.name, rc.Name, rc.Config.Durable, rc.Config.Metadata)
			if got := rc.Config.Durable != ""; got != o.durable {
				t.Fatalf("%s: the sourcing consumer %q is durable %v, want %v", o.name, rc.Name, got, o.durable)
			}
			if !strings.HasPrefix(rc.Name, "JS_SRC_") {
				t.Errorf("%s: the sourcing consumer is named %q, want JS_SRC_<hash>", o.name, rc.Name)
			}
			if rc.Config.Metadata["_nats.src.stream"] != down || rc.Config.Metadata["_nats.src.acc"] == "" {
				t.Errorf("%s: metadata %v, want _nats.src.stream %s and _nats.src.acc", o.name, rc.Config.Metadata, down)
			}
			for k := range rc.Config.Metadata {
				if strings.HasPrefix(k, "_nats.source.") {
					t.Errorf("%s: the server wrote %s", o.name, k)
				}
			}
			if !jsapi.ReplicationConsumer(rc.Config.Metadata) {
				t.Errorf("%s: jsapi.ReplicationConsumer(%v) is false", o.name, rc.Config.Metadata)
			}
			if got, _ := jsapi.ReplicationTarget(rc.Config.Metadata); got != down {
				t.Errorf("%s: jsapi.ReplicationTarget says %q, want %s", o.name, got, down)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				si := streamInfo(t, js, o.name)
				if si.State.Msgs == o.keeps {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s holds %d messages once %s read them, want %d", o.name, si.State.Msgs, down, o.keeps)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// sourcingConsumer is the consumer listed on stream origin, waiting for
// one (20 s at most) when wait, nil when there is none.
func sourcingConsumer(t *testing.T, js jetstream.JetStream, origin string, wait bool) *jetstream.ConsumerInfo {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := js.Stream(ctx(t), origin)
		if err != nil {
			t.Fatal(err)
		}
		for ci := range s.ListConsumers(ctx(t)).Info() {
			return ci
		}
		if !wait {
			return nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consumer on %s after 20 s", origin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A sourcing stream's info says, per source, the last sequence of the
// source it stored (seq), which stays once the source is deleted. A stream
// deleted and made again under its name (as apply --migrate does) is
// sourced again from its start: the sourcing stream stores every message
// of the new one, those it had already included (the server sees the
// stream's identity change and starts over).
func TestFactSourceOfRecreatedStreamStartsOver(t *testing.T) {
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "X", Subjects: []string{"x.>"}}
	if _, err := js.CreateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	d, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "DOWN", Sources: []*jetstream.StreamSource{{Name: "X"}}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "x.a", 10)
	waitMirror(t, d, 10)
	sourced := func() uint64 {
		t.Helper()
		si := streamInfo(t, js, "DOWN")
		if len(si.Sources) != 1 {
			t.Fatalf("DOWN's sources: %+v", si.Sources)
		}
		return si.Sources[0].Seq
	}
	if got := sourced(); got != 10 {
		t.Fatalf("DOWN's source seq %d, want 10", got)
	}
	if err := js.DeleteStream(ctx(t), "X"); err != nil {
		t.Fatal(err)
	}
	if got := sourced(); got != 10 {
		t.Fatalf("the source deleted: DOWN's source seq %d, want 10", got)
	}
	if _, err := js.CreateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "x.a", 10)
	deadline := time.Now().Add(time.Minute)
	for streamInfo(t, js, "DOWN").State.Msgs < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("DOWN holds %d messages a minute after X was made again with 10, want 20", streamInfo(t, js, "DOWN").State.Msgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := streamInfo(t, js, "DOWN").State.Msgs; got != 20 {
		t.Fatalf("DOWN holds %d messages, want 20: the new X's 10 from its start", got)
	}
}

// A counter stream sourcing counter streams keeps each source's last total
// under its name (Nats-Counter-Sources): pointed from one source to
// another that has the same totals (a migrated copy of it, say), it adds
// the new one's totals again on top, from zero.
func TestFactCounterSourceRenamedCountsAgain(t *testing.T) {
	js := embeddedtest.JetStream(t)
	for _, name := range []string{"C", "C2"} {
		if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, AllowMsgCounter: true,
			SubjectTransform: &jetstream.SubjectTransformConfig{Source: strings.ToLower(name) + ".>", Destination: "c.>"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: strings.ToLower(name) + ".a", Header: nats.Header{"Nats-Incr": {"5"}}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "D", AllowMsgCounter: true, Sources: []*jetstream.StreamSource{{Name: "C"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, d, 1)
	total := func() string {
		t.Helper()
		m, err := d.GetLastMsgForSubject(ctx(t), "c.a")
		if err != nil {
			t.Fatal(err)
		}
		return string(m.Data)
	}
	if got := total(); got != `{"val":"5"}` {
		t.Fatalf("D's c.a: %s", got)
	}
	dc := streamInfo(t, js, "D").Config
	dc.Sources = []*jetstream.StreamSource{{Name: "C2", OptStartSeq: 2}}
	if _, err := js.UpdateStream(ctx(t), dc); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c2.a", Header: nats.Header{"Nats-Incr": {"1"}}}); err != nil {
		t.Fatal(err)
	}
	waitMirror(t, d, 2)
	if got := total(); got != `{"val":"11"}` {
		t.Fatalf("D's c.a after sourcing C2 (total 6) from its next increment: %s, want 11 (5 from C, 6 from C2)", got)
	}
}

// The server stores an atomic batch's messages with their Nats-Batch-*
// headers, and drops them from what a mirror copies and a stream sources
// (batching is not carried over), as it drops Nats-Expected-*: a mirror's
// and a sourced copy's headers differ from the origin's by them.
func TestFactMirrorDropsBatchHeaders(t *testing.T) {
	js := embeddedtest.JetStream(t)
	s, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "AT", Subjects: []string{"at.>"}, AllowAtomicPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	nc := js.Conn()
	if err := nc.PublishMsg(&nats.Msg{Subject: "at.a", Header: nats.Header{"Nats-Batch-Id": {"b1"}, "Nats-Batch-Sequence": {"1"}, "App": {"x"}}, Data: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	reply, err := nc.RequestMsg(&nats.Msg{Subject: "at.a", Header: nats.Header{"Nats-Batch-Id": {"b1"}, "Nats-Batch-Sequence": {"2"}, "Nats-Batch-Commit": {"1"}}, Data: []byte("two")}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), `"seq":2`) {
		t.Fatalf("the batch's commit: %s", reply.Data)
	}
	if m, err := s.GetMsg(ctx(t), 1); err != nil || m.Header.Get("Nats-Batch-Id") != "b1" {
		t.Fatalf("the origin stores seq 1 with %v (%v), want Nats-Batch-Id b1", m, err)
	}
	m, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "AT"}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Sources: []*jetstream.StreamSource{{Name: "AT"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, m, 2)
	waitMirror(t, src, 2)
	for _, c := range []jetstream.Stream{m, src} {
		for seq := uint64(1); seq <= 2; seq++ {
			got, err := c.GetMsg(ctx(t), seq)
			if err != nil {
				t.Fatal(err)
			}
			for k := range got.Header {
				if strings.HasPrefix(k, "Nats-Batch-") {
					t.Fatalf("%s seq %d keeps %s: %v", c.CachedInfo().Config.Name, seq, k, got.Header)
				}
			}
			if seq == 1 && got.Header.Get("App") != "x" {
				t.Fatalf("%s seq 1: %v, want the other headers kept", c.CachedInfo().Config.Name, got.Header)
			}
		}
	}
}
