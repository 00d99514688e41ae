package migrate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// ttlSource makes stream ORDERS (subjects orders.>, allow_msg_ttl) with a
// message on orders.long (Nats-TTL 1h), orders.short (2s), orders.never
// (never), orders.plain (none) and a subject delete marker as a client
// sends one (orders.marker).
func ttlSource(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowMsgTTL: true, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ subject, ttl string }{{"orders.long", "1h"}, {"orders.short", "2s"}, {"orders.never", "never"}, {"orders.plain", ""}, {"orders.marker", "marker"}} {
		h := nats.Header{}
		switch m.ttl {
		case "":
		case "marker":
			h.Set("Nats-Marker-Reason", "MaxAge")
			h.Set(envelope.TTLHeader, "1h")
		default:
			h.Set(envelope.TTLHeader, m.ttl)
		}
		if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: m.subject, Header: h, Data: []byte(m.subject)}); err != nil {
			t.Fatal(err)
		}
	}
}

// lastOf is the header of subject's last message in stream, nil when it
// has none.
func lastOf(t *testing.T, js jetstream.JetStream, stream, subject string) nats.Header {
	t.Helper()
	s, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx(t), subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.Header
}

// Between servers with no route jetctl copies, and --ttl says what each
// copy's Nats-TTL is: remaining (the default) what is left of it, so that
// the copy goes when its original does; keep the original's again from the
// copy's time; drop none. The original's is kept as Jetctl-Orig-Nats-TTL,
// the verification compares every message (the original's Nats-TTL mapped
// back), and a subject delete marker stays one.
func TestClientCopyTTL(t *testing.T) {
	for _, mode := range []envelope.TTLMode{envelope.TTLRemaining, envelope.TTLKeep, envelope.TTLDrop} {
		t.Run(mode.String(), func(t *testing.T) {
			sjs := embeddedtest.JetStream(t)
			djs := embeddedtest.JetStream(t)
			ttlSource(t, sjs)
			before, _ := storedMsgs(t, sjs, "ORDERS", false)
			sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true, TTL: mode})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Mechanism != "copy" || !sum.Verified || sum.Messages != 5 {
				t.Fatalf("summary %+v", sum)
			}
			after, _ := storedMsgs(t, djs, "ORDERS", true)
			sameStored(t, before, after)
			long := lastOf(t, djs, "ORDERS", "orders.long")
			want := map[envelope.TTLMode]string{envelope.TTLRemaining: "3600s", envelope.TTLKeep: "3600s", envelope.TTLDrop: ""}[mode]
			if got := long.Get(envelope.TTLHeader); got != want && !(mode == envelope.TTLRemaining && (got == "3599s" || got == "3598s")) {
				t.Errorf("orders.long: the copy's Nats-TTL %q, want %q", got, want)
			}
			if got := long.Get(envelope.OrigPrefix + envelope.TTLHeader); got != "1h" {
				t.Errorf("orders.long: %s%s %q, want the original's 1h", envelope.OrigPrefix, envelope.TTLHeader, got)
			}
			if got, want := lastOf(t, djs, "ORDERS", "orders.never").Get(envelope.TTLHeader), map[bool]string{true: "", false: "never"}[mode == envelope.TTLDrop]; got != want {
				t.Errorf("orders.never: the copy's Nats-TTL %q, want %q", got, want)
			}
			if m := lastOf(t, djs, "ORDERS", "orders.marker"); m.Get("Nats-Marker-Reason") != "MaxAge" {
				t.Errorf("the marker's copy: %v, want Nats-Marker-Reason kept", m)
			}
			// orders.short (Nats-TTL 2s): its copy goes too, unless it has
			// no TTL. Then it is still there once a message published to
			// the target after it, with the same TTL, has gone.
			if mode == envelope.TTLDrop {
				if _, err := djs.PublishMsg(ctx(t), &nats.Msg{Subject: "orders.ref", Header: nats.Header{envelope.TTLHeader: {"2s"}}}); err != nil {
					t.Fatal(err)
				}
			}
			gone := map[envelope.TTLMode]string{envelope.TTLDrop: "orders.ref"}[mode]
			if gone == "" {
				gone = "orders.short"
			}
			deadline := time.Now().Add(20 * time.Second)
			for lastOf(t, djs, "ORDERS", gone) != nil {
				if time.Now().After(deadline) {
					t.Fatalf("%s (Nats-TTL 2s) still in the target after 20 s", gone)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if mode == envelope.TTLDrop && lastOf(t, djs, "ORDERS", "orders.short") == nil {
				t.Errorf("--ttl drop: the copy of orders.short expired")
			}
		})
	}
}

// A --ttl other than remaining is refused where a mirror copies (it keeps
// the source's TTLs), and a copy into a target without allow_msg_ttl is
// refused unless --ttl drop: before anything is created.
func TestClientCopyTTLRefusals(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ttlSource(t, js)
	ep := migrate.Endpoint{JS: js}
	_, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "ORDERS", Target: "ORDERS2", TTL: envelope.TTLKeep, DryRun: true})
	if !errors.Is(err, migrate.ErrInvalid) || !strings.Contains(err.Error(), "--ttl keep is for jetctl's copy") {
		t.Fatalf("--ttl keep by a mirror: %v", err)
	}
	djs := embeddedtest.JetStream(t)
	src, err := js.Stream(ctx(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	tcfg := src.CachedInfo().Config
	tcfg.AllowMsgTTL = false
	for _, mode := range []envelope.TTLMode{envelope.TTLRemaining, envelope.TTLKeep} {
		_, err = migrate.Stream(ctx(t), ep, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", TargetConfig: &tcfg, TTL: mode})
		if !errors.Is(err, migrate.ErrInvalid) || !strings.Contains(err.Error(), "allow_msg_ttl") {
			t.Fatalf("--ttl %s into a target without TTLs: %v", mode, err)
		}
	}
	if _, err := djs.Stream(ctx(t), "ORDERS"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the target: %v, want none created", err)
	}
	sum, err := migrate.Stream(ctx(t), ep, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", TargetConfig: &tcfg, TTL: envelope.TTLDrop, Cutover: true})
	if err != nil || !sum.Verified {
		t.Fatalf("--ttl drop into a target without TTLs: %+v %v", sum, err)
	}
	if got := fmt.Sprint(lastOf(t, djs, "ORDERS", "orders.long")[envelope.TTLHeader]); got != "[]" {
		t.Fatalf("--ttl drop: the copy has Nats-TTL %s", got)
	}
}
