package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
)

// scan finds dead messages from the consumers' state, for advisories that
// were never captured. The rule, per consumer with MaxDeliver set, on a
// workqueue or interest stream (where an acknowledged message is removed):
//
//   - a message still stored, matching the consumer's filter, at or below
//     the consumer's ack floor was given up on: the server moves the ack
//     floor past a message when it exceeds MaxDeliver;
//   - so is one above the ack floor and at or below the delivered floor,
//     but only when nothing is pending acknowledgement (otherwise it may be
//     in a worker's hands, and the consumer is reported as skipped);
//   - on an interest stream, a message another consumer has not yet
//     acknowledged is still stored for that consumer's sake, so it is not
//     counted.
//
// The server does not expose per-message delivery counts: a message found
// this way is recorded with deliveries = the consumer's MaxDeliver.
func (s *sweeper) scan(ctx context.Context) ([]*item, error) {
	st, err := s.js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", s.cfg.Stream, err)
	}
	infos := map[string]*jetstream.ConsumerInfo{}
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		infos[ci.Name] = ci
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: consumers: %w", s.cfg.Stream, err)
	}
	names := s.cfg.Consumers
	if len(names) == 0 {
		for name := range infos {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var items []*item
	for _, name := range names {
		ci := infos[name]
		if ci == nil || ci.Config.MaxDeliver <= 0 {
			continue
		}
		upTo := ci.AckFloor.Stream
		if ci.NumAckPending == 0 {
			upTo = ci.Delivered.Stream
		} else if ci.Delivered.Stream > ci.AckFloor.Stream {
			s.sum.ScanSkipped = append(s.sum.ScanSkipped, fmt.Sprintf("%s: %d %s pending acknowledgement; sequences %d..%d not scanned",
				name, ci.NumAckPending, english.PluralWord(ci.NumAckPending, "message", "messages"), ci.AckFloor.Stream+1, ci.Delivered.Stream))
		}
		filters := ci.Config.FilterSubjects
		if ci.Config.FilterSubject != "" {
			filters = []string{ci.Config.FilterSubject}
		}
		next := ">"
		if len(filters) == 1 {
			next = filters[0]
		}
		for seq := uint64(1); seq <= upTo; {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m, err := s.api.MsgGet(ctx, s.cfg.Stream, jsapi.MsgGetRequest{Seq: seq, NextFor: next})
			if errors.Is(err, jsapi.ErrNoMessage) {
				break
			}
			if err != nil {
				return nil, err
			}
			seq = m.Seq + 1
			if m.Seq > upTo || !consumerWants(ci, m.Subject) {
				continue
			}
			neededElsewhere := false
			if s.retention == jetstream.InterestPolicy {
				for other, oi := range infos {
					if other != name && consumerWants(oi, m.Subject) && oi.AckFloor.Stream < m.Seq {
						neededElsewhere = true
					}
				}
			}
			if neededElsewhere {
				continue
			}
			a := Advisory{Type: TypeMaxDeliver, Stream: s.cfg.Stream, Consumer: name, StreamSeq: m.Seq, Deliveries: uint64(ci.Config.MaxDeliver)}
			it := &item{adv: a, scanned: true}
			if !s.claim(it) {
				continue
			}
			items = append(items, it)
			if s.cfg.Max > 0 && len(items) >= s.cfg.Max {
				return items, nil
			}
		}
	}
	return items, nil
}
