package plan

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// The server refuses to change a stream's retention to workqueue in place
// (10052): plan classifies it as Refused, which only a replacement or a
// migration reaches.
func TestFactRetentionToWorkqueueRefusedInPlace(t *testing.T) {
	ctx := context.Background()
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Retention = jetstream.WorkQueuePolicy
	_, err := js.UpdateStream(ctx, cfg)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10052 {
		t.Fatalf("limits -> workqueue in place: %v, want error 10052", err)
	}
}

// A workqueue stream removes a message only when the consumer it belongs to
// acknowledges it. A consumer whose ack floor is above stored messages (as
// a migration re-seats it: reset to the message after its floor) never
// delivers them: they stay, with nothing pending, for good. This is what
// plan counts as kept for good when a migration goes to workqueue.
func TestFactWorkqueueKeepsWhatIsBelowTheAckFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := js.Publish(ctx, "work.pack", []byte("pack")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.CreateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "packers", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "work.pack"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.ResetConsumerToSequence(ctx, "WORK", "packers", 6); err != nil {
		t.Fatal(err)
	}
	batch, err := c.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(seqs) != 5 || seqs[0] != 6 {
		t.Fatalf("delivered %v, want seqs 6 to 10", seqs)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.AckFloor.Stream != 10 || ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: ack floor %d, pending %d, ack pending %d; want 10, 0, 0", ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending)
	}
	s, err := js.Stream(ctx, "WORK")
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	if st.Msgs != 5 || st.FirstSeq != 1 {
		t.Fatalf("stream: %d messages from seq %d; want seqs 1 to 5 kept", st.Msgs, st.FirstSeq)
	}
	if _, err := s.GetMsg(ctx, 5); err != nil {
		t.Fatalf("seq 5: %v", err)
	}
}
