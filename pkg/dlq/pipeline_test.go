package dlq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
)

// A delete the server does not answer on the pipe is tried again, and its
// outcome is reported once: here the API (behind a prefix of its own)
// swallows the first request and passes on the rest.
func TestPipedDeleteRetriesUnanswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "jobs.run", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var seen atomic.Int32
	if _, err := nc.Subscribe("$FLAKY.API.>", func(m *nats.Msg) {
		if seen.Add(1) == 1 {
			return // unanswered
		}
		reply, err := nc.Request("$JS.API."+m.Subject[len("$FLAKY.API."):], m.Data, 5*time.Second)
		if err == nil {
			_ = m.Respond(reply.Data)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	api := &jsapi.Client{NC: nc, Prefix: "$FLAKY.API.", Timeout: 500 * time.Millisecond}
	p, err := newPiped(ctx, js, api)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	var calls atomic.Int32
	done := make(chan error, 2)
	p.delete("JOBS", 2, func(err error) {
		calls.Add(1)
		done <- err
	})
	if err := <-done; err != nil {
		t.Fatalf("delete: %v", err)
	}
	// Two, unless a busy machine made a retry time out too.
	if n := seen.Load(); n < 2 {
		t.Fatalf("%d requests reached the API, want the unanswered one and a retry", n)
	}
	if _, err := st.GetMsg(ctx, 2); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("seq 2 after the delete: %v", err)
	}

	// A get goes the same way; one nobody serves fails after its tries.
	got := make(chan error, 1)
	p.get("JOBS", jsapi.MsgGetRequest{Seq: 3}, func(m *envelope.Message, err error) {
		if err == nil && m.Seq != 3 {
			err = errors.New("wrong message")
		}
		got <- err
	})
	if err := <-got; err != nil {
		t.Fatalf("get: %v", err)
	}
	none := &piped{ctx: ctx, api: &jsapi.Client{NC: nc, Prefix: "$NOWHERE.API.", Timeout: 200 * time.Millisecond}, js: js}
	if none.pipe, err = none.api.NewPipe(); err != nil {
		t.Fatal(err)
	}
	defer none.close()
	none.delete("JOBS", 3, func(err error) { done <- err })
	// No responders, or on a busy machine a last try that ran out of time.
	if err := <-done; err == nil || !retry.Transient(err) {
		t.Fatalf("nobody serving: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the first delete's callback ran %d times", n)
	}
}
