package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// publisher publishes "p<n>" to subj one at a time, retrying each until it
// is acknowledged, and records what was acknowledged and the longest gap
// between two acknowledgements.
type publisher struct {
	mu     sync.Mutex
	acked  map[string]uint64
	maxGap time.Duration
	stop   chan struct{}
	done   chan struct{}
}

func startPublisher(js jetstream.JetStream, subj string) *publisher {
	p := &publisher{acked: map[string]uint64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		last := time.Now()
		for n := 0; ; n++ {
			payload := fmt.Sprintf("p%d", n)
			for {
				select {
				case <-p.stop:
					return
				default:
				}
				c, cancel := context.WithTimeout(context.Background(), time.Second)
				ack, err := js.Publish(c, subj, []byte(payload), jetstream.WithMsgID(payload))
				cancel()
				if err == nil {
					now := time.Now()
					p.mu.Lock()
					p.acked[payload] = ack.Sequence
					p.maxGap = max(p.maxGap, now.Sub(last))
					p.mu.Unlock()
					last = now
					break
				}
				if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}()
	return p
}

func (p *publisher) finish() { close(p.stop); <-p.done }

func TestReplaceUnderItsOwnNameWhilePublishing(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.new"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 500; i++ {
		if _, err := js.Publish(ctx(t), "orders.new", []byte(fmt.Sprintf("order %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	b, err := c.Fetch(100)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	pub := startPublisher(js, "orders.new")
	time.Sleep(50 * time.Millisecond)
	cfg := src.CachedInfo().Config
	cfg.Retention = jetstream.WorkQueuePolicy
	sum, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{})
	if err != nil {
		pub.finish()
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	pub.finish()
	t.Logf("summary %+v; publisher: %d acknowledged, longest gap %v", sum, len(pub.acked), pub.maxGap)
	s, err := js.Stream(ctx(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy {
		t.Fatalf("retention %v", s.CachedInfo().Config.Retention)
	}
	if _, err := js.Stream(ctx(t), migrate.TempName("ORDERS")); err == nil {
		t.Fatal("temporary stream left")
	}
	// Every acknowledged publish is there, at the sequence it was given.
	for payload, seq := range pub.acked {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatalf("%s at seq %d: %v", payload, seq, err)
		}
		if string(m.Data) != payload {
			t.Fatalf("seq %d holds %q, want %q", seq, m.Data, payload)
		}
	}
	nc, err := js.Consumer(ctx(t), "ORDERS", "proj")
	if err != nil {
		t.Fatal(err)
	}
	if nc.CachedInfo().Paused {
		t.Fatal("consumer left paused")
	}
	b, err = nc.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		md, _ := m.Metadata()
		if md.Sequence.Stream != 101 {
			t.Fatalf("next delivered seq %d, want 101", md.Sequence.Stream)
		}
	}
}

// Stopped between its two moves, a replacement's dry run changes nothing,
// and a rerun finishes it.
func TestReplaceStoppedBetweenMovesDryRunThenRerun(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "orders.a", 20)
	cfg := src.CachedInfo().Config
	cfg.Storage = jetstream.MemoryStorage
	stopCtx, stop := context.WithCancel(ctx(t))
	_, err = migrate.Replace(stopCtx, js, cfg, migrate.ReplaceOptions{AtStep: func(step string) {
		if step == "2:created" {
			stop()
		}
	}})
	if err == nil {
		t.Fatal("the stopped replacement succeeded")
	}
	info := func(name string) *jetstream.StreamInfo {
		s, err := js.Stream(ctx(t), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s.CachedInfo()
	}
	before := info("ORDERS")
	if _, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if after := info("ORDERS"); after.Config.Mirror == nil || after.State.Msgs != before.State.Msgs || after.State.LastSeq != before.State.LastSeq {
		t.Fatalf("the dry run changed ORDERS: %+v", after)
	}
	sum, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Resumed || sum.Messages != 20 {
		t.Fatalf("summary %+v", sum)
	}
	if got := info("ORDERS"); got.Config.Storage != jetstream.MemoryStorage || got.Config.Mirror != nil || got.State.Msgs != 20 {
		t.Fatalf("ORDERS after: %+v", got)
	}
}
