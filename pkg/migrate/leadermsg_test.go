package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A recheck reads a message with its headers as stored, also from a
// stream with allow_direct: nats.go's Stream.GetMsg would ask any replica
// there and keep the four headers a direct get appends, and a recheck of
// such a source against a target without allow_direct then reported a
// difference that was not there ("headers Nats-Sequence, Nats-Stream,
// Nats-Subject, Nats-Time-Stamp"), refusing a good copy.
func TestLeaderMsgHeadersAsStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	for _, direct := range []bool{true, false} {
		name := "PLAIN"
		if direct {
			name = "DIRECT"
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, AllowDirect: direct}); err != nil {
			t.Fatal(err)
		}
		msg := &nats.Msg{Subject: name + ".a", Header: nats.Header{"X-Order": []string{"42"}}, Data: []byte("paid")}
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		m, in, err := leaderMsg(ctx, js, name, ack.Sequence)
		if err != nil || !in {
			t.Fatalf("%s: in %v, err %v", name, in, err)
		}
		if len(m.Header) != 1 || m.Header.Get("X-Order") != "42" || m.Subject != name+".a" || string(m.Data) != "paid" || m.Time.IsZero() {
			t.Errorf("%s: read %s %v %q at %s, want the message as stored (one header X-Order: 42)", name, m.Subject, m.Header, m.Data, m.Time)
		}
		if _, in, err := leaderMsg(ctx, js, name, ack.Sequence+1); err != nil || in {
			t.Errorf("%s: a sequence past the last: in %v, err %v; want not in, no error", name, in, err)
		}
	}
}
