package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/retry"
)

// What a real server answers: refusals with a 5xx code are answers, not
// transient; silence and no responders are.
func TestTransientServerErrors(t *testing.T) {
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	silent, err := nc.Subscribe("silent", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Unsubscribe()
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	elsewhere, err := jetstream.NewWithAPIPrefix(nc, "$NOWHERE.API")
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		do   func() error
		want bool
	}{
		{"stream not found", func() error { _, err := js.Stream(ctx, "NONE"); return err }, false},
		{"deleting a deleted message (500, 10057)", func() error { return s.DeleteMsg(ctx, 1) }, false},
		{"replicas on a single server (500, 10074)", func() error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3"}, Replicas: 3})
			return err
		}, false},
		{"an immutable consumer field (500, 10012)", func() error {
			if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				return err
			}
			_, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckNonePolicy})
			return err
		}, false},
		{"no reply in time", func() error { _, err := nc.RequestWithContext(short(), "silent", nil); return err }, true},
		{"no reply in time (nats timeout)", func() error { _, err := nc.Request("silent", nil, 50*time.Millisecond); return err }, true},
		{"no responders for the API", func() error { _, err := elsewhere.Stream(ctx, "ORDERS"); return err }, true},
		{"no stream for a publish", func() error { _, err := js.Publish(ctx, "nobody.takes.this", nil); return err }, true},
	} {
		err := c.do()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if got := retry.Transient(err); got != c.want {
			t.Errorf("%s (%v): Transient = %v, want %v", c.name, err, got, c.want)
		}
	}
}

// A replicated stream that loses its quorum answers what Transient
// counts: a publish waits in vain for the replicas (no reply in time), a
// request to the meta layer finds no leader (10008, or no reply in time);
// and Do with Transient rides it out until the servers are back.
func TestTransientRidesOutLostQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c, err := embedded.Start(embedded.Config{Nodes: 3, StoreDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	js := embeddedtest.Connect(t, c, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	// The client is connected to node 0; the other two go.
	for _, i := range []int{1, 2} {
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	// A publish with a message id: trying it again stores it once.
	publish := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := js.Publish(ctx, "orders.1", []byte("one"), jetstream.WithMsgID("order-1"))
		return err
	}
	if err := publish(ctx); !retry.Transient(err) {
		t.Fatalf("a publish without a quorum: %v, which is not transient", err)
	}
	meta := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
		return err
	}
	// The meta leader may take its time to notice that it lost its
	// quorum, and stores nothing meanwhile.
	var metaErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if metaErr = meta(ctx); metaErr != nil {
			break
		}
		if err := js.DeleteStream(ctx, "OTHER"); err != nil {
			metaErr = err
			break
		}
	}
	if !retry.Transient(metaErr) {
		t.Fatalf("a stream create without a meta quorum: %v, which is not transient", metaErr)
	}
	t.Logf("without a quorum: publish and stream create: %v", metaErr)

	restarted := make(chan error, 1)
	go func() {
		for _, i := range []int{1, 2} {
			if err := c.Restart(i); err != nil {
				restarted <- err
				return
			}
		}
		restarted <- nil
	}()
	var seen []error
	err = retry.Do(ctx, retry.Policy{Within: time.Minute, Pause: 100 * time.Millisecond, MaxPause: time.Second, Retryable: func(err error) bool {
		seen = append(seen, err)
		return retry.Transient(err)
	}}, publish)
	if err != nil {
		t.Fatalf("after %d tries: %v", len(seen)+1, err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	t.Logf("answered after %d tries: %v", len(seen)+1, seen)
	info, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
}
