package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A watch reads a consumer's oldest undelivered message once, not every
// poll, while its delivered cursor stands still; once the cursor moves it
// reads the new oldest one.
func TestWatchReadsLagOnlyWhenTheCursorMoves(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "orders.created", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}

	settled := countGets(t, ctx, js)

	w := &Watcher{JS: js}
	poll := func() *State {
		samples, err := w.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 1 {
			t.Fatalf("%d samples, want 1", len(samples))
		}
		return samples[0].State
	}
	first := poll()
	if first.OldestUnprocessedSeq != 1 || first.LagSeconds == nil {
		t.Fatalf("first poll: oldest %d, lag %v; want seq 1 and a lag", first.OldestUnprocessedSeq, first.LagSeconds)
	}
	if n := settled(); n != 1 {
		t.Fatalf("first poll made %d gets, want 1", n)
	}
	second := poll()
	if n := settled(); n != 1 {
		t.Errorf("second poll, cursor unmoved: %d gets in all, want still 1", n)
	}
	if second.OldestUnprocessedSeq != 1 || second.LagSeconds == nil || *second.LagSeconds < *first.LagSeconds {
		t.Errorf("second poll: oldest %d, lag %v; want seq 1 and a lag no smaller than %v", second.OldestUnprocessedSeq, second.LagSeconds, *first.LagSeconds)
	}

	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	third := poll()
	if third.OldestUnprocessedSeq != 3 {
		t.Errorf("after two deliveries the oldest undelivered is %d, want 3", third.OldestUnprocessedSeq)
	}
	if n := settled(); n != 2 {
		t.Errorf("the moved cursor made %d gets in all, want 2", n)
	}
}
