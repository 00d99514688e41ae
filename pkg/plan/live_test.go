package plan

import (
	"context"
	"fmt"
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
	return e.JetStream.Stream(ctx, name)
}

// consumerList and consumerNames make electingJS the consumerAPI that
// FetchLive asks: the list leaves the electing consumer out.
func (e *electingJS) consumerList(ctx context.Context, stream string, leaderWait time.Duration) ([]*jetstream.ConsumerInfo, error) {
	all, err := consumerAPIFor(e.JetStream).consumerList(ctx, stream, leaderWait)
	var out []*jetstream.ConsumerInfo
	for _, ci := range all {
		if stream != e.stream || ci.Name != e.consumer {
			out = append(out, ci)
		}
	}
	return out, err
}

func (e *electingJS) consumerNames(ctx context.Context, stream string, leaderWait time.Duration) ([]string, error) {
	return consumerAPIFor(e.JetStream).consumerNames(ctx, stream, leaderWait)
}

func (e *electingJS) Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error) {
	if stream == e.stream && name == e.consumer && !e.answer() {
		return nil, &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	}
	return e.JetStream.Consumer(ctx, stream, name)
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
		p, live, err := Make(ctx, e, desired, Options{LeaderWait: time.Minute})
		if err != nil {
			t.Fatalf("%s electing: %v", tt.name, err)
		}
		// Make hands on the limits it read (plan's lint uses them, not a
		// second $JS.API.INFO request).
		if want, _ := FetchServerLimits(ctx, js); live.Limits != want || want.MaxPayload == 0 {
			t.Errorf("%s electing: Make's live.Limits = %+v, want %+v", tt.name, live.Limits, want)
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

// FetchLive reads each stream's info once: the stream list gives it, and
// the consumers are listed by the stream's name (nats.go lists them only
// through a stream handle, whose making asks for the info again). Every
// consumer is read, past the server's page of 256.
func TestFetchLiveReadsEachStreamInfoOnce(t *testing.T) {
	var mu sync.Mutex
	requests := map[string]int{}
	js := embeddedtest.JetStream(t, jetstream.WithClientTrace(&jetstream.ClientTrace{RequestSent: func(subject string, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		requests[subject]++
	}}))
	ctx := context.Background()
	for _, name := range []string{"ORDERS", "JOBS"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}}); err != nil {
			t.Fatal(err)
		}
	}
	const consumers = 300
	for i := range consumers {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: fmt.Sprintf("c%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	clear(requests)
	mu.Unlock()

	live, err := FetchLive(ctx, js, func(string) bool { return true }, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(live.Consumers["ORDERS"]); n != consumers {
		t.Errorf("ORDERS: %d consumers read, want %d", n, consumers)
	}
	if n := len(live.Consumers["JOBS"]); n != 0 {
		t.Errorf("JOBS: %d consumers read, want 0", n)
	}
	if live.Streams["ORDERS"] == nil || live.Streams["JOBS"] == nil {
		t.Fatalf("streams read: %v", live.Streams)
	}
	mu.Lock()
	defer mu.Unlock()
	for subject, n := range requests {
		if strings.HasPrefix(subject, "$JS.API.STREAM.INFO.") {
			t.Errorf("%s asked %d times: the stream list gave its info", subject, n)
		}
	}
	if requests["$JS.API.STREAM.LIST"] != 1 {
		t.Errorf("STREAM.LIST asked %d times, want 1", requests["$JS.API.STREAM.LIST"])
	}
	if n := requests["$JS.API.CONSUMER.LIST.ORDERS"]; n != 2 {
		t.Errorf("CONSUMER.LIST.ORDERS asked %d times, want 2 (two pages)", n)
	}
}
