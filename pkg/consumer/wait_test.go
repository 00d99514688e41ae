package consumer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// lostJS is a server that loses the answers of some consumer info
// requests, as one does when it restarts (the request went to the server
// that left): such a request is never answered, and waits for its
// context to end.
type lostJS struct {
	jetstream.JetStream
	lose func(n int64) bool
	n    atomic.Int64
}

func (l *lostJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	st, err := l.JetStream.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return &lostStream{Stream: st, js: l}, nil
}

type lostStream struct {
	jetstream.Stream
	js *lostJS
}

func (s *lostStream) Consumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	if s.js.lose(s.js.n.Add(1)) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Stream.Consumer(ctx, name)
}

// A consumer info request whose answer is lost waits the request timeout,
// not the whole --wait, and the wait asks again: the condition met while
// the request was lost is seen at the next poll, and the progress says
// which poll went unanswered. Before, the wait took the first lost answer
// for its end: --wait expired (exit 5) however soon the server was back.
func TestWaitAsksAgainWhenAnAnswerIsLost(t *testing.T) {
	inner := embeddedtest.JetStream(t)
	js, err := jetstream.New(inner.Conn(), jetstream.WithDefaultTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.created", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The first poll is answered (ack floor 0); the next two are lost,
	// and the message is acknowledged meanwhile.
	acked := make(chan struct{})
	var once sync.Once
	lost := &lostJS{JetStream: js, lose: func(n int64) bool {
		if n == 2 {
			once.Do(func() {
				go func() {
					defer close(acked)
					msgs, err := cons.Fetch(1)
					if err != nil {
						t.Error(err)
						return
					}
					for m := range msgs.Messages() {
						if err := m.DoubleAck(ctx); err != nil {
							t.Error(err)
						}
					}
				}()
			})
		}
		return n == 2 || n == 3
	}}
	floor := uint64(1)
	var unanswered []error
	res, err := Wait(ctx, lost, WaitConfig{Stream: "ORDERS", Consumer: "billing", AckFloor: &floor, MinPoll: 10 * time.Millisecond,
		Progress: func(wp WaitProgress) {
			if wp.Unanswered != nil {
				unanswered = append(unanswered, wp.Unanswered)
			}
		}})
	<-acked
	if err != nil {
		t.Fatalf("wait ended with %v, want the condition met", err)
	}
	if res.State.AckFloorStreamSeq != 1 || res.Polls < 4 {
		t.Errorf("met with ack floor %d after %d polls, want 1 after at least 4 (two of them lost)", res.State.AckFloorStreamSeq, res.Polls)
	}
	if len(unanswered) != 2 || !errors.Is(unanswered[0], context.DeadlineExceeded) {
		t.Errorf("unanswered polls reported: %v, want two deadlines", unanswered)
	}
}
