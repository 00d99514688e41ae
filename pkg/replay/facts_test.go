package replay

// What the server does that replay --to's TTL, marker and counter handling
// depends on (docs/replay.md, "Headers the server acts on"). Each test
// fails if a server release changes the behaviour; the issue 33 reading it
// confirms or disproves is named above it. The headers' own facts are in
// pkg/envelope/facts_test.go.

import (
	"context"
	"errors"
	"slices"
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

func (f *factServer) stream(cfg jetstream.StreamConfig) jetstream.Stream {
	f.t.Helper()
	s, err := f.js.CreateStream(f.ctx, cfg)
	if err != nil {
		f.t.Fatalf("create stream %s: %v", cfg.Name, err)
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

func (f *factServer) get(s jetstream.Stream, seq uint64) *jetstream.RawStreamMsg {
	f.t.Helper()
	m, err := s.GetMsg(f.ctx, seq)
	if err != nil {
		f.t.Fatalf("get %d: %v", seq, err)
	}
	return m
}

// until polls cond every 20ms until it holds, failing after 30s.
func (f *factServer) until(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("not after 30s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *factServer) gone(s jetstream.Stream, seq uint64) bool {
	_, err := s.GetMsg(f.ctx, seq)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// copyHeader is the header a copy made before issue 33 carried: the
// original's, with the headers the server acts on renamed
// (envelope.CopyHeader), and the copy's own Nats-Msg-Id.
func copyHeader(h nats.Header) nats.Header {
	out := envelope.CopyHeader(envelope.CmdRepublish, h, 1)
	out.Set(jetstream.MsgIDHeader, "replay:X:1:copy")
	return out
}

func apiCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode
	}
	return 0
}

// Issue 33: "a replay into a counter stream is refused (Nats-Incr
// renamed)". Confirmed: a counter stream stores only increments (10169),
// and a copy that kept Nats-Incr would add to the total again. So replay
// --to refuses a counter stream as its target before the first copy.
func TestFactCounterRefusesCopies(t *testing.T) {
	f := newFactServer(t)
	s := f.stream(jetstream.StreamConfig{Name: "C", Subjects: []string{"C.>"}, AllowMsgCounter: true})
	ack := f.mustPublish("C.a", nats.Header{"Nats-Incr": {"2"}}, "")
	orig := f.get(s, ack.Sequence)
	if _, err := f.publish("C.copy.a", copyHeader(orig.Header), string(orig.Data)); apiCode(err) != 10169 {
		t.Fatalf("copy with Nats-Incr renamed: %v, want error 10169", err)
	}
	// The original's headers as they are, without its payload (the
	// server's total, which it refuses on a publish: 10170): the increment
	// is applied again.
	if _, err := f.publish("C.a", orig.Header, string(orig.Data)); apiCode(err) != 10170 {
		t.Fatalf("copy with Nats-Incr and the total as payload: %v, want error 10170", err)
	}
	f.mustPublish("C.a", orig.Header, "")
	last, err := s.GetLastMsgForSubject(f.ctx, "C.a")
	if err != nil {
		t.Fatal(err)
	}
	if string(last.Data) != `{"val":"4"}` {
		t.Fatalf("C.a after the copy kept Nats-Incr: %s, want the increment applied twice", last.Data)
	}
}

// Issue 33: "copies rename Nats-TTL, so copies of TTL'd messages never
// expire". Confirmed: a copy carrying the TTL as Jetctl-Orig-Nats-TTL
// stays after the original is gone. Hence --ttl remaining by default.
func TestFactRenamedTTLNeverExpires(t *testing.T) {
	f := newFactServer(t)
	s := f.stream(jetstream.StreamConfig{Name: "T", Subjects: []string{"T.>"}, AllowMsgTTL: true})
	ack := f.mustPublish("T.a", nats.Header{"Nats-TTL": {"1s"}}, "short")
	orig := f.get(s, ack.Sequence)
	cp := f.mustPublish("T.copy.a", copyHeader(orig.Header), "short")
	f.until("the original expired", func() bool { return f.gone(s, ack.Sequence) })
	if f.gone(s, cp.Sequence) {
		t.Fatal("the copy with Jetctl-Orig-Nats-TTL expired too")
	}
}

// What --ttl remaining relies on for a stream that sources another: a
// stream without allow_msg_ttl stores a sourced message with its Nats-TTL
// and never removes it, so a range can hold messages whose TTL has
// passed (they are skipped and counted), and copies of such a stream may
// carry a TTL although it does not allow them.
func TestFactSourcedTTLKeptWithoutAllowMsgTTL(t *testing.T) {
	f := newFactServer(t)
	origin := f.stream(jetstream.StreamConfig{Name: "S", Subjects: []string{"S.>"}, AllowMsgTTL: true})
	hold := f.stream(jetstream.StreamConfig{Name: "HOLD", Sources: []*jetstream.StreamSource{{Name: "S"}}})
	ack := f.mustPublish("S.a", nats.Header{"Nats-TTL": {"1s"}}, "short")
	f.until("HOLD sourced S.a", func() bool { _, err := hold.GetMsg(f.ctx, 1); return err == nil })
	f.until("S.a expired", func() bool { return f.gone(origin, ack.Sequence) })
	m := f.get(hold, 1)
	if m.Header.Get("Nats-TTL") != "1s" {
		t.Fatalf("sourced copy's headers %v, want Nats-TTL: 1s", m.Header)
	}
	if st, err := envelope.TTLAt(m.Header, m.Time, time.Now()); err != nil || !st.Expired {
		t.Fatalf("TTL state %+v, %v: want expired", st, err)
	}
}

// What --markers relies on: the marker the server writes when a message
// ages out (subject_delete_marker_ttl) carries Nats-Marker-Reason (which
// envelope.IsMarker reads), its own Nats-TTL and Nats-Rollup: sub, which
// a kept marker's copy carries renamed, as every copy does: it reads as
// the delete without purging the target's earlier messages on its subject.
func TestFactServerMarkerHeaders(t *testing.T) {
	f := newFactServer(t)
	marker := f.serverMarker()
	h := marker.Header
	if !envelope.IsMarker(h) || h.Get("Nats-Marker-Reason") != "MaxAge" || h.Get("Nats-TTL") != "1s" || h.Get("Nats-Rollup") != "sub" {
		t.Fatalf("server marker's headers %v, want Nats-Marker-Reason: MaxAge, Nats-TTL: 1s, Nats-Rollup: sub", h)
	}
	if len(marker.Data) != 0 {
		t.Fatalf("server marker's payload %q, want none", marker.Data)
	}
}

// serverMarker makes the server write a subject delete marker (a message
// aged out of a stream with subject_delete_marker_ttl) and returns it.
func (f *factServer) serverMarker() *jetstream.RawStreamMsg {
	f.t.Helper()
	s := f.stream(jetstream.StreamConfig{Name: "M", Subjects: []string{"M.>"}, AllowMsgTTL: true, MaxAge: time.Second, SubjectDeleteMarkerTTL: time.Second})
	f.mustPublish("M.a", nil, "ages out")
	var marker *jetstream.RawStreamMsg
	f.until("the server wrote a marker on M.a", func() bool {
		m, err := s.GetLastMsgForSubject(f.ctx, "M.a")
		if err == nil && m.Header.Get("Nats-Marker-Reason") != "" {
			marker = m
		}
		return marker != nil
	})
	return marker
}

// Issue 33: "replay --to copies markers as plain empty messages, so on a
// KV target deleted keys come back empty". Disproved for the copy: it kept
// Nats-Marker-Reason under its own name (the server stores a client's as
// it is), and nats.go's KV reads it as the delete it is. A copy with the
// header renamed would be the plain empty value. What is true: on any other
// target a marker's copy is an empty message to a reader that does not
// look at that header, which is why --markers skips them there by default.
func TestFactKVReadsCopiedMarkerAsDelete(t *testing.T) {
	f := newFactServer(t)
	marker := f.serverMarker()
	kv, err := f.js.CreateKeyValue(f.ctx, jetstream.KeyValueConfig{Bucket: "B", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(f.ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	renamed := copyHeader(marker.Header)
	renamed[envelope.OrigPrefix+"Nats-Marker-Reason"] = renamed["Nats-Marker-Reason"]
	delete(renamed, "Nats-Marker-Reason")
	f.mustPublish("$KV.B.k", renamed, "")
	if e, err := kv.Get(f.ctx, "k"); err != nil || e.Operation() != jetstream.KeyValuePut || len(e.Value()) != 0 {
		t.Fatalf("marker copy with the reason renamed: %v %v, want an empty PUT", e, err)
	}
	if _, err := kv.PutString(f.ctx, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	kept := copyHeader(marker.Header)
	kept.Set(jetstream.MsgIDHeader, "replay:X:2:copy")
	f.mustPublish("$KV.B.k", kept, "")
	if _, err := kv.Get(f.ctx, "k"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get after the marker's copy: %v, want the key deleted", err)
	}
	hist, err := kv.History(f.ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if op := hist[len(hist)-1].Operation(); op != jetstream.KeyValuePurge {
		t.Fatalf("history's last operation %v, want %v (MaxAge)", op, jetstream.KeyValuePurge)
	}
}

// What the target check relies on: the stream list's subject filter
// returns the streams whose subjects overlap it, wildcards on either side,
// so one request finds every stream a copy may go to.
func TestFactStreamListSubjectOverlaps(t *testing.T) {
	f := newFactServer(t)
	for name, subject := range map[string]string{"A": "copy.orders.paid", "B": "copy.*.created", "C": "other.>", "D": "copy.*"} {
		f.stream(jetstream.StreamConfig{Name: name, Subjects: []string{subject}})
	}
	var got []string
	list := f.js.ListStreams(f.ctx, jetstream.WithStreamListSubject("copy.orders.>"))
	for info := range list.Info() {
		got = append(got, info.Config.Name)
	}
	if err := list.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("streams for copy.orders.>: %v, want [A B]", got)
	}
}
