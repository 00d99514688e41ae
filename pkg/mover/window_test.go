package mover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newStream(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := js.CreateStream(ctxFor(t), cfg); err != nil {
		t.Fatal(err)
	}
}

func openWindow(t *testing.T, js jetstream.JetStream, cfg Config) *Window {
	t.Helper()
	w, err := New(js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// move publishes msgs through w as a command does (a publish stage, a
// settle stage after it) and returns them settled, in order. between, if
// set, is called by the publish stage before the message of that index.
func move(ctx context.Context, w *Window, msgs []*nats.Msg, between func(i int)) []*Pub {
	in := make(chan *Pub)
	go func() {
		defer close(in)
		for i, m := range msgs {
			if between != nil {
				between(i)
			}
			in <- &Pub{Msg: m}
		}
	}()
	sent := Serial(in, 16, func(p *Pub) { _ = w.Publish(ctx, p) })
	settled := Serial(sent, 16, func(p *Pub) { w.Settle(ctx, p) })
	var out []*Pub
	for p := range settled {
		out = append(out, p)
	}
	return out
}

func numbered(n int, subject string, id bool) []*nats.Msg {
	msgs := make([]*nats.Msg, n)
	for i := range msgs {
		m := nats.NewMsg(subject)
		m.Data = []byte(fmt.Sprintf("message %d", i))
		if id {
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprint("id-", i))
		}
		msgs[i] = m
	}
	return msgs
}

func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	st, err := js.Stream(ctxFor(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().State.Msgs
}

// Every copy is stored, in the order published, and its outcome says
// where.
func TestWindowStoresInOrder(t *testing.T) {
	js := embeddedtest.JetStream(t)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	w := openWindow(t, js, Config{MaxPending: 64})
	got := move(ctxFor(t), w, numbered(2000, "s.x", false), nil)
	if len(got) != 2000 {
		t.Fatalf("%d settled", len(got))
	}
	for i, p := range got {
		if !p.Stored() || p.Err != nil || p.Stream != "S" || p.Seq != uint64(i+1) || p.Duplicate || p.Resent || p.Refused != nil {
			t.Fatalf("copy %d: %+v", i, p)
		}
	}
	if n := streamMsgs(t, js, "S"); n != 2000 {
		t.Fatalf("stream holds %d", n)
	}
}

// A copy the target already has (the same Nats-Msg-Id) settles as a
// duplicate, not as stored anew, and not as resent.
func TestWindowDuplicate(t *testing.T) {
	js := embeddedtest.JetStream(t)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	w := openWindow(t, js, Config{})
	msgs := numbered(1, "s.x", true)
	again := numbered(1, "s.x", true)
	got := move(ctxFor(t), w, append(msgs, again...), nil)
	if first := got[0]; !first.Stored() || first.Duplicate || first.Seq != 1 {
		t.Fatalf("first: %+v", first)
	}
	if dup := got[1]; !dup.Stored() || !dup.Duplicate || dup.Resent {
		t.Fatalf("repeat: %+v", dup)
	}
	if n := streamMsgs(t, js, "S"); n != 1 {
		t.Fatalf("stream holds %d", n)
	}
}

// forward answers publishes to in.> by storing them on s.> through the
// stream, unless drop says to leave a send unanswered (stored or not):
// an acknowledgement lost on the way, for real.
func forward(t *testing.T, js jetstream.JetStream, drop func(n int64) (store, answer bool)) {
	t.Helper()
	nc, err := nats.Connect(js.Conn().ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var n atomic.Int64
	if _, err := nc.Subscribe("in.>", func(m *nats.Msg) {
		store, answer := drop(n.Add(1))
		if !store {
			return
		}
		fwd := &nats.Msg{Subject: "s." + strings.TrimPrefix(m.Subject, "in."), Header: m.Header, Data: m.Data}
		reply, err := nc.RequestMsg(fwd, 10*time.Second)
		if err == nil && answer {
			_ = m.Respond(reply.Data)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// An acknowledgement that does not come within AckWait: the copy is
// published once more, synchronously. If the first send was stored, the
// second is a duplicate of this run's own copy (Resent); if it was not,
// the second stores it.
func TestWindowAckLostRetriesOnce(t *testing.T) {
	for _, firstStored := range []bool{true, false} {
		t.Run(fmt.Sprint("first stored ", firstStored), func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
			forward(t, js, func(n int64) (bool, bool) {
				if n == 1 {
					return firstStored, false
				}
				return true, true
			})
			w := openWindow(t, js, Config{AckWait: 200 * time.Millisecond})
			got := move(ctxFor(t), w, numbered(1, "in.x", true), nil)
			p := got[0]
			if !p.Stored() || !p.Resent || p.Duplicate != firstStored || p.Seq != 1 {
				t.Fatalf("outcome: %+v", p)
			}
			if n := streamMsgs(t, js, "S"); n != 1 {
				t.Fatalf("stream holds %d", n)
			}
		})
	}
}

// A copy too large for the stream's max_msg_size or the server's
// max_payload: Shrink's replacement is stored, and Refused says why;
// without Shrink the refusal is the outcome and nothing is stored.
func TestWindowTooLarge(t *testing.T) {
	js := embeddedtest.JetStream(t)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, MaxMsgSize: 512})
	shrink := func(m *nats.Msg, _ error) *nats.Msg {
		h := nats.Header{"Payload-Omitted": []string{fmt.Sprint(len(m.Data))}}
		return &nats.Msg{Subject: m.Subject, Header: h}
	}
	big := &nats.Msg{Subject: "s.big", Data: make([]byte, 1024)}
	huge := &nats.Msg{Subject: "s.huge", Data: make([]byte, js.Conn().MaxPayload()+1)}
	w := openWindow(t, js, Config{Shrink: shrink})
	got := move(ctxFor(t), w, []*nats.Msg{big, huge}, nil)
	var apiErr *jetstream.APIError
	if p := got[0]; !p.Stored() || !errors.As(p.Refused, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamMessageExceedsMaximum || p.Msg.Header.Get("Payload-Omitted") != "1024" {
		t.Fatalf("over max_msg_size: %+v", p)
	}
	if p := got[1]; !p.Stored() || !errors.Is(p.Refused, nats.ErrMaxPayload) || p.Msg.Header.Get("Payload-Omitted") == "" {
		t.Fatalf("over max_payload: %+v", p)
	}
	if n := streamMsgs(t, js, "S"); n != 2 {
		t.Fatalf("stream holds %d", n)
	}

	plain := openWindow(t, js, Config{})
	got = move(ctxFor(t), plain, []*nats.Msg{{Subject: "s.big", Data: make([]byte, 1024)}, {Subject: "s.huge", Data: make([]byte, js.Conn().MaxPayload()+1)}}, nil)
	if p := got[0]; p.Stored() || !TooLarge(p.Err) || p.Refused != nil {
		t.Fatalf("over max_msg_size without Shrink: %+v", p)
	}
	if p := got[1]; p.Stored() || !errors.Is(p.Err, nats.ErrMaxPayload) {
		t.Fatalf("over max_payload without Shrink: %+v", p)
	}
	if n := streamMsgs(t, js, "S"); n != 2 {
		t.Fatalf("stream holds %d", n)
	}
}

// A refusal that sending again does not cure is the outcome at once.
func TestWindowRefusal(t *testing.T) {
	js := embeddedtest.JetStream(t)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	w := openWindow(t, js, Config{})
	m := nats.NewMsg("s.x")
	m.Header.Set(jetstream.ExpectedLastSeqHeader, "7")
	got := move(ctxFor(t), w, []*nats.Msg{m}, nil)
	var apiErr *jetstream.APIError
	if p := got[0]; p.Stored() || p.Resent || !errors.As(p.Err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("outcome: %+v", p)
	}
}

// Settle stops waiting when its context ends (the copy's outcome is
// unknown), and Publish sends nothing once the window is full and its
// context ends.
func TestWindowCancel(t *testing.T) {
	js := embeddedtest.JetStream(t)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	forward(t, js, func(int64) (bool, bool) { return false, false })
	w := openWindow(t, js, Config{MaxPending: 1, AckWait: time.Hour})
	ctx := ctxFor(t)
	first := &Pub{Msg: nats.NewMsg("in.x")}
	if err := w.Publish(ctx, first); err != nil {
		t.Fatal(err)
	}
	full, cancelFull := context.WithCancel(ctx)
	cancelFull()
	second := &Pub{Msg: nats.NewMsg("in.x")}
	if err := w.Publish(full, second); !errors.Is(err, context.Canceled) {
		t.Fatalf("publish into a full window: %v", err)
	}
	w.Settle(ctx, second)
	if second.Stored() || second.Err == nil {
		t.Fatalf("unsent: %+v", second)
	}
	stop, cancel := context.WithCancel(ctx)
	cancel()
	w.Settle(stop, first)
	if first.Stored() || !errors.Is(first.Err, ErrUnconfirmed) || !errors.Is(first.Err, context.Canceled) {
		t.Fatalf("interrupted: %+v", first)
	}
	// Its place is free again.
	third := &Pub{Msg: nats.NewMsg("s.x")}
	if err := w.Publish(ctx, third); err != nil {
		t.Fatal(err)
	}
	w.Settle(ctx, third)
	if !third.Stored() {
		t.Fatalf("after the interruption: %+v", third)
	}
}

// The server restarts in the middle of a move: every copy ends stored,
// each once (the ones in flight are looked up or sent again, and the
// Nats-Msg-Id keeps a copy sent twice from being stored twice).
func TestWindowReconnect(t *testing.T) {
	c := embeddedtest.Start(t)
	var ups atomic.Int32
	js := embeddedtest.Reconnecting(t, c)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	var recovered atomic.Int32
	w := openWindow(t, js, Config{
		MaxPending: 512,
		Recover:    func(_ context.Context, open []*Pub) { recovered.Add(int32(len(open))) },
		OnConnection: func(up bool, _ string, _ time.Duration) {
			if up {
				ups.Add(1)
			}
		},
	})
	const total = 6000
	got := move(ctxFor(t), w, numbered(total, "s.x", true), func(i int) {
		if i == total/3 {
			if err := c.Stop(0); err != nil {
				t.Error(err)
			}
			if err := c.Restart(0); err != nil {
				t.Error(err)
			}
		}
	})
	resent := 0
	for i, p := range got {
		if !p.Stored() {
			t.Fatalf("copy %d: %+v", i, p)
		}
		// The stream held none of these ids before: a duplicate is a
		// send of this run stored before its acknowledgement was lost,
		// and its outcome must say so.
		if p.Duplicate && !p.Resent && !p.Found {
			t.Fatalf("copy %d: a duplicate of this run's own copy, not Resent: %+v", i, p)
		}
		if p.Resent {
			resent++
		}
	}
	if n := streamMsgs(t, js, "S"); n != total {
		t.Fatalf("stream holds %d of %d", n, total)
	}
	t.Logf("reconnected %d times, %d open publishes given to Recover, %d outcomes resent", ups.Load(), recovered.Load(), resent)
	if ups.Load() == 0 {
		t.Fatal("the connection never went down")
	}
}

// refuse answers every publish to in.> with a refusal that may pass (a
// 503 API error, as a stream without a leader gives) and counts them.
func refuse(t *testing.T, js jetstream.JetStream) *atomic.Int64 {
	t.Helper()
	nc, err := nats.Connect(js.Conn().ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var n atomic.Int64
	if _, err := nc.Subscribe("in.>", func(m *nats.Msg) {
		n.Add(1)
		_ = m.Respond([]byte(`{"error":{"code":503,"err_code":10008,"description":"stream is offline"}}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// A transient refusal is published once more, synchronously; with
// OwnRetries it is the outcome, and nothing is sent again.
func TestWindowOwnRetries(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprint("own retries ", own), func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			sends := refuse(t, js)
			w := openWindow(t, js, Config{OwnRetries: own})
			got := move(ctxFor(t), w, numbered(1, "in.x", true), nil)
			var apiErr *jetstream.APIError
			if p := got[0]; p.Stored() || p.Resent || !errors.As(p.Err, &apiErr) || apiErr.Code != 503 {
				t.Fatalf("outcome: %+v", p)
			}
			want := int64(2)
			if own {
				want = 1
			}
			if n := sends.Load(); n != want {
				t.Fatalf("%d sends, want %d", n, want)
			}
		})
	}
}

// Settled after its context ended, a refused publish is not sent again:
// the outcome is the refusal (or, if it was not in yet, ErrUnconfirmed).
func TestWindowSettleAfterCancelSendsNothing(t *testing.T) {
	js := embeddedtest.JetStream(t)
	sends := refuse(t, js)
	w := openWindow(t, js, Config{})
	p := &Pub{Msg: nats.NewMsg("in.x")}
	if err := w.Publish(ctxFor(t), p); err != nil {
		t.Fatal(err)
	}
	for sends.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the refusal on its way back
	stop, cancel := context.WithCancel(ctxFor(t))
	cancel()
	w.Settle(stop, p)
	var apiErr *jetstream.APIError
	if p.Stored() || !(errors.As(p.Err, &apiErr) || errors.Is(p.Err, ErrUnconfirmed)) {
		t.Fatalf("outcome: %+v", p)
	}
	if err := js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := sends.Load(); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
}

// An acknowledgement lost with the connection: after the reconnect the
// copy is sent again, the target answers "duplicate", and the outcome
// says that an earlier send of this run stored it (Resent), so that it
// is not taken for a copy the target had before.
func TestWindowResentAfterReconnect(t *testing.T) {
	c := embeddedtest.Start(t)
	js := embeddedtest.Reconnecting(t, c)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	forward(t, js, func(n int64) (bool, bool) { return true, n > 1 })
	var recovered atomic.Int32
	w := openWindow(t, js, Config{AckWait: time.Hour, Recover: func(_ context.Context, open []*Pub) { recovered.Add(int32(len(open))) }})
	ctx := ctxFor(t)
	p := &Pub{Msg: numbered(1, "in.x", true)[0]}
	if err := w.Publish(ctx, p); err != nil {
		t.Fatal(err)
	}
	for streamMsgs(t, js, "S") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := js.Conn().ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	w.Settle(ctx, p)
	if !p.Stored() || !p.Duplicate || !p.Resent || p.Seq != 1 || recovered.Load() != 1 {
		t.Fatalf("outcome: %+v (recovered %d)", p, recovered.Load())
	}
}

// The connection goes away while the synchronous try waits for its
// answer (a server restarting: the try went to the server that left, and
// no answer will come): the try does not count, and once the connection
// is back the copy is sent again. Here the try was stored before its
// answer was lost, so the send after the reconnect is a duplicate of this
// run's own copy (Resent). Before, the try waited out its timeout and the
// copy failed, one in a few runs of dlq's TestSweepAcknowledgementsOutliveARestart.
func TestWindowSyncTryLostWithTheConnection(t *testing.T) {
	c := embeddedtest.Start(t)
	js := embeddedtest.Reconnecting(t, c)
	newStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	var sends atomic.Int64
	forward(t, js, func(n int64) (bool, bool) {
		sends.Store(n)
		switch n {
		case 1: // the asynchronous send: lost, not stored
			return false, false
		case 2: // the synchronous try: stored, and the connection goes
			if err := js.Conn().ForceReconnect(); err != nil {
				t.Error(err)
			}
			return true, false
		}
		return true, true
	})
	w := openWindow(t, js, Config{AckWait: 200 * time.Millisecond})
	got := move(ctxFor(t), w, numbered(1, "in.x", true), nil)
	if p := got[0]; !p.Stored() || !p.Duplicate || !p.Resent || p.Seq != 1 {
		t.Fatalf("outcome: %+v", p)
	}
	if n := sends.Load(); n != 3 {
		t.Fatalf("%d sends, want 3 (asynchronous, lost try, try again)", n)
	}
	if n := streamMsgs(t, js, "S"); n != 1 {
		t.Fatalf("stream holds %d", n)
	}
}

// BenchmarkWindow moves b.N copies through a window whose target answers
// at once with a canned acknowledgement (a core NATS responder, no
// store): what is measured is the window's own cost per copy, with a
// publish and a settle stage as commands run them.
func BenchmarkWindow(b *testing.B) {
	js := embeddedtest.JetStream(b)
	nc, err := nats.Connect(js.Conn().ConnectedUrl())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	var seq atomic.Uint64
	if _, err := nc.Subscribe("in.>", func(m *nats.Msg) {
		_ = m.Respond(fmt.Appendf(nil, `{"stream":"S","seq":%d}`, seq.Add(1)))
	}); err != nil {
		b.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	w, err := New(js, Config{MaxPending: 1024})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Close)
	msgs := make([]*nats.Msg, b.N)
	for i := range msgs {
		msgs[i] = &nats.Msg{Subject: "in.x", Data: make([]byte, 128)}
	}
	ctx := context.Background()
	b.ResetTimer()
	got := move(ctx, w, msgs, nil)
	b.StopTimer()
	for i, p := range got {
		if !p.Stored() {
			b.Fatalf("copy %d: %+v", i, p)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
