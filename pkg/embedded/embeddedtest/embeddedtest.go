// Package embeddedtest starts embedded JetStream servers for Go tests and
// benchmarks: one server per call, its store in the test's temporary
// directory, stopped when the test ends.
package embeddedtest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
)

// Start starts a single-node JetStream server for tb.
func Start(tb testing.TB) *embedded.Cluster {
	tb.Helper()
	c, err := embedded.Start(embedded.Config{StoreDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Shutdown)
	return c
}

// JetStream starts a server for tb and returns a JetStream client of it,
// made with opts; the connection closes when the test ends.
func JetStream(tb testing.TB, opts ...jetstream.JetStreamOpt) jetstream.JetStream {
	tb.Helper()
	c := Start(tb)
	nc, err := nats.Connect(c.URL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return js
}
