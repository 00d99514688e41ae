package check

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// fixture makes streams A (two consumers, one with natscli's checks off)
// and B (one consumer), and a KV bucket, on a server of its own.
func fixture(t *testing.T) (context.Context, jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	js := embeddedtest.JetStream(t)
	for _, s := range []jetstream.StreamConfig{
		{Name: "A", Subjects: []string{"a.>"}},
		{Name: "B", Subjects: []string{"b.>"}, MaxMsgs: 10, Discard: jetstream.DiscardNew},
	} {
		if _, err := js.CreateStream(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		stream string
		cfg    jetstream.ConsumerConfig
	}{
		{"A", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy}},
		{"A", jetstream.ConsumerConfig{Durable: "quiet", AckPolicy: jetstream.AckExplicitPolicy,
			Metadata: map[string]string{MonitorEnabled: "false", "io.nats.monitor.unprocessed-critical": "1"}}},
		{"B", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy}},
	} {
		if _, err := js.CreateConsumer(ctx, c.stream, c.cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cfg"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		if _, err := js.Publish(ctx, "b.x", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, js
}

func names[T any](items []T, name func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
}

func TestRunScopeAndVerdicts(t *testing.T) {
	ctx, js := fixture(t)
	r, err := Run(ctx, js, Config{LimitsWarning: DefaultLimitsWarning, LimitsCritical: DefaultLimitsCritical})
	if err != nil {
		t.Fatal(err)
	}
	// KV_cfg is hidden, as consumer ls hides it; B (90% of a discard-new
	// max_msgs) warns, first.
	streams := names(r.Streams, func(s *StreamResult) string { return s.Stream + ":" + s.Status.String() })
	if len(streams) != 2 || streams[0] != "B:warning" || streams[1] != "A:ok" {
		t.Errorf("streams %v, want [B:warning A:ok]", streams)
	}
	if r.Status != Warning || r.Counts.Warning != 1 || r.Counts.Skipped != 1 {
		t.Errorf("status %v, counts %+v", r.Status, r.Counts)
	}
	// quiet is skipped (io.nats.monitor.enabled=false), listed last, and
	// its natscli threshold is not judged.
	last := r.Consumers[len(r.Consumers)-1]
	if last.Consumer != "quiet" || !last.Skipped || len(last.Checks) != 0 {
		t.Errorf("last consumer %+v, want quiet, skipped", last)
	}
	for _, c := range r.Consumers[:len(r.Consumers)-1] {
		if c.Skipped || c.Health == "" || c.Severity == "" || len(c.Checks) == 0 {
			t.Errorf("consumer %s > %s: %+v", c.Stream, c.Consumer, c)
		}
	}

	r, err = Run(ctx, js, Config{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r.Streams, func(s *StreamResult) string { return s.Stream }); len(got) != 3 {
		t.Errorf("with All: streams %v, want A, B and KV_cfg", got)
	}
}

func TestRunNamedConsumersAndStreams(t *testing.T) {
	ctx, js := fixture(t)
	// Without streams named, the streams holding the consumers named.
	r, err := Run(ctx, js, Config{Consumers: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r.Consumers, func(c *ConsumerResult) string { return c.Stream + ">" + c.Consumer }); len(got) != 2 {
		t.Errorf("consumers %v, want A>worker and B>worker", got)
	}
	r, err = Run(ctx, js, Config{Streams: []string{"A"}, Consumers: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Streams) != 1 || len(r.Consumers) != 1 || r.Consumers[0].Stream != "A" {
		t.Errorf("streams %d, consumers %+v: want A and A > worker", len(r.Streams), r.Consumers)
	}

	_, err = Run(ctx, js, Config{Streams: []string{"A", "NOPE"}})
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("unknown stream: %v, want stream not found", err)
	}
	_, err = Run(ctx, js, Config{Streams: []string{"B"}, Consumers: []string{"quiet"}})
	if !errors.Is(err, ErrConsumerNotFound) || err.Error() != `consumer not found: "quiet" in stream B` {
		t.Errorf("unknown consumer: %v", err)
	}
}
