package dlq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// Advisories the durable delivers that never reach the sweep (a fetch
// that gave up before the server's late answer: nats.go's FetchNoWait
// waits a second) would wait out the durable's ack wait of 5 minutes, and
// the sweep would end with their dead messages still in the source. Here
// a thief takes 10 advisories from the durable in the middle of a sweep
// and never acknowledges them: the sweep notices the gap in the consumer
// sequences, resets the durable once the rest is done, and moves those
// 10 too, in the same run.
func TestSweepReadsAgainWhatNeverReachedIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(ctx, js, SetupConfig{Stream: "JOBS", Consumers: []string{"worker"}}); err != nil {
		t.Fatal(err)
	}
	const total = 5000
	for i := 1; i <= total; i++ {
		if _, err := js.PublishAsync("jobs.run", []byte("poison"), jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		adv := fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"JOBS","consumer":"worker","stream_seq":%d,"deliveries":1}`, i)
		if _, err := js.PublishAsync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.worker", []byte(adv), jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("publishes not acknowledged")
	}

	n := DefaultNames("JOBS", "")
	nc := js.Conn()
	thief, err := nc.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stolen := 0
	steal := func() {
		req := []byte(`{"batch":10,"no_wait":true}`)
		if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+n.Capture+"."+n.Durable, thief.Subject, req); err != nil {
			t.Error(err)
			return
		}
		for stolen < 10 {
			m, err := thief.NextMsg(10 * time.Second)
			if err != nil {
				t.Errorf("the thief got %d: %v", stolen, err)
				return
			}
			if len(m.Data) > 0 {
				stolen++
			}
		}
	}
	sum, err := Sweep(ctx, js, SweepConfig{Stream: "JOBS", Batch: 64, LockTTL: 30 * time.Second,
		OnRecord: func(Record) { once.Do(steal) }})
	if err != nil {
		t.Fatal(err)
	}
	if stolen != 10 {
		t.Fatalf("the thief took %d advisories, want 10", stolen)
	}
	if sum.Moved != total || sum.Failed != 0 || sum.SourceDeleted != total {
		t.Fatalf("moved %d (failed %d, source deleted %d) of %d: %+v", sum.Moved, sum.Failed, sum.SourceDeleted, total, sum)
	}
	ci, err := js.Consumer(ctx, n.Capture, n.Durable)
	if err != nil {
		t.Fatal(err)
	}
	if info := ci.CachedInfo(); info.AckFloor.Stream != total || info.NumAckPending != 0 || info.NumPending != 0 {
		t.Fatalf("the durable: ack floor %d, %d pending acknowledgement, %d pending", info.AckFloor.Stream, info.NumAckPending, info.NumPending)
	}
}
