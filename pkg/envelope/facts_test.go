package envelope_test

// What the 2.11–2.15 server does with the headers in envelope.HeaderTable
// (docs/headers.md). Each row's fact tests are named in the table; if a
// server changes one of these, its test fails and the row needs a look.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
)

type factServer struct {
	t   *testing.T
	ctx context.Context
	js  jetstream.JetStream
}

func newFactServer(t *testing.T) *factServer {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &factServer{t: t, ctx: ctx, js: embeddedtest.JetStream(t)}
}

func (f *factServer) stream(name string, edit func(*jetstream.StreamConfig)) jetstream.Stream {
	f.t.Helper()
	cfg := jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}
	if edit != nil {
		edit(&cfg)
	}
	s, err := f.js.CreateStream(f.ctx, cfg)
	if err != nil {
		f.t.Fatalf("create stream %s: %v", name, err)
	}
	return s
}

func (f *factServer) publish(subject string, h nats.Header, data string) (*jetstream.PubAck, error) {
	return f.js.PublishMsg(f.ctx, &nats.Msg{Subject: subject, Header: h, Data: []byte(data)})
}

func (f *factServer) mustPublish(subject string, h nats.Header, data string) *jetstream.PubAck {
	f.t.Helper()
	ack, err := f.publish(subject, h, data)
	if err != nil {
		f.t.Fatalf("publish %s %v: %v", subject, h, err)
	}
	return ack
}

// refused asserts that a publish is refused with the API error code.
func (f *factServer) refused(code jetstream.ErrorCode, subject string, h nats.Header) {
	f.t.Helper()
	_, err := f.publish(subject, h, "x")
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != code {
		f.t.Fatalf("publish %s %v: got %v, want error %d", subject, h, err, code)
	}
}

