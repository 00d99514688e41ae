package events

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// marshalLine is what cmd/output writes for an event: encoding/json
// without HTML escaping, and a newline.
func marshalLine(t *testing.T, e *Event) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	local := time.FixedZone("X", 3600)
	texts := []string{"", "seq 42 reached max deliveries (5)", `quote " and \ back`, "ctl \x00\x01\x08\x0c\x1f\n\r\t", "<html> & >",
		"invalid \xff\xfe utf8", "<\xff&>", "<\u2028&>", "line\u2028sep\u2029", "日本語 ✓", "orders.>"}
	var events []*Event
	for i, s := range texts {
		events = append(events, &Event{
			Time: time.Date(2026, 12, 1, 14, 2, 3, i*1000+7, time.UTC), Type: "max_deliveries", Stream: s, Consumer: s,
			Seq: uint64(i), Deliveries: uint64(i * 2), Reason: s, Leader: s, User: s, Text: s, Subject: "$JS.EVENT." + s,
			From: "JETCTL_EVENTS", FromSeq: uint64(i * 1000), Recovered: i%2 == 0,
			Advisory: json.RawMessage(`{"type":"io.nats.jetstream.advisory.v1.max_deliver", "stream" : "ORDERS","x":[1, 2.50,"<a>"]}`),
		})
	}
	events = append(events,
		&Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, local), Type: "audit", Text: "t", Audit: json.RawMessage(`{"type":"io.jetctl.audit.v1","args":["--password","***"]}`)},
		&Event{Time: time.Time{}, Type: "x"},
	)
	for _, e := range events {
		want := marshalLine(t, e)
		if got := string(e.AppendJSON(nil)); got != want {
			t.Errorf("AppendJSON\n got %s\nwant %s", got, want)
		}
	}
}
