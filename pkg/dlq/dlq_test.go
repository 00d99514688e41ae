package dlq

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
)

func TestParseAdvisory(t *testing.T) {
	max := `{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"a","timestamp":"2026-01-02T03:04:05Z","stream":"ORDERS","consumer":"billing","stream_seq":42,"deliveries":5}`
	a, err := ParseAdvisory([]byte(max))
	if err != nil {
		t.Fatal(err)
	}
	if a.DeadReason() != ReasonMaxDeliver || a.Stream != "ORDERS" || a.StreamSeq != 42 || a.Deliveries != 5 || a.ServerCaused() {
		t.Errorf("max_deliver advisory read as %+v", a)
	}
	term := `{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"billing","stream_seq":7,"consumer_seq":9,"deliveries":1,"reason":"bad payload"}`
	a, err = ParseAdvisory([]byte(term))
	if err != nil || a.DeadReason() != ReasonTerminated || a.Reason != "bad payload" || a.ServerCaused() {
		t.Errorf("terminated advisory read as %+v, %v", a, err)
	}
	for _, bad := range []string{`not json`, `{"type":"io.nats.jetstream.advisory.v1.nak","stream":"S","stream_seq":1}`, `{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"S"}`} {
		if _, err := ParseAdvisory([]byte(bad)); err == nil {
			t.Errorf("ParseAdvisory(%s) did not fail", bad)
		}
	}
}

func TestServerCaused(t *testing.T) {
	for reason, want := range map[string]bool{
		"Message deleted by stream limits":   true,
		"Unacknowledged message was deleted": true,
		"bad payload":                        false,
		"":                                   false,
	} {
		a := Advisory{Type: TypeTerminated, Reason: reason}
		if a.ServerCaused() != want {
			t.Errorf("ServerCaused(%q) = %v", reason, !want)
		}
	}
	if (Advisory{Type: TypeMaxDeliver, Reason: "Message deleted by stream limits"}).ServerCaused() {
		t.Error("a max_deliver advisory is never server-caused")
	}
}

func TestBuildCopyAndRedriveHeader(t *testing.T) {
	n := DefaultNames("ORDERS", "")
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	m := &envelope.Message{Stream: "ORDERS", Seq: 42, Subject: "orders.paid", Time: ts,
		Header: nats.Header{"Nats-Msg-Id": {"orig"}, "Nats-Expected-Last-Sequence": {"41"}, "Nats-TTL": {"1h"}, "Trace": {"t1"}},
		Data:   []byte{0, 1, 2, 0xff}}
	a := Advisory{Type: TypeTerminated, Stream: "ORDERS", Consumer: "billing", StreamSeq: 42, Deliveries: 3, Reason: "bad"}
	c := BuildCopy(n, m, a, ts)
	if c.Subject != "dlq.ORDERS.42" || string(c.Data) != string(m.Data) {
		t.Errorf("copy subject %q data %x", c.Subject, c.Data)
	}
	want := map[string]string{
		"Nats-Msg-Id": "dlq:ORDERS:42", "Nats-Expected-Last-Subject-Sequence": "0",
		"Jetctl-Orig-Nats-Msg-Id": "orig", "Jetctl-Orig-Nats-Expected-Last-Sequence": "41", "Jetctl-Orig-Nats-TTL": "1h",
		"Trace": "t1", "Jetctl-Source-Stream": "ORDERS", "Jetctl-Source-Seq": "42", "Jetctl-Source-Subject": "orders.paid",
		"Jetctl-Source-Time": "2026-01-02T03:04:05.000000006Z", "Jetctl-Dlq-Consumer": "billing", "Jetctl-Dlq-Reason": "terminated",
		"Jetctl-Dlq-Term-Reason": "bad", "Jetctl-Dlq-Deliveries": "3", "Jetctl-Dlq-Swept-At": "2026-01-02T03:04:05.000000006Z",
	}
	got := map[string]string{}
	for k := range c.Header {
		got[k] = c.Header.Get(k)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("copy headers\n got %v\nwant %v", got, want)
	}
	if _, ok := c.Header["Nats-TTL"]; ok {
		t.Error("the copy must not carry Nats-TTL under its own name")
	}

	r := RedriveHeader(c.Header, 1, "redrive:DLQ_ORDERS:7")
	got = map[string]string{}
	for k := range r {
		got[k] = r.Get(k)
	}
	want = map[string]string{
		"Nats-Msg-Id": "redrive:DLQ_ORDERS:7", "Jetctl-Orig-Nats-Msg-Id": "orig",
		"Jetctl-Orig-Nats-Expected-Last-Sequence": "41", "Jetctl-Orig-Nats-TTL": "1h", "Trace": "t1", "Jetctl-Dlq-Redrives": "2",
		"Jetctl-Dlq-Original-Stream": "ORDERS", "Jetctl-Dlq-Original-Seq": "42", "Jetctl-Dlq-Original-Subject": "orders.paid",
		"Jetctl-Dlq-Original-Time": "2026-01-02T03:04:05.000000006Z",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("redrive headers\n got %v\nwant %v", got, want)
	}
}

