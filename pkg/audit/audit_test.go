package audit

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSubject(t *testing.T) {
	tests := []struct {
		r    Record
		want string
	}{
		{Record{Command: "consumer rewind", Stream: "ORDERS", Consumer: "projector"}, "jetctl.audit.ORDERS.projector.consumer.rewind"},
		{Record{Command: "dlq redrive", Stream: "ORDERS"}, "jetctl.audit.ORDERS._.dlq.redrive"},
		{Record{Command: "apply", Stream: "ORDERS"}, "jetctl.audit.ORDERS._.apply"},
		{Record{Command: "migrate stream", Stream: "KV_cfg"}, "jetctl.audit.KV_cfg._.migrate.stream"},
		{Record{Command: "replay"}, "jetctl.audit._._.replay"},
		// Names a subject token cannot hold (the server refuses such names).
		{Record{Command: "apply", Stream: "a.b", Consumer: "c>*"}, "jetctl.audit.a_b.c__.apply"},
	}
	for _, tt := range tests {
		if got := tt.r.Subject(); got != tt.want {
			t.Errorf("Subject() of %+v = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestOriginRecord(t *testing.T) {
	o := Origin{Command: "consumer rewind", User: "alice", NATSUser: "ops", Host: "h1", Version: "v1.2.3",
		Args: []string{"jetctl", "consumer", "rewind", "ORDERS", "projector", "--to-seq", "5000"}}
	at := time.Date(2026, 12, 2, 10, 11, 12, 123456789, time.FixedZone("CET", 3600))
	m := Masker{Secrets: []string{"s3cret"}}

	r := o.Record(Change{Stream: "ORDERS", Consumer: "projector", Action: "rewind", Summary: "rewound to seq 5000",
		Counts: map[string]int64{"start_seq": 5000}}, "ID1", at, m)
	want := Record{Type: Type, ID: "ID1", Time: at.UTC(), Command: "consumer rewind", Stream: "ORDERS", Consumer: "projector",
		Action: "rewind", Summary: "rewound to seq 5000", Counts: map[string]int64{"start_seq": 5000}, Result: ResultOK,
		User: "alice", NATSUser: "ops", Host: "h1", Version: "v1.2.3", Args: o.Args}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Record:\n got %+v\nwant %+v", r, want)
	}

	// A failed command's record: result error, the error masked; no counts
	// is an empty object, not null.
	r = o.Record(Change{Stream: "ORDERS", Action: "sweep", Err: errors.New("cannot reach nats://u:s3cret@h")}, "ID2", at, m)
	if r.Result != ResultError || r.Error != "cannot reach nats://u:"+Mask+"@h" {
		t.Errorf("failed change: result %q, error %q", r.Result, r.Error)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// Every field of the contract is there, under its name.
	for _, field := range []string{"type", "id", "time", "command", "stream", "consumer", "action", "summary", "counts",
		"result", "error", "user", "nats_user", "host", "version", "args"} {
		if _, ok := doc[field]; !ok {
			t.Errorf("field %q missing from %s", field, data)
		}
	}
	if doc["time"] != "2026-12-02T09:11:12.123456789Z" {
		t.Errorf("time = %v, want RFC 3339 with nanoseconds, UTC", doc["time"])
	}
	if c, ok := doc["counts"].(map[string]any); !ok || len(c) != 0 {
		t.Errorf("counts = %v, want {}", doc["counts"])
	}
	if _, ok := doc["bucket"]; ok {
		t.Errorf("bucket present without a bucket: %s", data)
	}
}