func (f *factServer) msgs(s jetstream.Stream) uint64 {
	f.t.Helper()
	si, err := s.Info(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return si.State.Msgs
}

// stored is the header the server stored for seq.
func (f *factServer) stored(s jetstream.Stream, seq uint64) nats.Header {
	f.t.Helper()
	m, err := s.GetMsg(f.ctx, seq)
	if err != nil {
		f.t.Fatalf("get %d: %v", seq, err)
	}
	return m.Header
}

func TestFactMsgIDStoredVerbatim(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("D", nil)
	ack := f.mustPublish("D.a", nats.Header{"Nats-Msg-Id": {"one"}}, "1")
	if dup := f.mustPublish("D.a", nats.Header{"Nats-Msg-Id": {"one"}}, "2"); !dup.Duplicate {
		t.Fatal("second publish with the same Nats-Msg-Id was not a duplicate")
	}
	if got := f.stored(s, ack.Sequence).Get("Nats-Msg-Id"); got != "one" {
		t.Fatalf("stored Nats-Msg-Id %q", got)
	}
	if n := f.msgs(s); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}

func TestFactExpectedHeadersStoredVerbatim(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("E", nil)
	ack := f.mustPublish("E.a", nats.Header{"Nats-Expected-Last-Subject-Sequence": {"0"}, "Nats-Expected-Stream": {"E"}}, "1")
	h := f.stored(s, ack.Sequence)
	if h.Get("Nats-Expected-Last-Subject-Sequence") != "0" || h.Get("Nats-Expected-Stream") != "E" {
		t.Fatalf("stored header %v", h)
	}
	// The same headers again no longer hold: a copy that kept them would
	// be refused.
	f.refused(jetstream.JSErrCodeStreamWrongLastSequence, "E.a", nats.Header{"Nats-Expected-Last-Subject-Sequence": {"0"}})
}

func TestFactRollupPurgesSubject(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("R", func(c *jetstream.StreamConfig) { c.AllowRollup = true })
	f.mustPublish("R.a", nil, "1")
	f.mustPublish("R.a", nil, "2")
	f.mustPublish("R.a", nats.Header{envelope.OrigPrefix + "Nats-Rollup": {"sub"}}, "3")
	if n := f.msgs(s); n != 3 {
		t.Fatalf("Jetctl-Orig-Nats-Rollup: %d messages, want 3", n)
	}
	f.mustPublish("R.b", nil, "other subject")
	f.mustPublish("R.a", nats.Header{"Nats-Rollup": {"sub"}}, "4")
	if n := f.msgs(s); n != 2 {
		t.Fatalf("Nats-Rollup: sub left %d messages, want 2 (the rollup and R.b)", n)
	}
}

func TestFactTTLExpiresFromStoredTime(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("T", func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true })
	ack := f.mustPublish("T.a", nats.Header{"Nats-TTL": {"1s"}}, "short")
	f.mustPublish("T.b", nats.Header{"Nats-TTL": {"never"}}, "forever")
	m, err := s.GetMsg(f.ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get("Nats-TTL") != "1s" {
		t.Fatalf("stored Nats-TTL %q", m.Header.Get("Nats-TTL"))
	}
	// The server removes it, and envelope.TTLAt reads the same deadline
	// from the stored time (the server's expiry is the stored time plus
	// the TTL: server/stream.go, processJetStreamMsg and the store's ttl
	// index).
	st, err := envelope.TTLAt(m.Header, m.Time, m.Time)
	if err != nil || !st.Deadline.Equal(m.Time.Add(time.Second)) {
		t.Fatalf("TTLAt %+v %v", st, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.GetMsg(f.ctx, ack.Sequence); errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a message with Nats-TTL: 1s is still there after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := f.msgs(s); n != 1 {
		t.Fatalf("%d messages, want the never-expiring one", n)
	}
}

func TestFactTTLRefusedUnderOneSecond(t *testing.T) {
	f := newFactServer(t)
	f.stream("T", func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true })
	f.refused(10165, "T.a", nats.Header{"Nats-TTL": {"500ms"}})
}

func TestFactTTLRefusedWithoutAllowMsgTTL(t *testing.T) {
	f := newFactServer(t)
	f.stream("P", nil)
	f.refused(10166, "P.a", nats.Header{"Nats-TTL": {"1h"}})
	f.mustPublish("P.a", nats.Header{envelope.OrigPrefix + "Nats-TTL": {"1h"}}, "renamed")
}

func TestFactMarkerReasonStoredVerbatim(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("M", nil)
	ack := f.mustPublish("M.a", nats.Header{"Nats-Marker-Reason": {"MaxAge"}}, "")
	if got := f.stored(s, ack.Sequence).Get("Nats-Marker-Reason"); got != "MaxAge" {
		t.Fatalf("stored Nats-Marker-Reason %q", got)
	}
}

func TestFactCounterNeedsIncr(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("C", func(c *jetstream.StreamConfig) { c.AllowMsgCounter = true })
	f.refused(10169, "C.a", nil)
	f.refused(10169, "C.a", nats.Header{envelope.OrigPrefix + "Nats-Incr": {"1"}})
	f.mustPublish("C.a", nats.Header{"Nats-Incr": {"2"}}, "")
	ack := f.mustPublish("C.a", nats.Header{"Nats-Incr": {"3"}}, "")
	m, err := s.GetMsg(f.ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != `{"val":"5"}` {
		t.Fatalf("counter payload %s", m.Data)
	}
	// On a stream that is not a counter, Nats-Incr is refused.
	f.stream("P", nil)
	_, err = f.publish("P.a", nats.Header{"Nats-Incr": {"1"}}, "")
	if err == nil {
		t.Fatal("Nats-Incr on a plain stream was stored")
	}
}

func TestFactCounterSourcesStoredVerbatim(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("C", func(c *jetstream.StreamConfig) { c.AllowMsgCounter = true })
	ack := f.mustPublish("C.a", nats.Header{"Nats-Incr": {"1"}, "Nats-Counter-Sources": {`{"X":{"X.a":"7"}}`}}, "")
	if got := f.stored(s, ack.Sequence).Get("Nats-Counter-Sources"); got != `{"X":{"X.a":"7"}}` {
		t.Fatalf("stored Nats-Counter-Sources %q", got)
	}
}

func TestFactLoneBatchMessageStoresNothing(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("B", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = true })
	// The first message of a batch is acknowledged only at its commit; a
	// batch never committed stores nothing. A plain publish waits for an
	// ack that never comes, so send it without waiting.
	nc := f.js.Conn()
	if err := nc.PublishMsg(&nats.Msg{Subject: "B.a", Header: nats.Header{"Nats-Batch-Id": {"b1"}, "Nats-Batch-Sequence": {"1"}}, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	f.mustPublish("B.b", nil, "after")
	if n := f.msgs(s); n != 1 {
		t.Fatalf("%d messages, want only the plain one", n)
	}
}

func TestFactScheduleNextPurgePurgesSchedule(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("S", func(c *jetstream.StreamConfig) { c.AllowMsgSchedules = true })
	ack := f.mustPublish("S.sched", nats.Header{"Nats-Schedule": {"@every 1h"}, "Nats-Schedule-Target": {"S.out"}}, "tick")
	// The server stores a schedule with its own Nats-Rollup: sub.
	if got := f.stored(s, ack.Sequence).Get("Nats-Rollup"); got != "sub" {
		t.Fatalf("stored schedule's Nats-Rollup %q, want sub", got)
	}
	// A message as the schedule generates it, published again: the server
	// purges the schedule.
	f.mustPublish("S.out", nats.Header{"Nats-Scheduler": {"S.sched"}, "Nats-Schedule-Next": {"purge"}}, "tick")
	if _, err := s.GetMsg(f.ctx, ack.Sequence); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("schedule still stored after Nats-Schedule-Next: purge: %v", err)
	}
}

func TestFactSchedulerAloneRefused(t *testing.T) {
	f := newFactServer(t)
	f.stream("S", func(c *jetstream.StreamConfig) { c.AllowMsgSchedules = true })
	f.refused(10212, "S.a", nats.Header{"Nats-Scheduler": {"S.sched"}})
}

func TestFactStreamSourceRefusedOnPublish(t *testing.T) {
	f := newFactServer(t)
	f.stream("O", nil)
	s := f.stream("DS", func(c *jetstream.StreamConfig) {
		c.Subjects = nil
		c.Sources = []*jetstream.StreamSource{{Name: "O"}}
	})
	f.mustPublish("O.a", nil, "x")
	var h nats.Header
	deadline := time.Now().Add(30 * time.Second)
	for h == nil {
		if m, err := s.GetMsg(f.ctx, 1); err == nil {
			h = m.Header
		} else if time.Now().After(deadline) {
			t.Fatal("sourced message not there after 30s")
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	src := h.Get("Nats-Stream-Source")
	if src == "" {
		t.Fatalf("sourced message without Nats-Stream-Source: %v", h)
	}
	f.stream("P", nil)
	f.refused(10227, "P.a", nats.Header{"Nats-Stream-Source": {src}})
}

func TestFactTraceOnlyStoresNothing(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("TR", nil)
	nc := f.js.Conn()
	// A traced-only publish is acknowledged by a trace, not a pub ack.
	if err := nc.PublishMsg(&nats.Msg{Subject: "TR.a", Header: nats.Header{"Nats-Trace-Dest": {"trace.out"}, "Nats-Trace-Only": {"true"}}, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	f.mustPublish("TR.b", nil, "after")
	if n := f.msgs(s); n != 1 {
		t.Fatalf("%d messages, want only the untraced one", n)
	}
}

func TestFactRequiredAPILevelNotCheckedOnPublish(t *testing.T) {
	f := newFactServer(t)
	s := f.stream("L", nil)
	ack := f.mustPublish("L.a", nats.Header{"Nats-Required-Api-Level": {"99"}}, "x")
	if got := f.stored(s, ack.Sequence).Get("Nats-Required-Api-Level"); got != "99" {
		t.Fatalf("stored Nats-Required-Api-Level %q", got)
	}
}
