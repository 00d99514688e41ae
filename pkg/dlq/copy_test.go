package dlq

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/envelope/envelopetest"
)

// buildCopyReference is BuildCopy written plainly, a header set each: what
// the hand-written BuildCopy is held to.
func buildCopyReference(n Names, m *envelope.Message, a Advisory, sweptAt time.Time) *nats.Msg {
	h := envelope.CopyHeader(envelope.CmdDLQ, m.Header, 4+7)
	envelope.SetProvenance(h, m)
	h.Set(HeaderConsumer, a.Consumer)
	h.Set(HeaderReason, a.DeadReason())
	if a.Reason != "" {
		h.Set(HeaderTermReason, a.Reason)
	} else {
		h.Del(HeaderTermReason)
	}
	h.Set(HeaderDeliveries, strconv.FormatUint(a.Deliveries, 10))
	h.Set(HeaderSweptAt, sweptAt.UTC().Format(time.RFC3339Nano))
	h.Set(jetstream.MsgIDHeader, "dlq:"+m.Stream+":"+strconv.FormatUint(m.Seq, 10))
	h.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	return &nats.Msg{Subject: n.DLQSubject(m.Seq), Header: h, Data: m.Data}
}

// BuildCopy makes the same copy as its reference, whatever the headers
// the dead message has (those named like the ones BuildCopy sets too),
// the reason, the sequences and the times.
func TestBuildCopyMatchesReference(t *testing.T) {
	headers := []nats.Header{
		nil,
		{"Trace": {"t1", "t2"}},
		{"Nats-Msg-Id": {"orig"}, "Nats-Expected-Last-Subject-Sequence": {"3"}, "Nats-Rollup": {"sub"}},
		{HeaderTermReason: {"stale"}, HeaderReason: {"old"}, envelope.SourceStream: {"X"}, HeaderSweptAt: {"then"}},
		{"Jetctl-Orig-Nats-Msg-Id": {"older"}, "Nats-TTL": {"1h"}, "Empty": {""}},
		{"Jetctl-Orig-Nats-Msg-Id": {"older"}, "Nats-Msg-Id": {"redrive:DLQ_ORDERS:3"}, HeaderOriginalSeq: {"2"}},
	}
	times := []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.FixedZone("x", 3600)),
		time.Unix(0, 1_700_000_000_123_456_789),
	}
	seqs := []uint64{1, 42, 18446744073709551615}
	i := 0
	for _, stream := range []string{"ORDERS", "a-very-long-stream-name-that-does-not-fit-in-a-small-buffer-at-all-" + fmt.Sprint(make([]int, 40))} {
		n := DefaultNames(stream, "")
		for _, h := range headers {
			for _, seq := range seqs {
				for _, reason := range []string{"", "bad payload"} {
					i++
					src, swept := times[i%len(times)], times[(i+1)%len(times)]
					m := &envelope.Message{Stream: stream, Seq: seq, Subject: "orders." + strconv.Itoa(i), Time: src, Header: h, Data: []byte{byte(i), 0, 0xff}}
					a := Advisory{Type: []string{TypeTerminated, TypeMaxDeliver}[i%2], Stream: stream, Consumer: "c" + strconv.Itoa(i), StreamSeq: seq, Deliveries: uint64(i * 7), Reason: reason}
					got, want := BuildCopy(n, m, a, swept), buildCopyReference(n, m, a, swept)
					if got.Subject != want.Subject || string(got.Data) != string(want.Data) || !reflect.DeepEqual(got.Header, want.Header) {
						t.Fatalf("case %d: BuildCopy\n got %q %v\nwant %q %v", i, got.Subject, got.Header, want.Subject, want.Header)
					}
				}
			}
		}
	}
}

// A copy of a message without headers costs its map (four allocations),
// one string, one slice of values and the message: not one or two more
// per header.
func TestBuildCopyAllocations(t *testing.T) {
	n := DefaultNames("ORDERS", "")
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	m := &envelope.Message{Stream: "ORDERS", Seq: 42, Subject: "orders.paid", Time: ts, Data: []byte("x")}
	a := Advisory{Type: TypeMaxDeliver, Stream: "ORDERS", Consumer: "billing", StreamSeq: 42, Deliveries: 5}
	got := testing.AllocsPerRun(100, func() { BuildCopy(n, m, a, ts) })
	ref := testing.AllocsPerRun(100, func() { buildCopyReference(n, m, a, ts) })
	t.Logf("allocations per copy: %.0f (reference %.0f)", got, ref)
	if got > 8 {
		t.Errorf("%.0f allocations per copy (the reference makes %.0f)", got, ref)
	}
}

// A dead letter's copy gives every header the server acts on the fate of
// the table's dlq sweep column (docs/headers.md).
func TestBuildCopyFollowsHeaderTable(t *testing.T) {
	orig := envelopetest.EveryHeader()
	m := &envelope.Message{Stream: "ORDERS", Seq: 7, Subject: "ORDERS.new", Time: time.Now(), Header: orig, Data: []byte("x")}
	c := BuildCopy(Names{SubjectPrefix: "$DLQ.ORDERS"}, m, Advisory{Consumer: "w", Deliveries: 2}, time.Now())
	envelopetest.CheckFates(t, envelope.CmdDLQ, orig, c.Header)
}

// A redrive gives every header the server acts on the fate of the table's
// dlq redrive column (docs/headers.md): the dead letter's copy, built as
// a sweep builds it, then the redrive's header made of that copy.
func TestRedriveHeaderFollowsHeaderTable(t *testing.T) {
	orig := envelopetest.EveryHeader()
	m := &envelope.Message{Stream: "ORDERS", Seq: 7, Subject: "ORDERS.new", Time: time.Now(), Header: orig, Data: []byte("x")}
	c := BuildCopy(Names{SubjectPrefix: "$DLQ.ORDERS"}, m, Advisory{Consumer: "w", Deliveries: 2}, time.Now())
	got := RedriveHeader(c.Header, 0, "redrive:DLQ_ORDERS:1")
	envelopetest.CheckFates(t, envelope.CmdRedrive, orig, got)
	// The fates CheckFates leaves to the command: the increment (refuse:
	// the redrive refuses a counter's dead letter before sending) and the
	// TTL (ttl: the redrive sets what is left of it, redriveTTL) stay
	// aside in the header itself.
	for _, name := range []string{"Nats-Incr", "Nats-TTL"} {
		if len(got[name]) > 0 || !slices.Equal(got[envelope.OrigPrefix+name], orig[name]) {
			t.Errorf("%s: got %q and %s%s %q, want it under the second name only", name, got[name], envelope.OrigPrefix, name, got[envelope.OrigPrefix+name])
		}
	}
	if got.Get(HeaderRedrives) != "1" || got.Get("Nats-Msg-Id") != "redrive:DLQ_ORDERS:1" {
		t.Errorf("redrive count %q, id %q", got.Get(HeaderRedrives), got.Get("Nats-Msg-Id"))
	}
	for k := range got {
		if strings.HasPrefix(k, "Jetctl-Source-") || (strings.HasPrefix(k, "Jetctl-Dlq-") && k != HeaderRedrives && !strings.HasPrefix(k, "Jetctl-Dlq-Original-")) {
			t.Errorf("the redrive carries the DLQ's %s", k)
		}
	}
}
