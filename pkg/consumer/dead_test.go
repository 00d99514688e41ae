package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/events"
	"github.com/jetctl/jetctl/pkg/recorder"
)

// A watch counts the dead letters the recorder holds (dead.go) from one
// filtered read of it, and on the next polls reads only what came since:
// nothing when nothing did, one read when a dead letter was recorded.
// A dead letter whose message left the stream stops counting.
func TestWatchReadsTheRecorderOnlyForWhatIsNew(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := events.Record(ctx, js, events.RecordConfig{}); err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1})
	if err != nil {
		t.Fatal(err)
	}
	// term publishes n messages and terminates each: n dead letters,
	// recorded.
	recorded := 0
	term := func(n int) {
		t.Helper()
		for range n {
			if _, err := js.Publish(ctx, "orders.paid", []byte("bad")); err != nil {
				t.Fatal(err)
			}
		}
		b, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			if err := m.TermWithReason("bad"); err != nil {
				t.Fatal(err)
			}
		}
		recorded += n
		subject := advisoryPrefix + "MSG_TERMINATED.ORDERS.billing"
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			rec, err := js.Stream(ctx, recorder.Stream)
			if err != nil {
				t.Fatal(err)
			}
			si, err := rec.Info(ctx, jetstream.WithSubjectFilter(subject))
			if err == nil && si.State.Subjects[subject] == uint64(recorded) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the recorder holds %v, want %d on %s", si, recorded, subject)
			}
		}
	}
	reads := countRequests(t, ctx, js, "$JS.API.DIRECT.GET."+recorder.Stream)
	w := &Watcher{JS: js}
	poll := func() int64 {
		t.Helper()
		samples, err := w.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 1 || samples[0].State.DeadLetters == nil {
			t.Fatalf("samples %+v, want billing's with its dead letters", samples)
		}
		return *samples[0].State.DeadLetters
	}

	term(2)
	if n := poll(); n != 2 {
		t.Fatalf("first poll: %d dead letters, want 2", n)
	}
	if n := reads(); n != 1 {
		t.Errorf("the first poll read the recorder with %d requests, want 1", n)
	}
	if n := poll(); n != 2 {
		t.Errorf("second poll: %d dead letters, want 2", n)
	}
	if n := reads(); n != 1 {
		t.Errorf("nothing new: %d reads of the recorder in all, want still 1", n)
	}
	term(1)
	if n := poll(); n != 3 {
		t.Errorf("after one more: %d dead letters, want 3", n)
	}
	if n := reads(); n != 2 {
		t.Errorf("one more dead letter recorded: %d reads of the recorder in all, want 2", n)
	}
	if err := st.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := poll(); n != 2 {
		t.Errorf("its message deleted: %d dead letters, want 2", n)
	}
}

// countRequests counts the requests on subject, in order with this
// connection's own (a marker published after them, as countGets does).
func countRequests(t *testing.T, ctx context.Context, js jetstream.JetStream, subject string) func() int {
	t.Helper()
	nc, err := nats.Connect(js.Conn().ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const marker = "count-requests.marker"
	seen := make(chan *nats.Msg, 64)
	for _, s := range []string{subject, marker} {
		if _, err := nc.ChanSubscribe(s, seen); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n := 0
	return func() int {
		t.Helper()
		if err := js.Conn().Publish(marker, nil); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case m := <-seen:
				if m.Subject == marker {
					return n
				}
				n++
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}
}
