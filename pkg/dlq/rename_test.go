package dlq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

func advisory(stream string, seq uint64) []byte {
	return fmt.Appendf(nil, `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"a%d","timestamp":"2026-01-01T00:00:00Z","stream":%q,"consumer":"worker","consumer_seq":%d,"stream_seq":%d,"deliveries":1,"reason":"bad","domain":"hub"}`, seq, stream, seq, seq)
}

// Moving a DLQ to a stream's new name: the new capture takes the old one's
// consumers and config, the advisories not yet swept are carried naming
// the new stream (every other field kept), those whose message the DLQ
// holds already and those of another stream are left out, the DLQ stream
// becomes the new name's, the old capture goes; run again, nothing more.
func TestMoveCarriesUnsweptAdvisories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := dlq.Setup(ctx, js, dlq.SetupConfig{Stream: "ORDERS", Consumers: []string{"worker"}, CaptureMaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	pub := func(subj string, data []byte) {
		t.Helper()
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	const subj = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.worker"
	pub(subj, advisory("ORDERS", 4)) // swept below (its DLQ copy exists)
	pub(subj, advisory("ORDERS", 5)) // to carry
	pub(subj, advisory("OTHER", 6))  // not ORDERS's: left out
	pub("dlq.ORDERS.4", []byte("the DLQ copy of seq 4"))

	// A capture for the new name that is not the move's: refused.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ_ADVISORIES_ORDERS_V2", Subjects: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dlq.PlanMove(ctx, js, "ORDERS", "ORDERS_V2"); !errors.Is(err, dlq.ErrInvalid) {
		t.Fatalf("a capture in the way: %v, want ErrInvalid", err)
	}
	if err := js.DeleteStream(ctx, "DLQ_ADVISORIES_ORDERS_V2"); err != nil {
		t.Fatal(err)
	}
	if p, err := dlq.PlanMove(ctx, js, "NONE", "NONE_V2"); p != nil || err != nil {
		t.Fatalf("a stream without a DLQ: %+v %v", p, err)
	}

	p, err := dlq.PlanMove(ctx, js, "ORDERS", "ORDERS_V2")
	if err != nil {
		t.Fatal(err)
	}
	if p.Unswept != 3 || p.DLQ != "DLQ_ORDERS" || fmt.Sprint(p.CaptureSubjects) != "[$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS_V2.worker $JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS_V2.worker]" {
		t.Fatalf("plan: %+v", p)
	}
	for range 2 {
		if err := dlq.PrepareMove(ctx, js, p); err != nil {
			t.Fatal(err)
		}
	}
	nc, err := js.Stream(ctx, "DLQ_ADVISORIES_ORDERS_V2")
	if err != nil {
		t.Fatal(err)
	}
	if c := nc.CachedInfo().Config; c.MaxAge != time.Hour || c.Metadata[dlq.MetaSource] != "ORDERS_V2" || c.Metadata[dlq.MetaMovedFrom] != "ORDERS" {
		t.Fatalf("new capture: %+v", c)
	}
	if _, err := js.Consumer(ctx, "DLQ_ADVISORIES_ORDERS_V2", dlq.SweepDurable); err != nil {
		t.Fatal(err)
	}
	if err := dlq.FinishMove(ctx, js, p, nil); err != nil {
		t.Fatal(err)
	}
	if p.Carried != 1 || p.AlreadySwept != 1 {
		t.Fatalf("carried %d, already swept %d; want 1, 1", p.Carried, p.AlreadySwept)
	}
	if _, err := js.Stream(ctx, "DLQ_ADVISORIES_ORDERS"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("old capture: %v", err)
	}
	d, err := js.Stream(ctx, "DLQ_ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if c := d.CachedInfo().Config; c.Metadata[dlq.MetaSource] != "ORDERS_V2" || fmt.Sprint(c.Subjects) != "[dlq.ORDERS.> dlq.ORDERS_V2.>]" {
		t.Fatalf("DLQ stream: %+v", c)
	}
	m, err := nc.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	_ = json.Unmarshal(m.Data, &got)
	_ = json.Unmarshal(advisory("ORDERS_V2", 5), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) || m.Subject != "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS_V2.worker" || m.Header.Get(dlq.HeaderMovedFrom) != "ORDERS" {
		t.Fatalf("carried: %s %v %s", m.Subject, m.Header, m.Data)
	}
	// Run again (a killed run's rerun): nothing more.
	p2, err := dlq.PlanMove(ctx, js, "ORDERS", "ORDERS_V2")
	if err != nil || p2 == nil {
		t.Fatalf("plan again: %+v %v", p2, err)
	}
	if err := dlq.PrepareMove(ctx, js, p2); err != nil {
		t.Fatal(err)
	}
	if err := dlq.FinishMove(ctx, js, p2, nil); err != nil || p2.Carried != 0 {
		t.Fatalf("finish again: carried %d, %v", p2.Carried, err)
	}
	if si, err := nc.Info(ctx); err != nil || si.State.Msgs != 1 {
		t.Fatalf("new capture: %v %v", si.State, err)
	}
}
