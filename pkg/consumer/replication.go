package consumer

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
)

// Replication is what a server-owned consumer is for: the stream that
// reads this one through it, as a mirror or a source. The server makes
// such a durable on a workqueue or interest origin and deletes it with
// the stream that reads through it (TestFactReplicationDurables).
type Replication struct {
	// Stream reads this consumer's stream through it.
	Stream string `json:"stream"`
	// Kind is "mirror" or "source".
	Kind string `json:"kind"`
}

// The kinds of replication.
const (
	ReplicationMirror = "mirror"
	ReplicationSource = "source"
)

// replicationOf is the replication a consumer serves, nil for a user's
// consumer: the one place where pkg/consumer decides that a consumer is
// the server's own (by jsapi's reading of the server's metadata), and
// so never judged like a worker's (evaluate).
func replicationOf(cfg jetstream.ConsumerConfig) *Replication {
	if !jsapi.ReplicationConsumer(cfg.Metadata) {
		return nil
	}
	stream, mirror := jsapi.ReplicationTarget(cfg.Metadata)
	r := &Replication{Stream: stream, Kind: ReplicationSource}
	if mirror {
		r.Kind = ReplicationMirror
	}
	return r
}

// Describe says what the replication is, for people: "replication: stream
// AGG sources ORDERS through it".
func (r *Replication) Describe(origin string) string {
	verb := "sources"
	if r.Kind == ReplicationMirror {
		verb = "mirrors"
	}
	return fmt.Sprintf("replication: stream %s %s %s through it", r.Stream, verb, origin)
}

// replication: the server's own consumer, through which a mirror or a
// sourcing stream reads this one. It is replication, not a worker: its
// lag, stalls and dead letters are the reading stream's, which check
// judges by its mirror and source (lag, last seen). No other rule runs
// on it, so that nothing pages anyone for the server's own replication.
func (ev *evaluation) replication() {
	s := ev.s
	r := s.Replication
	ev.add(FindingReplication,
		fmt.Sprintf("%s; the server owns it: its position is the %s's, judged with that stream (jetctl check --stream %s), not as a worker's consumer",
			r.Describe(s.Stream), r.Kind, r.Stream),
		fmt.Sprintf("jetctl check --stream %s", r.Stream),
		map[string]any{"replication_stream": r.Stream, "replication_kind": r.Kind, "num_pending": ev.ci.NumPending, "ack_policy": s.AckPolicy})
}
