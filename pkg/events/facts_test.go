package events_test

// What the server does that the timeline depends on. If a server release
// changes one of these, its test fails and the timeline needs a look.

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A single server restarted sends a stream and a consumer "create"
// advisory for every stream and consumer it recovers, and each keeps the
// created time it had: a recovery is told from a creation by the created
// time (events.recoveries). The server recovers its streams in parallel,
// so a capture stream (the recorder) hears the advisories of only those
// recovered after it: the test restarts until it has heard ORDERS's.
func TestFactRestartAdvisesCreateWithOldCreatedTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := embeddedtest.Start(t)
	js := embeddedtest.Reconnecting(t, c)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "AREC", Subjects: []string{"$JS.EVENT.ADVISORY.STREAM.CREATED.>", "$JS.EVENT.ADVISORY.CONSUMER.CREATED.>"}}); err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	sCreated, cCreated := s.CachedInfo().Created, cons.CachedInfo().Created
	time.Sleep(2500 * time.Millisecond) // created times apart from the restart's by more than the recovery margin
	heard := false
	for restart := 0; restart < 20 && !heard; restart++ {
		before := lastSeq(t, ctx, js, "AREC")
		if err := c.Stop(0); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(0); err != nil {
			t.Fatal(err)
		}
		// Heard within a few seconds, or not at all (recovered before
		// AREC): then restart again.
		deadline := time.Now().Add(3 * time.Second)
		var subjects map[string]time.Time
		for time.Now().Before(deadline) {
			subjects = advised(t, ctx, js, before)
			if len(subjects) >= 2 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_, stream := subjects["$JS.EVENT.ADVISORY.STREAM.CREATED.ORDERS"]
		_, consumer := subjects["$JS.EVENT.ADVISORY.CONSUMER.CREATED.ORDERS.billing"]
		heard = stream && consumer
		for subj, at := range subjects {
			if subj == "$JS.EVENT.ADVISORY.STREAM.CREATED.AREC" {
				continue
			}
			if at.Sub(cCreated) < 2*time.Second {
				t.Fatalf("%s advised at %v, not 2s after the creation %v", subj, at, cCreated)
			}
		}
	}
	if !heard {
		t.Fatal("20 restarts, and AREC never heard ORDERS and billing recovered")
	}
	lastSeq(t, ctx, js, "ORDERS") // answering again
	si, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if !si.CachedInfo().Created.Equal(sCreated) || !ci.CachedInfo().Created.Equal(cCreated) {
		t.Fatalf("created times after the restart: stream %v (was %v), consumer %v (was %v)",
			si.CachedInfo().Created, sCreated, ci.CachedInfo().Created, cCreated)
	}
}

// lastSeq is stream's last sequence, asked again until the server
// answers (a request lost to a restart is not waited for).
func lastSeq(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := js.Stream(try, stream)
		var info *jetstream.StreamInfo
		if err == nil {
			info, err = s.Info(try)
		}
		cancel()
		if err == nil {
			return info.State.LastSeq
		}
		if ctx.Err() != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
	}
}

// advised are the subjects AREC stored after sequence after, with the
// advisories' timestamps.
func advised(t *testing.T, ctx context.Context, js jetstream.JetStream, after uint64) map[string]time.Time {
	last := lastSeq(t, ctx, js, "AREC")
	s, err := js.Stream(ctx, "AREC")
	if err != nil {
		return nil
	}
	out := map[string]time.Time{}
	for seq := after + 1; seq <= last; seq++ {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := s.GetMsg(try, seq)
		cancel()
		if err != nil {
			continue
		}
		var a struct {
			Timestamp time.Time `json:"timestamp"`
		}
		if json.Unmarshal(m.Data, &a) == nil {
			out[m.Subject] = a.Timestamp
		}
	}
	return out
}
