package plan

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// electingJS is a server on which one stream's group (or one consumer's)
// is electing a leader, as in a cluster right after a scale: the list APIs
// leave it out, and its info request gets no answer until the election
// is over, after unanswered requests.
type electingJS struct {
	jetstream.JetStream
	stream, consumer string

	mu         sync.Mutex
	unanswered int
}

// answer reports whether the group has a leader by now.
func (e *electingJS) answer() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unanswered == 0 {
		return true
	}
	e.unanswered--
	return false
}

func (e *electingJS) ListStreams(ctx context.Context, opts ...jetstream.StreamListOpt) jetstream.StreamInfoLister {
	l := &infoLister[*jetstream.StreamInfo]{ch: make(chan *jetstream.StreamInfo)}
	inner := e.JetStream.ListStreams(ctx, opts...)
	go func() {
		defer close(l.ch)
		for si := range inner.Info() {
			if e.consumer != "" || si.Config.Name != e.stream {
				l.ch <- si
			}
		}
		l.err = inner.Err()
	}()
	return l
}

func (e *electingJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if name == e.stream && e.consumer == "" && !e.answer() {
		return nil, context.DeadlineExceeded
	}
	s, err := e.JetStream.Stream(ctx, name)
	if err != nil || name != e.stream {
		return s, err
	}
	return &electingStream{Stream: s, e: e}, nil
}

type electingStream struct {
	jetstream.Stream
	e *electingJS
}

func (s *electingStream) ListConsumers(ctx context.Context) jetstream.ConsumerInfoLister {
	l := &infoLister[*jetstream.ConsumerInfo]{ch: make(chan *jetstream.ConsumerInfo)}
	inner := s.Stream.ListConsumers(ctx)
	go func() {
		defer close(l.ch)
		for ci := range inner.Info() {
			if ci.Name != s.e.consumer {
				l.ch <- ci
			}
		}
		l.err = inner.Err()
	}()
	return l
}

func (s *electingStream) Consumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	if name == s.e.consumer && !s.e.answer() {
		return nil, &jetstream.APIError{Code: 503, ErrorCode: jsErrClusterNotAvailable, Description: "JetStream system temporarily unavailable"}
	}
	return s.Stream.Consumer(ctx, name)
}

type infoLister[T any] struct {
	ch  chan T
	err error
}

func (l *infoLister[T]) Info() <-chan T { return l.ch }
func (l *infoLister[T]) Err() error     { return l.err }

// A stream or consumer that the list APIs leave out while its group
// elects a leader is still there: planning waits for it to answer (within
// the wait), and never plans to create it.
func TestFetchLiveWaitsOutElections(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "audit"}); err != nil {
		t.Fatal(err)
	}
	desired := &Desired{Resources: []*Resource{
		{Kind: KindStream, Name: "EVENTS", FieldPos: map[string]Pos{},
			StreamConfig: &jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}}},
		{Kind: KindConsumer, Stream: "EVENTS", Name: "audit", FieldPos: map[string]Pos{},
			ConsumerConfig: &jetstream.ConsumerConfig{Name: "audit", Durable: "audit"}},
	}}

	for _, tt := range []struct{ name, consumer string }{{"stream", ""}, {"consumer", "audit"}} {
		e := &electingJS{JetStream: js, stream: "EVENTS", consumer: tt.consumer, unanswered: 3}
		p, _, err := Make(ctx, e, desired, Options{LeaderWait: time.Minute})
		if err != nil {
			t.Fatalf("%s electing: %v", tt.name, err)
		}
		for _, rp := range p.Resources {
			if rp.Action != ActionNone {
				t.Errorf("%s electing: %s planned %s, want no change", tt.name, rp.Label(), rp.Action)
			}
		}

		// An election that outlasts the wait is an error naming the resource,
		// not a plan to create it.
		e = &electingJS{JetStream: js, stream: "EVENTS", consumer: tt.consumer, unanswered: 1 << 30}
		_, _, err = Make(ctx, e, desired, Options{LeaderWait: 300 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "no leader answered within 300ms") || !strings.Contains(err.Error(), `stream "EVENTS"`) {
			t.Errorf("%s electing for good: err = %v, want no leader answered within 300ms", tt.name, err)
		}
	}
}
