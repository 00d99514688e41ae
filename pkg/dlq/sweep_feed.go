package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// The sweep's feed: the advisories of the capture durable (or, in a dry
// run, read with gets), admitted, deduplicated and arranged for the
// pipeline.

// durable returns the capture consumer to read: the one setup made, or for
// a sweep narrowed to some consumers, a durable filtered on their
// advisories that starts where the main one stands.
func (s *sweeper) durable(ctx context.Context) (string, []string, error) {
	// A server restarting or electing a leader does not answer for a
	// moment: these look-ups ride it out as the sweep's other requests do.
	var capture jetstream.Stream
	var main jetstream.Consumer
	err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func(ctx context.Context) (err error) {
		if capture == nil {
			if capture, err = s.js.Stream(ctx, s.n.Capture); err != nil {
				return err
			}
		}
		main, err = s.js.Consumer(ctx, s.n.Capture, s.n.Durable)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return "", nil, fmt.Errorf("stream %q: consumer %q: %w (run: jetctl dlq setup --stream %s)", s.n.Capture, s.n.Durable, ErrNotSetUp, s.cfg.Stream)
	case capture == nil:
		return "", nil, fmt.Errorf("stream %q: %w", s.n.Capture, err)
	case err != nil:
		return "", nil, fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, s.n.Durable, err)
	}
	if len(s.cfg.Consumers) == 0 {
		return s.n.Durable, nil, nil
	}
	filters := AdvisorySubjects(s.cfg.Stream, s.cfg.Consumers)
	captured := CaptureFilters(&capture.CachedInfo().Config)
	for _, f := range filters {
		ok := false
		for _, c := range captured {
			ok = ok || streamread.SubjectMatches(c, f)
		}
		if !ok {
			return "", nil, fmt.Errorf("stream %q: %w: advisories of consumer %q are not captured (run: jetctl dlq setup --stream %s --consumer %s)",
				s.cfg.Stream, ErrNotSetUp, filterConsumer(f), s.cfg.Stream, filterConsumer(f))
		}
	}
	names := slices.Clone(s.cfg.Consumers)
	sort.Strings(names)
	name := s.n.Durable + "-" + strings.Join(names, "-")
	ctx, cancel := s.api.WithTimeout(ctx)
	defer cancel()
	if _, err := s.js.Consumer(ctx, s.n.Capture, name); err == nil || s.cfg.DryRun {
		return name, filters, nil
	}
	cc := durableConfig(name, capture.CachedInfo().Config.Replicas)
	cc.FilterSubjects = filters
	cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
	cc.OptStartSeq = main.CachedInfo().AckFloor.Stream + 1
	if _, err := s.js.CreateConsumer(ctx, s.n.Capture, cc); err != nil {
		return "", nil, fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, name, err)
	}
	return name, filters, nil
}

func filterConsumer(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

// admit turns an advisory into an item: a dead message to move, or one
// to pass on and acknowledge in its turn (server-caused, unreadable, not
// this sweep's, a duplicate).
func (s *sweeper) admit(data []byte, ack jetstream.Msg) *item {
	a, err := ParseAdvisory(data)
	if err != nil || a.Stream != s.cfg.Stream || a.ServerCaused() ||
		(len(s.cfg.Consumers) > 0 && !slices.Contains(s.cfg.Consumers, a.Consumer)) {
		return &item{ack: ack, pass: passIgnored}
	}
	it := &item{adv: a, ack: ack}
	if !s.claim(it) {
		it.pass = passDuplicate
	}
	return it
}

// claim records it as the first of its dead message, or points it at the
// one that came first (false).
func (s *sweeper) claim(it *item) bool {
	k := it.adv.StreamSeq
	if orig, ok := s.seen[k]; ok {
		it.orig = orig
		return false
	}
	it.out = &outcome{}
	s.seen[k] = it.out
	s.admitted++
	return true
}

// fromDurable feeds the advisories the durable delivers until it has none
// left, or Max dead messages are admitted.
func (s *sweeper) fromDurable(ctx context.Context, durable string, push func(*item) bool) error {
	var cons jetstream.Consumer
	err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func(ctx context.Context) (err error) {
		cons, err = s.js.Consumer(ctx, s.n.Capture, durable)
		return err
	})
	if err != nil {
		return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
	}
	empty := 0
	for ctx.Err() == nil {
		want := s.cfg.Batch
		if s.cfg.Max > 0 {
			// Every advisory fetched may be a dead message of its own.
			want = min(want, s.cfg.Max-s.admitted)
			if want <= 0 {
				return nil
			}
		}
		got, stopped := 0, false
		// A fetch that the server did not answer (a restart, an election)
		// is tried again once the connection is back; an answer without
		// messages is the end.
		err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func(ctx context.Context) error {
			b, err := cons.FetchNoWait(want)
			if err != nil {
				return err
			}
			var items []*item
			for m := range b.Messages() {
				got++
				s.received(m)
				items = append(items, s.admit(m.Data(), m))
			}
			s.arrange(items)
			for _, it := range items {
				// Interrupted: the rest of the batch stays
				// unacknowledged, for the next run.
				if !stopped && !push(it) {
					stopped = true
				}
			}
			if err := b.Error(); got == 0 && err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
				return err
			}
			return nil
		})
		if stopped || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
		}
		if got == 0 {
			// No messages: the end, unless the server says some are
			// still to be delivered (the fetch met a restart or an
			// election, and was answered before the consumer was back).
			if empty++; empty > transientAttempts {
				return nil
			}
			ictx, cancel := s.api.WithTimeout(ctx)
			ci, err := cons.Info(ictx)
			cancel()
			if err == nil && ci.NumPending == 0 {
				if ci.NumAckPending > 0 && ci.Delivered.Consumer > s.lastDelivery {
					s.lost = true
				}
				return nil
			}
			if retry.Sleep(ctx, time.Duration(empty)*100*time.Millisecond) != nil {
				return nil
			}
			continue
		}
		empty = 0
	}
	return nil
}

