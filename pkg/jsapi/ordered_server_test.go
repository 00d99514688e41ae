package jsapi_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// A read whose consumer is deleted under it, bounded or following, starts
// a new one after the last message it delivered: every message once, in
// order.
func TestReadOrderedSurvivesConsumerDeletion(t *testing.T) {
	c, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	// 64 KiB messages: pulls of 128, so that the consumer is still
	// delivering when it is deleted.
	const n = 1000
	payload := make([]byte, 64<<10)
	for i := 1; i <= n; i++ {
		if _, err := js.PublishAsync("orders.created", payload); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	if _, err := s.Info(ctx); err != nil { // refresh the cached state
		t.Fatal(err)
	}

	for _, follow := range []bool{false, true} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			var deleted atomic.Int32
			deleteConsumers := func() {
				names := s.ConsumerNames(ctx)
				for name := range names.Name() {
					if err := s.DeleteConsumer(ctx, name); err == nil {
						deleted.Add(1)
					}
				}
			}
			var got []uint64
			r := jsapi.OrderedRead{
				Label:    `stream "ORDERS"`,
				Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy},
				EndSeq:   n,
				Follow:   follow,
			}
			err := jsapi.ReadOrdered(ctx, js, s, r, func(m *jsapi.StoredMsg) error {
				got = append(got, m.Seq)
				if len(got) == 300 || len(got) == 600 {
					deleteConsumers()
				}
				if len(got) == n {
					return jsapi.ErrStop
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if deleted.Load() < 2 {
				t.Fatalf("deleted %d consumers, want 2", deleted.Load())
			}
			if len(got) != n {
				t.Fatalf("got %d messages, want %d", len(got), n)
			}
			for i, seq := range got {
				if seq != uint64(i+1) {
					t.Fatalf("message %d has sequence %d", i+1, seq)
				}
			}
		})
	}
}
