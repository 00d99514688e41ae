package migrate

// Streams that read the moved stream: they source or mirror it.
//
// A stream that sources a workqueue or interest stream reads it, on a
// single server, through a durable the server made on it, with
// _nats.src.* metadata (TestFactSourceDurableMetadata); one that sources a
// limits stream, through a consumer that is not listed. Such a consumer is
// replication: never re-seated on the target as a user's (durables
// leaves it out). Its reads take messages out of a workqueue source, and
// its acknowledgements out of an interest source, so the cutover waits,
// once the source is frozen, until it has read everything (or gives the
// source back): nothing then leaves the source while it is compared, and
// the stream downstream has everything the source held but what the
// target holds for it.
//
// The move does not change the downstream stream. The source is deleted,
// and with it that consumer: the downstream copies nothing more, its
// source reporting the stream gone, until its owner points its source at
// the target from the sequence the target took first after the move (the
// target keeps the source's sequences; the summary says which, and what
// the target keeps meanwhile). A mirror's origin cannot change (the server
// refuses it): a mirror of the source must be made again.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
)

// Downstream is a stream that reads the moved stream.
type Downstream struct {
	// Stream is its name; Domain and Account where it is, when not the
	// source's (from its consumer's metadata).
	Stream  string `json:"stream"`
	Domain  string `json:"domain,omitempty"`
	Account string `json:"account,omitempty"`
	// Mirror: it mirrors the source (else it sources it).
	Mirror bool `json:"mirror,omitempty"`
	// Counter: it is a counter stream (allow_msg_counter).
	Counter bool `json:"counter,omitempty"`
	// Consumer is the durable through which it reads the source, if one
	// is listed (a workqueue or interest source).
	Consumer string `json:"consumer,omitempty"`
	// FromSeq is the target's sequence to source it from (0 before a
	// cutover): the one after the last it sourced from the source (its
	// source's seq, TestFactSourceOfRecreatedStreamStartsOver), which the
	// target has too; where it cannot be read (another domain or account),
	// the first the target took after the move, the cutover having waited
	// for its durable to read everything.
	FromSeq uint64 `json:"from_seq,omitempty"`
	// Exact: FromSeq is known to be the one after the last it sourced.
	Exact bool `json:"exact,omitempty"`
	// Action says what becomes of it and what its owner must do.
	Action string `json:"action"`
}

// where names d with where it is, when not beside the source.
func (d Downstream) where() string {
	switch {
	case d.Domain != "":
		return fmt.Sprintf("%s (domain %s)", d.Stream, d.Domain)
	case d.Account != "":
		return fmt.Sprintf("%s (account %s)", d.Stream, d.Account)
	}
	return d.Stream
}

// explain sets each downstream's Action: before a cutover what it will
// do to them, after it what their owners must do.
func (m *mover) explain(ds []Downstream, cutover bool, final jetstream.StreamConfig) {
	for i := range ds {
		d := &ds[i]
		switch {
		case d.Mirror && !cutover:
			d.Action = fmt.Sprintf("stream %s mirrors %s: the cutover deletes %s, and a mirror's origin cannot change (the server refuses it): make %s again, as a mirror of %s", d.where(), m.srcName, m.srcName, d.Stream, m.dstName)
		case d.Mirror:
			d.Action = fmt.Sprintf("stream %s mirrored %s, which is gone: a mirror's origin cannot change (the server refuses it): make %s again, as a mirror of %s (it copies %s from its start), or promote it", d.where(), m.srcName, d.Stream, m.dstName, m.dstName)
		case d.Counter && m.seqs != nil && !cutover:
			d.Action = fmt.Sprintf("stream %s, a counter stream, sources %s: the cutover deletes %s, and %s then copies nothing more; it keeps the totals it sourced under %s's name, so sourcing %s would add %s's totals to them again: make it again, sourcing %s", d.where(), m.srcName, m.srcName, d.Stream, m.srcName, m.dstName, m.dstName, m.dstName)
		case d.Counter && m.seqs != nil:
			d.Action = fmt.Sprintf("stream %s, a counter stream, sourced %s, which is gone: it copies nothing more; it keeps the totals it sourced under %s's name (Nats-Counter-Sources), so sourcing %s would add %s's totals to them again: make it again, sourcing %s", d.where(), m.srcName, m.srcName, m.dstName, m.dstName, m.dstName)
		case !cutover:
			d.Action = fmt.Sprintf("stream %s sources %s: the cutover deletes %s, and %s then copies nothing more until its source is %s, from the sequence the cutover gives", d.where(), m.srcName, m.srcName, d.Stream, m.dstName)
		default:
			d.Action = fmt.Sprintf("stream %s sourced %s, which is gone: it copies nothing more until its source %s becomes %s with opt_start_seq %d (change its config, e.g. in its plan file, and jetctl apply)", d.where(), m.srcName, m.srcName, m.dstName, d.FromSeq)
			if !d.Exact {
				d.Action += fmt.Sprintf(", the first %s took after the move; if it had not read all of %s by then, it did not get the rest", m.dstName, m.srcName)
			}
			switch final.Retention {
			case jetstream.InterestPolicy:
				d.Action += fmt.Sprintf("; until then %s, an interest stream, keeps for it only what its own consumers have not acknowledged", m.dstName)
			case jetstream.WorkQueuePolicy:
				d.Action += fmt.Sprintf("; until then %s, a workqueue, keeps what no consumer of its own takes", m.dstName)
			}
		}
	}
}

