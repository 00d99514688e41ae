// Package embeddedtest starts embedded JetStream servers for Go tests and
// benchmarks: one server per call, its store in the test's temporary
// directory, stopped when the test ends.
package embeddedtest

import (
	"testing"
	"time"

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

// DomainPair starts a hub server in JetStream domain "hub" and a leaf node
// server in domain "leaf" connected to it, both stopped when the test
// ends, and waits until each answers the other's domain API.
func DomainPair(tb testing.TB) (hub, leaf *embedded.Cluster) {
	tb.Helper()
	hub, err := embedded.Start(embedded.Config{StoreDir: tb.TempDir(), Domain: "hub", LeafListen: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(hub.Shutdown)
	leaf, err = embedded.Start(embedded.Config{StoreDir: tb.TempDir(), Domain: "leaf", LeafRemotes: []string{hub.LeafURL()}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(leaf.Shutdown)
	if err := embedded.WaitDomains(hub, leaf, 30*time.Second); err != nil {
		tb.Fatal(err)
	}
	return hub, leaf
}

// Reconnecting returns a JetStream client of c whose connection comes
// back whenever c does (it tries for ever, every 50ms): for tests that
// stop and restart c. The connection closes when the test ends.
func Reconnecting(tb testing.TB, c *embedded.Cluster) jetstream.JetStream {
	tb.Helper()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return js
}

// Connect returns a JetStream client of c (in domain, "" for the server's
// own API); the connection closes when the test ends.
func Connect(tb testing.TB, c *embedded.Cluster, domain string) jetstream.JetStream {
	tb.Helper()
	nc, err := nats.Connect(c.URL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	var js jetstream.JetStream
	if domain != "" {
		js, err = jetstream.NewWithDomain(nc, domain)
	} else {
		js, err = jetstream.New(nc)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return js
}
