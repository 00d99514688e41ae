package streamread_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// apiProxy passes JetStream API requests from "$PROXY.API." on to the
// server's "$JS.API.", keeping their reply subjects (the server answers the
// requester directly). It holds pull requests until pulls is closed, and
// consumer info requests until info is closed or infoHold passes: a server
// slow to answer, at a moment the test picks.
type apiProxy struct {
	pulls, info chan struct{}
	// asked is closed at the first consumer info request.
	asked     chan struct{}
	askedOnce sync.Once
	// pulled is sent a value for each pull request.
	pulled chan struct{}
}

const infoHold = 3 * time.Second

func startAPIProxy(t *testing.T, url string) *apiProxy {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	p := &apiProxy{pulls: make(chan struct{}), info: make(chan struct{}), asked: make(chan struct{}), pulled: make(chan struct{}, 100)}
	forward := func(m *nats.Msg) {
		_ = nc.PublishMsg(&nats.Msg{Subject: "$JS.API." + strings.TrimPrefix(m.Subject, "$PROXY.API."), Reply: m.Reply, Header: m.Header, Data: m.Data})
	}
	_, err = nc.Subscribe("$PROXY.API.>", func(m *nats.Msg) {
		switch {
		case strings.HasPrefix(m.Subject, "$PROXY.API.CONSUMER.MSG.NEXT."):
			p.pulled <- struct{}{}
			go func() { <-p.pulls; forward(m) }()
		case strings.HasPrefix(m.Subject, "$PROXY.API.CONSUMER.INFO."):
			p.askedOnce.Do(func() { close(p.asked) })
			go func() {
				select {
				case <-p.info:
				case <-time.After(infoHold):
				}
				forward(m)
			}()
		default:
			forward(m)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bounded read that hears an idle heartbeat asks the server whether
// anything is left for it; a message that arrives while that question is
// unanswered is handed over at once, not held up behind the question in
// the subscription's callback (and then dropped, once the late answer said
// nothing was pending).
func TestReadOrderedIdleCheckDoesNotHoldUpMessages(t *testing.T) {
	srv := embeddedtest.Start(t)
	proxy := startAPIProxy(t, srv.URL())
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	direct, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.NewWithAPIPrefix(nc, "$PROXY.API")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Publish(ctx, "orders.1", []byte("one")); err != nil {
		t.Fatal(err)
	}

	// A read up to seq 10 (a caller's fixed end) starts with seq 1 pending;
	// seq 1 goes before its pulls reach the server.
	got := make(chan uint64, 10)
	done := make(chan error, 1)
	go func() {
		r := streamread.OrderedRead{Label: `stream "ORDERS"`, Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, EndSeq: 10, Heartbeat: 200 * time.Millisecond}
		done <- streamread.ReadOrdered(ctx, js, s, r, func(m *streamread.StoredMsg) error {
			got <- m.Seq
			return nil
		})
	}()
	for range 2 {
		select {
		case <-proxy.pulled:
		case <-ctx.Done():
			t.Fatal("no pull request")
		}
	}
	if err := s.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	close(proxy.pulls)

	// Nothing to deliver: an idle heartbeat, and the read asks for the
	// consumer's info, which the server is slow to answer. Meanwhile seq 2
	// is stored and delivered.
	select {
	case <-proxy.asked:
	case err := <-done:
		t.Fatalf("the read ended (%v) before asking for the consumer's info", err)
	case <-ctx.Done():
		t.Fatal("no consumer info request after an idle heartbeat")
	}
	if _, err := direct.Publish(ctx, "orders.2", []byte("two")); err != nil {
		t.Fatal(err)
	}
	handed := false
	select {
	case seq := <-got:
		handed = true
		if seq != 2 {
			t.Errorf("handed over seq %d, want 2", seq)
		}
	case <-time.After(infoHold - time.Second):
		t.Error("seq 2 was not handed over while the consumer info request was unanswered")
	}
	close(proxy.info)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	switch {
	case len(got) > 0:
		t.Errorf("seq %d handed over late or twice", <-got)
	case !handed:
		t.Error("the read ended without seq 2")
	}
}