// downstreamWait bounds how long a cutover waits for a downstream's
// consumer to read the frozen source. The server acknowledges for a
// sourcing stream with its idle heartbeat, once a second (nats-server
// sourceHealthHB): a cutover with a downstream durable waits up to about
// that long, and its write outage with it.
var downstreamWait = 10 * time.Second

// findDownstreams lists the streams that read the source: those whose
// replication consumers are listed on it, and those of the source's
// account whose config sources or mirrors it.
func (m *mover) findDownstreams(ctx context.Context) ([]Downstream, error) {
	s, err := m.src.JS.Stream(ctx, m.srcName)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", m.srcName, err)
	}
	var out []Downstream
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		md := ci.Config.Metadata
		if !jsapi.ReplicationConsumer(md) {
			continue
		}
		name, mirror := jsapi.ReplicationTarget(md)
		if name == m.dstName {
			continue // the target, reading the source for this move
		}
		pre := jsapi.MetaSourcePrefix
		if mirror {
			pre = jsapi.MetaMirrorPrefix
		}
		out = append(out, Downstream{Stream: name, Mirror: mirror, Domain: md[pre+"domain"], Account: md[pre+"acc"], Consumer: ci.Name})
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: listing consumers: %w", m.srcName, err)
	}
	srcDomain, _ := domainOf(ctx, m.src)
	local := func(d Downstream) bool { return d.Domain == srcDomain }
	names := m.src.JS.ListStreams(ctx)
	for si := range names.Info() {
		c := si.Config
		if c.Name == m.dstName {
			continue
		}
		mirror := c.Mirror != nil && c.Mirror.Name == m.srcName && c.Mirror.External == nil
		sources := false
		for _, ss := range c.Sources {
			sources = sources || ss.Name == m.srcName && ss.External == nil
		}
		if !mirror && !sources {
			continue
		}
		known := false
		for i, d := range out {
			if d.Stream == c.Name && local(d) {
				out[i].Account, out[i].Domain, out[i].Counter, known = "", "", c.AllowMsgCounter, true
			}
		}
		if !known {
			out = append(out, Downstream{Stream: c.Name, Mirror: mirror, Counter: c.AllowMsgCounter})
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	for i := range out {
		if local(out[i]) {
			out[i].Domain, out[i].Account = "", ""
		}
	}
	return out, nil
}

// downstreamsCaughtUp waits, once the source is frozen, until each
// downstream's durable on it has read everything and has nothing
// unacknowledged, and notes it; one that has not after downstreamWait
// fails the cutover.
func (m *mover) downstreamsCaughtUp(ctx context.Context, st *state) error {
	for i, d := range st.Downstreams {
		if d.Consumer == "" {
			continue
		}
		deadline := time.Now().Add(downstreamWait)
		for {
			ci, err := consumerInfo(ctx, m.src.JS, m.srcName, d.Consumer)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				break // gone with its stream, or the downstream's source changed
			}
			if err != nil {
				return fmt.Errorf("stream %q: consumer %q of %s: %w", m.srcName, d.Consumer, d.Stream, err)
			}
			if ci.NumPending == 0 && ci.NumAckPending == 0 {
				st.Downstreams[i].Exact = true // it read all: FromSeq follows what it has
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("stream %q reads %q (consumer %q) and has not read its last %d messages (%d unacknowledged) in %s: what it reads leaves %q while the move compares; run again once it has caught up",
					d.Stream, m.srcName, d.Consumer, ci.NumPending, ci.NumAckPending, downstreamWait, m.srcName)
			}
			if err := retry.Sleep(ctx, cutoverPoll*5); err != nil {
				return err
			}
		}
	}
	return nil
}

// sourcedUpTo sets, once the source is deleted (nothing more can be
// sourced from it), FromSeq of each downstream beside it that sources it
// to the one after the last sequence it sourced, as its info says. The
// target keeps the source's sequences (but the counter way's, where the
// source had gaps: there FromSeq stays the target's first after the
// move).
func (m *mover) sourcedUpTo(ctx context.Context, ds []Downstream) error {
	if m.sum.Mechanism == mechanismSource {
		return nil
	}
	for i, d := range ds {
		if d.Mirror || d.Domain != "" || d.Account != "" {
			continue
		}
		si, err := streamInfo(ctx, m.src.JS, d.Stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, ss := range si.Sources {
			if ss.Name == m.srcName && ss.External == nil {
				ds[i].FromSeq, ds[i].Exact = ss.Seq+1, true
			}
		}
	}
	return nil
}

// replicationDelivered is the highest stream sequence the downstreams'
// durables on the source were delivered: what they read may leave a
// workqueue source, and is not a loss.
func (m *mover) replicationDelivered(ctx context.Context) (uint64, error) {
	s, err := m.src.JS.Stream(ctx, m.srcName)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", m.srcName, err)
	}
	var delivered uint64
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		if jsapi.ReplicationConsumer(ci.Config.Metadata) {
			delivered = max(delivered, ci.Delivered.Stream)
		}
	}
	if err := l.Err(); err != nil {
		return 0, fmt.Errorf("stream %q: listing consumers: %w", m.srcName, err)
	}
	return delivered, nil
}
