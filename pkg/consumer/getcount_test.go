package consumer

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// countGets counts, on a second connection, the message gets (STREAM.MSG.GET)
// made on js's connection; the returned func gives the count so far of
// those made before it is called. It has js's connection publish a marker
// that the counter also takes: the server hands a connection's messages on
// in the order it read them, so every get made before reaches the counter
// before the marker. (Flushing the counter's own connection does not order
// them: the server may answer a get before it has passed the request on.)
func countGets(t *testing.T, ctx context.Context, js jetstream.JetStream) func() int {
	t.Helper()
	nc, err := nats.Connect(js.Conn().ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const marker = "count-gets.marker"
	seen := make(chan *nats.Msg, 64)
	for _, subject := range []string{"$JS.API.STREAM.MSG.GET.>", marker} {
		if _, err := nc.ChanSubscribe(subject, seen); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	gets := 0
	return func() int {
		t.Helper()
		if err := js.Conn().Publish(marker, nil); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case m := <-seen:
				if m.Subject == marker {
					return gets
				}
				gets++
			case <-ctx.Done():
				t.Fatal("the marker never came")
			}
		}
	}
}