func TestEntryFrom(t *testing.T) {
	n := DefaultNames("ORDERS", "")
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := BuildCopy(n, &envelope.Message{Stream: "ORDERS", Seq: 9, Subject: "orders.paid", Time: ts, Data: []byte(`{"a":1}`)},
		Advisory{Type: TypeMaxDeliver, Stream: "ORDERS", Consumer: "billing", StreamSeq: 9, Deliveries: 5}, ts)
	e := EntryFrom(&envelope.Message{Stream: "DLQ_ORDERS", Seq: 3, Subject: c.Subject, Header: c.Header, Data: c.Data})
	if e.SourceStream != "ORDERS" || e.SourceSeq != 9 || e.Consumer != "billing" || e.Reason != ReasonMaxDeliver ||
		e.Deliveries != 5 || !e.SweptAt.Equal(ts) || e.Subject != "orders.paid" || e.Size != 7 {
		t.Errorf("entry %+v", e)
	}
	g := e.Generic()
	if a := g["data"].(map[string]any)["a"]; fmt.Sprint(a) != "1" || g["dlq_seq"] != 3 {
		t.Errorf("generic %v (%T)", g, g["data"].(map[string]any)["a"])
	}
}

func TestSubjects(t *testing.T) {
	if got := AdvisorySubjects("S", nil); !reflect.DeepEqual(got, []string{
		"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.*", "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.S.*"}) {
		t.Errorf("AdvisorySubjects = %v", got)
	}
	merged := mergeSubjects(AdvisorySubjects("S", []string{"a"}), AdvisorySubjects("S", nil))
	if !reflect.DeepEqual(merged, AdvisorySubjects("S", nil)) {
		t.Errorf("a wildcard should replace per-consumer subjects: %v", merged)
	}
}

// A message redriven and dead again, twice: every DLQ copy says where it
// was first stored (stream, sequence, subject, time) and keeps the
// application's Nats-Msg-Id, whatever the order in which the headers are
// copied; its Jetctl-Source-* are the redriven message that died, whose
// sequence names its DLQ subject and whose time its TTL counts from.
func TestOriginalSurvivesRedrivesAndDeaths(t *testing.T) {
	n := DefaultNames("ORDERS", "")
	first := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for try := range 50 { // map order varies from run to run
		m := &envelope.Message{Stream: "ORDERS", Seq: 5, Subject: "orders.paid", Time: first,
			Header: nats.Header{"Nats-Msg-Id": {"app-5"}, "Trace": {"t"}}, Data: []byte("poison")}
		var entry Entry
		for round := range 3 {
			a := Advisory{Type: TypeMaxDeliver, Stream: "ORDERS", Consumer: "billing", StreamSeq: m.Seq, Deliveries: 3}
			c := BuildCopy(n, m, a, m.Time.Add(time.Minute))
			entry = EntryFrom(&envelope.Message{Stream: n.DLQ, Seq: uint64(round + 1), Subject: c.Subject, Header: c.Header, Data: c.Data})
			if entry.OriginalStream != "ORDERS" || entry.OriginalSeq != 5 || entry.OriginalSubject != "orders.paid" || !entry.OriginalTime.Equal(first) {
				t.Fatalf("try %d, death %d: original %s %d %s %v, want ORDERS 5 orders.paid %v", try, round+1,
					entry.OriginalStream, entry.OriginalSeq, entry.OriginalSubject, entry.OriginalTime, first)
			}
			if got := c.Header.Get("Jetctl-Orig-Nats-Msg-Id"); got != "app-5" {
				t.Fatalf("try %d, death %d: Jetctl-Orig-Nats-Msg-Id %q, want the application's app-5", try, round+1, got)
			}
			if entry.SourceSeq != m.Seq || c.Subject != n.DLQSubject(m.Seq) || entry.Redriven() != (round > 0) {
				t.Fatalf("try %d, death %d: source seq %d, subject %s, redriven %v; the message that died is seq %d",
					try, round+1, entry.SourceSeq, c.Subject, entry.Redriven(), m.Seq)
			}
			// Redriven: stored again further on, and dead again.
			h := RedriveHeader(c.Header, entry.Redrives, RedriveMsgID(n.DLQ, entry.DLQSeq))
			m = &envelope.Message{Stream: "ORDERS", Seq: m.Seq + 100, Subject: "orders.paid", Time: m.Time.Add(time.Hour), Header: h, Data: c.Data}
		}
		if entry.Redrives != 2 {
			t.Fatalf("after two redrives the DLQ copy counts %d", entry.Redrives)
		}
	}
}
