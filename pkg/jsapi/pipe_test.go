package jsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

func newPipe(t *testing.T, c *jsapi.Client) *jsapi.Pipe {
	t.Helper()
	p, err := c.NewPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Every delete in flight at once, on one pipe: each is answered, the
// stream is empty, and deleting again or in a missing stream is what
// Client.MsgDelete says.
func TestPipeMsgDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for range n {
		if _, err := js.PublishAsync("jobs.run", []byte("x"), jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	p := newPipe(t, jsapi.New(js))
	errs := make(chan error, n)
	for seq := uint64(1); seq <= n; seq++ {
		p.MsgDelete("JOBS", seq, func(err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("%d messages left", info.State.Msgs)
	}
	p.MsgDelete("JOBS", 7, func(err error) { errs <- err })
	if err := <-errs; err != nil {
		t.Fatalf("already deleted: %v", err)
	}
	p.MsgDelete("MISSING", 1, func(err error) { errs <- err })
	if err := <-errs; err == nil || !strings.Contains(err.Error(), `stream "MISSING": delete seq 1`) {
		t.Fatalf("missing stream: %v", err)
	}
}

// A message deleted in a block that still holds others is answered
// "sequence N not found" (10043), not "no message found" (10057): the
// second try of a delete whose first try was applied (its answer lost
// to a restart) meets it, and it is no error either.
func TestMsgDeleteAgainInABlockStillInUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "jobs.run", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c := jsapi.New(js)
	p := newPipe(t, c)
	if err := c.MsgDelete(ctx, "JOBS", 2); err != nil {
		t.Fatal(err)
	}
	// The server's own answer to the second delete, for the record.
	var raw struct {
		Error *jetstream.APIError `json:"error"`
	}
	reply, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.DELETE.JOBS", []byte(`{"seq":2,"no_erase":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(reply.Data, &raw); err != nil || raw.Error == nil || raw.Error.ErrorCode != 10043 {
		t.Fatalf("the server's answer to deleting seq 2 again: %s, want error 10043", reply.Data)
	}
	if err := c.MsgDelete(ctx, "JOBS", 2); err != nil {
		t.Fatalf("Client.MsgDelete again: %v", err)
	}
	errs := make(chan error, 1)
	p.MsgDelete("JOBS", 2, func(err error) { errs <- err })
	if err := <-errs; err != nil {
		t.Fatalf("Pipe.MsgDelete again: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 || info.State.FirstSeq != 1 || info.State.LastSeq != 3 {
		t.Fatalf("stream state %+v, want seqs 1 and 3 kept", info.State)
	}
}

// A request nobody answers times out, once, even if its reply comes
// later; one nobody listens to has no responders; Close ends the rest.
func TestPipeTimeoutNoRespondersClose(t *testing.T) {
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	release := make(chan struct{})
	held := make(chan *nats.Msg, 1)
	if _, err := nc.Subscribe("held", func(m *nats.Msg) { held <- m }); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("echo", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		t.Fatal(err)
	}
	go func() {
		m := <-held
		<-release
		_ = m.Respond([]byte("late"))
	}()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p := newPipe(t, &jsapi.Client{NC: nc, Timeout: 200 * time.Millisecond})

	var calls atomic.Int32
	timedOut := make(chan error, 2)
	p.Request("held", nil, func(_ *nats.Msg, err error) {
		calls.Add(1)
		timedOut <- err
	})
	if err := <-timedOut; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered: %v", err)
	}
	// The late reply comes before the next one on the same inbox, and is
	// dropped.
	close(release)
	// (A machine too busy to echo within the timeout tries again.)
	echoed := make(chan string, 1)
	for try := 0; ; try++ {
		p.Request("echo", []byte("hi"), func(m *nats.Msg, err error) {
			if err != nil {
				echoed <- err.Error()
				return
			}
			echoed <- string(m.Data)
		})
		got := <-echoed
		if got == "hi" {
			break
		}
		if try == 10 {
			t.Fatalf("echo: %q", got)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the timed out request's callback ran %d times", n)
	}

	none := make(chan error, 1)
	p.Request("nobody.listens", nil, func(_ *nats.Msg, err error) { none <- err })
	if err := <-none; !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("no responders: %v", err)
	}

	slow := newPipe(t, &jsapi.Client{NC: nc, Timeout: time.Hour})
	if _, err := nc.Subscribe("never", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	slow.Request("never", nil, func(_ *nats.Msg, err error) { closed <- err })
	slow.Close()
	if err := <-closed; !errors.Is(err, context.Canceled) {
		t.Fatalf("closed: %v", err)
	}
}
