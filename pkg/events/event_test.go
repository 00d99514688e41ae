package events

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
)

func msg(subject, data string) *envelope.Message {
	return &envelope.Message{Stream: "JETCTL_EVENTS", Seq: 7, Subject: subject, Time: time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC), Data: []byte(data)}
}

func TestDecodeAdvisories(t *testing.T) {
	for _, c := range []struct {
		subject, data string
		want          Event
	}{
		{"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.billing",
			`{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"a","timestamp":"2026-12-01T14:02:00Z","stream":"ORDERS","consumer":"billing","stream_seq":42,"deliveries":5}`,
			Event{Type: "max_deliveries", Stream: "ORDERS", Consumer: "billing", Seq: 42, Deliveries: 5, Text: "seq 42 reached max deliveries (5)"}},
		{"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.billing",
			`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"billing","stream_seq":7,"consumer_seq":9,"deliveries":1,"reason":"bad payload"}`,
			Event{Type: "terminated", Stream: "ORDERS", Consumer: "billing", Seq: 7, Deliveries: 1, Reason: "bad payload", Text: "seq 7 terminated after 1 delivery: bad payload"}},
		{"$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.ORDERS.billing",
			`{"type":"io.nats.jetstream.advisory.v1.nak","stream":"ORDERS","consumer":"billing","stream_seq":3,"deliveries":2}`,
			Event{Type: "nak", Stream: "ORDERS", Consumer: "billing", Seq: 3, Deliveries: 2, Text: "seq 3 NAKed (delivery 2)"}},
		{"$JS.EVENT.ADVISORY.CONSUMER.CREATED.ORDERS.billing",
			`{"type":"io.nats.jetstream.advisory.v1.consumer_action","stream":"ORDERS","consumer":"billing","action":"create"}`,
			Event{Type: "consumer_created", Stream: "ORDERS", Consumer: "billing", Text: "consumer created"}},
		{"$JS.EVENT.ADVISORY.STREAM.UPDATED.ORDERS",
			`{"type":"io.nats.jetstream.advisory.v1.stream_action","stream":"ORDERS","action":"modify"}`,
			Event{Type: "stream_updated", Stream: "ORDERS", Text: "stream updated"}},
		{"$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.ORDERS",
			`{"type":"io.nats.jetstream.advisory.v1.stream_leader_elected","stream":"ORDERS","leader":"n2","replicas":[{"name":"n1"},{"name":"n2"},{"name":"n3"}]}`,
			Event{Type: "stream_leader_elected", Stream: "ORDERS", Leader: "n2", Text: "leader n2 (replicas n1, n3)"}},
		{"$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.ORDERS.billing",
			`{"type":"io.nats.jetstream.advisory.v1.consumer_leader_elected","stream":"ORDERS","consumer":"billing","leader":"n1","replicas":[]}`,
			Event{Type: "consumer_leader_elected", Stream: "ORDERS", Consumer: "billing", Leader: "n1", Text: "leader n1"}},
		{"$JS.EVENT.ADVISORY.CONSUMER.PAUSE.ORDERS.billing",
			`{"type":"io.nats.jetstream.advisory.v1.consumer_pause","stream":"ORDERS","consumer":"billing","paused":false}`,
			Event{Type: "consumer_resumed", Stream: "ORDERS", Consumer: "billing", Text: "resumed"}},
		{"$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.ORDERS",
			`{"type":"io.nats.jetstream.advisory.v1.snapshot_create","stream":"ORDERS"}`,
			Event{Type: "snapshot_started", Stream: "ORDERS", Text: "snapshot started"}},
		// A type this version does not know keeps its last word.
		{"$JS.EVENT.ADVISORY.STREAM.SOMETHING.ORDERS",
			`{"type":"io.nats.jetstream.advisory.v1.stream_something_new","stream":"ORDERS"}`,
			Event{Type: "stream_something_new", Stream: "ORDERS", Text: "stream something new"}},
	} {
		e, ok := Decode(msg(c.subject, c.data))
		if !ok {
			t.Errorf("%s: not decoded", c.subject)
			continue
		}
		got := *e
		if string(got.Advisory) != c.data || got.Audit != nil || got.Subject != c.subject || got.From != "JETCTL_EVENTS" || got.FromSeq != 7 {
			t.Errorf("%s: record or provenance lost: %+v", c.subject, got)
		}
		got.Advisory, got.Subject, got.From, got.FromSeq, got.Time = nil, "", "", 0, time.Time{}
		if got.Type != c.want.Type || got.Stream != c.want.Stream || got.Consumer != c.want.Consumer || got.Seq != c.want.Seq ||
			got.Deliveries != c.want.Deliveries || got.Reason != c.want.Reason || got.Leader != c.want.Leader || got.Text != c.want.Text {
			t.Errorf("%s:\n got %+v\nwant %+v", c.subject, got, c.want)
		}
	}
}

func TestDecodeAudit(t *testing.T) {
	rec := `{"type":"io.jetctl.audit.v1","id":"x","time":"2026-12-01T14:10:00Z","command":"consumer rewind","stream":"ORDERS","consumer":"projector","action":"rewind","summary":"rewound to seq 5000","counts":{"messages":3},"result":"ok","user":"alice","host":"ops1"}`
	e, ok := Decode(msg("jetctl.audit.ORDERS.projector.consumer.rewind", rec))
	if !ok || e.Type != TypeAudit || e.Stream != "ORDERS" || e.Consumer != "projector" || e.User != "alice" ||
		e.Text != "alice@ops1: consumer rewind: rewound to seq 5000" || string(e.Audit) != rec || e.Advisory != nil {
		t.Fatalf("audit record read as %+v", e)
	}
	// The subject names stream and consumer when the record does not; _ is none.
	e, _ = Decode(msg("jetctl.audit.ORDERS._.dlq.redrive", `{"type":"io.jetctl.audit.v1","command":"dlq redrive","result":"error","error":"permission denied","user":"bob"}`))
	if e.Stream != "ORDERS" || e.Consumer != "" || e.Text != "bob: dlq redrive (failed: permission denied)" {
		t.Errorf("audit record without names read as %+v", e)
	}
}

func TestDecodeSkips(t *testing.T) {
	if _, ok := Decode(msg("$JS.EVENT.ADVISORY.STREAM.CREATED.X", "not json")); ok {
		t.Error("a payload that is not JSON decoded")
	}
	if _, ok := Decode(msg("orders.new", `{"type":"x"}`)); ok {
		t.Error("a subject that is neither an advisory nor an audit record decoded")
	}
	m := msg("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.B.c", `{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"B","consumer":"c","stream_seq":1}`)
	m.Header = nats.Header{headerMovedFrom: {"A"}}
	if _, ok := Decode(m); ok {
		t.Error("a copy a stream move made decoded as an event")
	}
	m.Header = nats.Header{HeaderRecovered: {"DLQ_ADVISORIES_B"}}
	if e, ok := Decode(m); !ok || !e.Recovered {
		t.Error("a recovered advisory is not marked")
	}
}

func TestValidateTypes(t *testing.T) {
	if err := ValidateTypes([]string{"max_deliveries", "audit"}); err != nil {
		t.Error(err)
	}
	err := ValidateTypes([]string{"leader_elect"})
	if err == nil || !isInvalid(err) {
		t.Fatalf("leader_elect accepted: %v", err)
	}
}
