package streamread_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// startStream starts a server with a stream ORDERS holding n messages of
// size bytes each.
func startStream(t *testing.T, n, size int) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js := embeddedtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, size)
	for i := 1; i <= n; i++ {
		if _, err := js.PublishAsync("orders.created", payload, jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	if _, err := s.Info(ctx); err != nil { // refresh the cached state
		t.Fatal(err)
	}
	return js, s
}

// A callback that is slow (a downstream pipe that stalls) is not the server
// falling silent: the read neither fails nor starts over.
func TestReadOrderedSlowCallbackIsNotSilence(t *testing.T) {
	js, s := startStream(t, 300, 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, follow := range []bool{false, true} {
		var got []uint64
		r := streamread.OrderedRead{Label: `stream "ORDERS"`, Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, EndSeq: 300, Follow: follow, Heartbeat: 100 * time.Millisecond}
		err := streamread.ReadOrdered(ctx, js, s, r, func(m *streamread.StoredMsg) error {
			got = append(got, m.Seq)
			if len(got) == 10 || len(got) == 200 {
				time.Sleep(500 * time.Millisecond) // five heartbeats
			}
			if len(got) == 300 {
				return streamread.ErrStop
			}
			return nil
		})
		if err != nil {
			t.Fatalf("follow=%v: %v", follow, err)
		}
		for i, seq := range got {
			if seq != uint64(i+1) {
				t.Fatalf("follow=%v: message %d has sequence %d", follow, i+1, seq)
			}
		}
		if len(got) != 300 {
			t.Fatalf("follow=%v: %d messages", follow, len(got))
		}
	}
}

// A read whose consumer is deleted under it, bounded or following, starts
// a new one after the last message it delivered: every message once, in
// order.
func TestReadOrderedSurvivesConsumerDeletion(t *testing.T) {
	// 64 KiB messages: pulls of 128, so that the consumer is still
	// delivering when it is deleted.
	const n = 1000
	js, s := startStream(t, n, 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

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
			r := streamread.OrderedRead{
				Label:    `stream "ORDERS"`,
				Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy},
				EndSeq:   n,
				Follow:   follow,
			}
			err := streamread.ReadOrdered(ctx, js, s, r, func(m *streamread.StoredMsg) error {
				got = append(got, m.Seq)
				if len(got) == 300 || len(got) == 600 {
					deleteConsumers()
				}
				if len(got) == n {
					return streamread.ErrStop
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

// A bounded read whose remaining messages are removed under it (a purge, an
// expiry) ends once the server has nothing left for it, instead of waiting
// for its hour-long pull to expire.
func TestReadOrderedEndsWhenMessagesVanish(t *testing.T) {
	js, s := startStream(t, 1000, 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := 0
	r := streamread.OrderedRead{Label: `stream "ORDERS"`, Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, EndSeq: 1000, Heartbeat: 100 * time.Millisecond}
	start := time.Now()
	err := streamread.ReadOrdered(ctx, js, s, r, func(m *streamread.StoredMsg) error {
		if got++; got == 10 {
			if err := s.Purge(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got >= 1000 || got < 10 {
		t.Errorf("read %d messages of 1,000, 990 of them purged after the 10th", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the read took %s to notice", d)
	}
}

// A following read of each subject's last message, then of new ones (what
// kv tail does by default), that loses its consumer before it has every
// last message, resumes with the last messages it has not handed over yet:
// no older message of a subject appears, and none twice.
func TestReadOrderedLastPerSubjectResumes(t *testing.T) {
	// Pulls of 16: most last messages are still on the server when the
	// consumer goes.
	js, s := startStream(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// 500 subjects, then new values for the odd ones: the even ones' last
	// messages come before the odd ones' old ones in the stream.
	publish := func(subject, value string) {
		m := nats.NewMsg(subject)
		m.Header.Set("Value", value)
		if _, err := js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 500; i++ {
		publish(fmt.Sprintf("orders.%d", i), "old")
	}
	for i := 1; i <= 500; i += 2 {
		publish(fmt.Sprintf("orders.%d", i), "new")
	}
	<-js.PublishAsyncComplete()
	if _, err := s.Info(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	r := streamread.OrderedRead{Label: `stream "ORDERS"`, Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, FilterSubjects: []string{"orders.>"}}, Follow: true, Buffer: 1}
	var deleted int
	err := streamread.ReadOrdered(ctx, js, s, r, func(m *streamread.StoredMsg) error {
		if v, dup := seen[m.Subject]; dup {
			return fmt.Errorf("%s twice (%s, then %s at %d)", m.Subject, v, m.Header.Get("Value"), m.Seq)
		}
		seen[m.Subject] = m.Header.Get("Value")
		if len(seen) == 100 {
			for name := range s.ConsumerNames(ctx).Name() {
				if s.DeleteConsumer(ctx, name) == nil {
					deleted++
				}
			}
		}
		if len(seen) == 500 {
			return streamread.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if deleted == 0 {
		t.Fatal("no consumer deleted")
	}
	for i := 1; i <= 500; i++ {
		want := "old"
		if i%2 == 1 {
			want = "new"
		}
		if got := seen[fmt.Sprintf("orders.%d", i)]; got != want {
			t.Errorf("orders.%d: %q, want %q", i, got, want)
		}
	}
}
