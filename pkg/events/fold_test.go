package events

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func isInvalid(err error) bool { return errors.Is(err, ErrInvalid) }

var t0 = time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC)

func ev(at time.Duration, typ, consumer string, seq uint64) *Event {
	return &Event{Time: t0.Add(at), Type: typ, Stream: "ORDERS", Consumer: consumer, Seq: seq, Text: fmt.Sprintf("%s %d", typ, seq)}
}

func fold(t *testing.T, events ...*Event) []string {
	t.Helper()
	var out []string
	f := NewFolder(func(r *Row) error {
		out = append(out, fmt.Sprintf("%s %s %s x%d", r.First.Time.Sub(t0), r.First.Type, r.Consumer(), r.Count))
		return nil
	})
	for _, e := range events {
		if err := f.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFoldBurst(t *testing.T) {
	// 300 max deliveries of billing within a minute are one row, with
	// the first and last sequence; what happens meanwhile keeps its place.
	var events []*Event
	events = append(events, ev(0, TypeConsumerCreated, "billing", 0))
	for i := range 300 {
		events = append(events, ev(time.Second+time.Duration(i)*100*time.Millisecond, TypeMaxDeliveries, "billing", uint64(1201+i)))
		if i == 150 {
			events = append(events, ev(16*time.Second, TypeStreamLeaderElected, "", 0))
		}
	}
	events = append(events, ev(40*time.Second, TypeMaxDeliveries, "shipping", 9))
	events = append(events, ev(2*time.Minute, TypeMaxDeliveries, "billing", 1600))
	got := fold(t, events...)
	want := []string{"0s consumer_created billing x1", "1s max_deliveries billing x300", "16s stream_leader_elected  x1",
		"40s max_deliveries shipping x1", "2m0s max_deliveries billing x1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("folded\n got %q\nwant %q", got, want)
	}
}

func TestFoldRowText(t *testing.T) {
	var rows []*Row
	f := NewFolder(func(r *Row) error { rows = append(rows, r); return nil })
	for i := range 300 {
		_ = f.Add(ev(time.Duration(i)*100*time.Millisecond, TypeMaxDeliveries, "billing", uint64(1500-i)))
	}
	_ = f.Flush()
	if len(rows) != 1 || rows[0].Count != 300 || rows[0].MinSeq != 1201 || rows[0].MaxSeq != 1500 {
		t.Fatalf("rows %+v", rows)
	}
	if got, want := rows[0].Text(), "300 messages reached max deliveries (seq 1201 … 1500) until 14:02:29"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestFoldEphemeralConsumers(t *testing.T) {
	// Ordered readers come and go: consumers created per stream fold,
	// whatever their names.
	got := fold(t, ev(0, TypeConsumerCreated, "a1", 0), ev(time.Second, TypeConsumerCreated, "b2", 0), ev(2*time.Second, TypeConsumerDeleted, "a1", 0))
	want := []string{"0s consumer_created  x2", "2s consumer_deleted a1 x1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("folded\n got %q\nwant %q", got, want)
	}
}

func TestFoldWindowStartsAtFirst(t *testing.T) {
	// One every 50s: a burst spans a minute from its first event, not
	// from its last.
	got := fold(t, ev(0, TypeNak, "c", 1), ev(50*time.Second, TypeNak, "c", 2), ev(100*time.Second, TypeNak, "c", 3))
	want := []string{"0s nak c x2", "1m40s nak c x1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("folded\n got %q\nwant %q", got, want)
	}
}

func TestFoldHoldsBackBoundedRows(t *testing.T) {
	// A burst that stays open while more than maxHeld other rows come
	// is shown as it stands; its kind starts a new row.
	var events []*Event
	events = append(events, ev(0, TypeMaxDeliveries, "billing", 1))
	for i := range maxHeld + 10 {
		events = append(events, ev(time.Millisecond*time.Duration(i+1), TypeAudit, "", 0))
	}
	events = append(events, ev(30*time.Second, TypeMaxDeliveries, "billing", 2))
	got := fold(t, events...)
	if len(got) != maxHeld+12 || got[0] != "0s max_deliveries billing x1" || got[len(got)-1] != "30s max_deliveries billing x1" {
		t.Errorf("%d rows, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
}
