package dlq_test

// Server behaviour the sweep is built around (docs/dlq.md, sweep). If a
// future server changes it, the test fails and the sweep needs a look.

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A purge below a sequence moves the ack floor of a consumer with nothing
// pending to everything it has delivered, past dead messages above the
// purge it never acknowledged. On a workqueue stream those messages then
// count as acknowledged: a leader change or a restart removes them. That
// is why the sweep removes dead messages with a delete each, never with a
// purge of the ones it has copied (tried; a stream leader step-down in
// testscripts/cluster/dlq_stepdown then lost the dead messages not yet
// swept).
func TestFactPurgeMovesAckFloorPastDeadMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy,
		MaxDeliver: 1, AckWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := js.Publish(ctx, "jobs.run", []byte("poison")); err != nil {
			t.Fatal(err)
		}
	}
	// The worker gets all ten once and never acknowledges them: the ack
	// wait ends, MaxDeliver is reached, they are dead.
	b, err := cons.Fetch(10, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range b.Messages() {
		got++
	}
	if got != 10 {
		t.Fatalf("fetched %d, want 10", got)
	}
	var ci *jetstream.ConsumerInfo
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ci, err = cons.Info(ctx); err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ci.NumAckPending != 0 || ci.AckFloor.Stream != 0 {
		t.Fatalf("before the purge: %d pending, ack floor %d; want 0 and 0", ci.NumAckPending, ci.AckFloor.Stream)
	}

	if err := st.Purge(ctx, jetstream.WithPurgeSequence(4)); err != nil {
		t.Fatal(err)
	}
	if ci, err = cons.Info(ctx); err != nil {
		t.Fatal(err)
	}
	si, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.AckFloor.Stream != 10 || si.State.Msgs != 7 {
		t.Errorf("after purging below 4: ack floor %d with %d messages left, want 10 with 7 (the server changed: see docs/dlq.md)", ci.AckFloor.Stream, si.State.Msgs)
	}
}
