package migrate_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// A workqueue stream (copied by jetctl, not mirrored) with a DLQ moves to
// another name: the advisory captured under the old name and not yet
// swept is swept under the new one, which takes the dead message out of
// the moved stream; the old capture is gone.
func TestMoveCarriesTheDLQOfAWorkqueue(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx(t), "JOBS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := dlq.Setup(ctx(t), js, dlq.SetupConfig{Stream: "JOBS"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := js.Publish(ctx(t), "jobs.run", fmt.Appendf(nil, "job %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Seq 3 gave up on (as the server announces it).
	adv := `{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"x","timestamp":"2026-01-01T00:00:00Z","stream":"JOBS","consumer":"worker","stream_seq":3,"deliveries":2}`
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.worker", Data: []byte(adv)}); err != nil {
		t.Fatal(err)
	}
	ep := migrate.Endpoint{JS: js}
	sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "JOBS", Target: "JOBS2", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Mechanism != "copy" || sum.DLQ == nil || sum.DLQ.Carried != 1 || sum.DLQ.Capture != "DLQ_ADVISORIES_JOBS2" {
		t.Fatalf("move: %+v, dlq %+v", sum, sum.DLQ)
	}
	if _, err := js.Stream(ctx(t), "DLQ_ADVISORIES_JOBS"); err == nil {
		t.Fatal("the old capture is still there")
	}
	sw, err := dlq.Sweep(ctx(t), js, dlq.SweepConfig{Stream: "JOBS2"})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Moved != 1 || sw.SourceDeleted != 1 || sw.DLQStream != "DLQ_JOBS" {
		t.Fatalf("sweep of the new name: %+v", sw)
	}
	s, err := js.Stream(ctx(t), "JOBS2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetMsg(ctx(t), 3); err == nil {
		t.Fatal("the dead message is still in JOBS2")
	}
	d, err := js.Stream(ctx(t), "DLQ_JOBS")
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.GetLastMsgForSubject(ctx(t), "dlq.JOBS2.3")
	if err != nil || string(m.Data) != "job 3" {
		t.Fatalf("the DLQ copy: %v %v", m, err)
	}
}
