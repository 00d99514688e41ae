package replay

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/envelope/envelopetest"
)

// The fates the publisher applies (envelope.CopyHeaderInto, applyTTL,
// skipOf); a fate added to the republish column that is none of these
// needs code here first.
var republishFates = []envelope.Fate{envelope.Keep, envelope.Rename, envelope.Drop, envelope.Own, envelope.TTL, envelope.Markers}

// TestCopyFollowsHeaderTable holds the publisher's copy (replay --to,
// replay --from-file --to) to the header table's republish column, every
// row: CheckFates for keep, rename, drop and own; the ttl row by --ttl
// and the markers row by --markers, checked here.
func TestCopyFollowsHeaderTable(t *testing.T) {
	for _, r := range envelope.HeaderTable {
		if f := r.Cells[envelope.CmdRepublish].Fate; !slices.Contains(republishFates, f) {
			t.Errorf("%s: the republish column's fate %s is not one the publisher applies", r.Name, f)
		}
	}
	stored := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	orig := envelopetest.EveryHeader() // Nats-TTL: 1h, Nats-Marker-Reason: Remove
	m := &envelope.Message{Stream: "ORDERS", Seq: 7, Subject: "orders.paid", Time: stored, Header: orig, Data: []byte("x")}
	publisher := func(ttl envelope.TTLMode, markers MarkersMode) *Publisher {
		return &Publisher{cfg: PublishConfig{To: "copy.>", MsgIDPrefix: DefaultMsgIDPrefix, TTL: ttl, Markers: markers}}
	}

	for _, tc := range []struct {
		mode      envelope.TTLMode
		after     time.Duration
		ttl, orig string // the copy's Nats-TTL and Jetctl-Orig-Nats-TTL
	}{
		{envelope.TTLRemaining, 10 * time.Minute, "3000s", "1h"},
		{envelope.TTLKeep, 10 * time.Minute, "3600s", ""},
		{envelope.TTLKeep, 2 * time.Hour, "3600s", ""},
		{envelope.TTLDrop, 10 * time.Minute, "", "1h"},
		{envelope.TTLDrop, 2 * time.Hour, "", "1h"},
	} {
		got, skip := publisher(tc.mode, MarkersKeep).Copy(m, stored.Add(tc.after))
		if skip != SkipNone {
			t.Fatalf("--ttl %s, %v after: skipped (%v)", tc.mode, tc.after, skip)
		}
		envelopetest.CheckFates(t, envelope.CmdRepublish, orig, got.Header)
		if got.Header.Get("Nats-TTL") != tc.ttl || got.Header.Get(envelope.OrigPrefix+"Nats-TTL") != tc.orig {
			t.Errorf("--ttl %s, %v after: Nats-TTL %q and Jetctl-Orig-Nats-TTL %q, want %q and %q", tc.mode, tc.after,
				got.Header.Get("Nats-TTL"), got.Header.Get(envelope.OrigPrefix+"Nats-TTL"), tc.ttl, tc.orig)
		}
		// --markers keep: as it is, under its own name.
		if !slices.Equal(got.Header["Nats-Marker-Reason"], orig["Nats-Marker-Reason"]) || got.Header[envelope.OrigPrefix+"Nats-Marker-Reason"] != nil {
			t.Errorf("--markers keep: copy's headers %v", got.Header)
		}
	}

	// --ttl remaining skips what expired, and the rest copies it.
	if _, skip := publisher(envelope.TTLRemaining, MarkersKeep).Copy(m, stored.Add(time.Hour)); skip != SkipExpired {
		t.Errorf("--ttl remaining after the TTL passed: %v, want skipped as expired", skip)
	}
	// --markers skip (and auto, which Run resolves first) skip a marker,
	// whatever its TTL.
	for _, markers := range []MarkersMode{MarkersSkip, MarkersAuto} {
		if _, skip := publisher(envelope.TTLKeep, markers).Copy(m, stored); skip != SkipMarker {
			t.Errorf("--markers %s: %v, want the marker skipped", markers, skip)
		}
	}
	plain := *m
	plain.Header = envelopetest.EveryHeader()
	delete(plain.Header, "Nats-Marker-Reason")
	if _, skip := publisher(envelope.TTLRemaining, MarkersSkip).Copy(&plain, stored); skip != SkipNone {
		t.Errorf("--markers skip on a message that is no marker: %v", skip)
	}
	// A TTL of never is never expired, and stays never.
	forever := *m
	forever.Header = nats.Header{"Nats-TTL": {"never"}}
	if got, skip := publisher(envelope.TTLRemaining, MarkersSkip).Copy(&forever, stored.Add(1000*time.Hour)); skip != SkipNone || got.Header.Get("Nats-TTL") != "never" {
		t.Errorf("Nats-TTL never: %v %v", skip, got)
	}
}

// A dump (replay to a file or stdout) keeps every header as stored, and
// --from-file reads it back as it was: the dump's column of the table.
func TestDumpFollowsHeaderTable(t *testing.T) {
	orig := envelopetest.EveryHeader()
	m := &envelope.Message{Stream: "ORDERS", Seq: 7, Subject: "orders.paid", Time: time.Now(), Header: orig, Data: []byte("x")}
	var buf bytes.Buffer
	sink := NewLineSink(&buf, nil)
	if err := sink.Write(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	back, err := envelope.ParseLine(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range envelope.HeaderTable {
		if f := r.Cells[envelope.CmdDump].Fate; f != envelope.Keep {
			t.Errorf("%s: the dump's fate is %s; TestDumpFollowsHeaderTable checks keep only", r.Name, f)
		}
	}
	envelopetest.CheckFates(t, envelope.CmdDump, orig, back.Header)
	if len(back.Header) != len(orig) {
		t.Errorf("dump read back with headers %v, want %v", back.Header, orig)
	}
}
