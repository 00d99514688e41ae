package consumer

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Rates are a consumer's changes per second between two polls. They are
// nil in a first poll, which has nothing to compare with.
type Rates struct {
	// DeliveredPerSec: deliveries per second, redeliveries included (the
	// delivered consumer sequence's advance).
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	// AckedPerSec: how fast the ack floor advances, in deliveries per
	// second (its consumer sequence): acknowledged deliveries when acks
	// come in order, the common case.
	AckedPerSec float64 `json:"acked_per_sec"`
	// RedeliveredPerSec: the change per second of the redelivered count
	// (messages redelivered and not yet acknowledged); negative when
	// redelivered messages are being acknowledged.
	RedeliveredPerSec float64 `json:"redelivered_per_sec"`
	// UnprocessedPerSec: the change per second of the unprocessed count,
	// the pending trend: positive when the backlog grows.
	UnprocessedPerSec float64 `json:"unprocessed_per_sec"`
	// AckPendingPerSec: the change per second of the ack pending count.
	AckPendingPerSec float64 `json:"ack_pending_per_sec"`
}

// RatesBetween computes the rates from prev to cur, two states of the
// same consumer; nil when they are not comparable (no time passed, or the
// consumer was recreated: its sequences went back).
func RatesBetween(prev, cur *State) *Rates {
	if prev == nil || cur == nil {
		return nil
	}
	dt := cur.Time.Sub(prev.Time).Seconds()
	if dt <= 0 || cur.DeliveredConsumerSeq < prev.DeliveredConsumerSeq || cur.AckFloorConsumerSeq < prev.AckFloorConsumerSeq {
		return nil
	}
	diff := func(a, b float64) float64 { return (b - a) / dt }
	return &Rates{
		DeliveredPerSec:   diff(float64(prev.DeliveredConsumerSeq), float64(cur.DeliveredConsumerSeq)),
		AckedPerSec:       diff(float64(prev.AckFloorConsumerSeq), float64(cur.AckFloorConsumerSeq)),
		RedeliveredPerSec: diff(float64(prev.Redelivered), float64(cur.Redelivered)),
		UnprocessedPerSec: diff(float64(prev.Unprocessed), float64(cur.Unprocessed)),
		AckPendingPerSec:  diff(float64(prev.AckPending), float64(cur.AckPending)),
	}
}

// Sample is one consumer in one poll of a watch: its state and its rates
// since the previous poll. Its JSON form is one line of `consumer watch`
// off a terminal.
type Sample struct {
	*State
	// Rates are nil in the first poll and for a consumer that just
	// appeared or was recreated.
	Rates *Rates `json:"rates"`
}

// Watcher polls List and computes rates between consecutive polls. It
// reads a consumer's oldest undelivered message again only when its
// delivered cursor moved (see LagCache).
type Watcher struct {
	JS     jetstream.JetStream
	Config ListConfig
	prev   map[string]*State
}

// Poll lists the consumers once and returns each with its rates since
// the previous Poll.
func (w *Watcher) Poll(ctx context.Context) ([]Sample, error) {
	if w.Config.LagCache == nil {
		w.Config.LagCache = &LagCache{}
	}
	states, err := List(ctx, w.JS, w.Config)
	if err != nil {
		return nil, err
	}
	next := make(map[string]*State, len(states))
	out := make([]Sample, len(states))
	for i, s := range states {
		out[i] = Sample{State: s}
		if p, ok := w.prev[s.Key()]; ok && !s.NoLeader && !p.NoLeader {
			out[i].Rates = RatesBetween(p, s)
		}
		next[s.Key()] = s
	}
	w.prev = next
	return out, nil
}

// Interval is the default time between polls of a watch.
const Interval = time.Second