// received notes the consumer sequence of an advisory the durable
// delivered to this sweep. Only this sweep reads the durable (it holds the
// lease), so the sequences follow each other; a gap is advisories the
// server delivered that never reached the sweep. That happens: a fetch
// that waits a second for its first message gives up (nats.go's
// FetchNoWait, with nothing said), and on a loaded machine the server's
// answer comes later, to an inbox nobody reads. Those advisories are then
// pending acknowledgement for the durable's ack wait (5 minutes): Sweep
// reads them again (see lost).
func (s *sweeper) received(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	c := md.Sequence.Consumer
	if s.lastDelivery != 0 && c != s.lastDelivery+1 {
		s.lost = true
	}
	s.lastDelivery = max(s.lastDelivery, c)
}

// dryRunAdvisories reads the advisories the durable has not acked with
// gets, so that a dry run disturbs no consumer.
func (s *sweeper) dryRunAdvisories(ctx context.Context, durable string, filters []string, push func(*item) bool) error {
	from := uint64(1)
	lctx, cancel := s.api.WithTimeout(ctx)
	defer cancel()
	if c, err := s.js.Consumer(lctx, s.n.Capture, durable); err == nil {
		from = c.CachedInfo().AckFloor.Stream + 1
	} else if c, err := s.js.Consumer(lctx, s.n.Capture, s.n.Durable); err == nil {
		from = c.CachedInfo().AckFloor.Stream + 1
	}
	for ctx.Err() == nil {
		if s.cfg.Max > 0 && s.admitted >= s.cfg.Max {
			return nil
		}
		m, err := s.api.MsgGet(ctx, s.n.Capture, jsapi.MsgGetRequest{Seq: from, NextFor: ">"})
		if errors.Is(err, jsapi.ErrNoMessage) {
			return nil
		}
		if err != nil {
			return err
		}
		from = m.Seq + 1
		if len(filters) > 0 && !slices.ContainsFunc(filters, func(f string) bool { return streamread.SubjectMatches(f, m.Subject) }) {
			continue
		}
		if !push(s.admit(m.Data, nil)) {
			return nil
		}
	}
	return nil
}

// arrange orders a batch for the pipeline: the ignored advisories first,
// then the dead messages by stream sequence (a duplicate advisory after the
// one it repeats), and marks where a row of dead messages at consecutive
// sequences ends (see prefetch). Advisories are acknowledged in this
// order, each once its dead message is done, which keeps the durable's ack
// floor a checkpoint whatever the order within a batch.
func (s *sweeper) arrange(items []*item) {
	slices.SortStableFunc(items, func(a, b *item) int {
		if ai, bi := a.pass == passIgnored, b.pass == passIgnored; ai != bi {
			if ai {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.adv.StreamSeq, b.adv.StreamSeq)
	})
	var last *item
	for _, it := range items {
		if it.pass != passNone {
			continue
		}
		if last != nil && it.adv.StreamSeq != last.adv.StreamSeq+1 {
			last.rowEnd = true
		}
		last = it
	}
	if last != nil {
		last.rowEnd = true
	}
}
