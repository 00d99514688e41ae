package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// Emit receives each message read, in stream order.
type Emit func(*envelope.Message) error

const (
	directBatchSize = 4000
	orderedBuffer   = 2000
	// idleCheck is how long the ordered reader waits for a message before
	// asking the server whether any is left to come.
	idleCheck = 500 * time.Millisecond
	// followPoll is how often the get and direct readers look for new
	// messages when following.
	followPoll = 250 * time.Millisecond
)

// Read reads r in stream order and passes each message to emit. It stops
// at r.Last (unless following), when ctx ends, or when emit fails.
func Read(ctx context.Context, js jetstream.JetStream, r Range, emit Emit) error {
	if r.Empty() {
		return nil
	}
	switch r.Reader {
	case ReaderOrdered:
		return readOrdered(ctx, js, r, emit)
	case ReaderDirect:
		return readDirect(ctx, js, r, emit)
	case ReaderGet:
		return readGet(ctx, js, r, emit)
	}
	return fmt.Errorf("%w: reader %q", ErrUnsupported, r.Reader)
}

func readOrdered(ctx context.Context, js jetstream.JetStream, r Range, emit Emit) error {
	if !r.Follow && len(r.Subjects) > 0 {
		// A filter that matches nothing at all would leave the consumer
		// waiting: ask first.
		any, err := anyMatching(ctx, js, r)
		if err != nil || !any {
			return err
		}
	}
	cons, err := js.OrderedConsumer(ctx, r.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: r.Subjects,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    r.First,
	})
	if err != nil {
		return fmt.Errorf("stream %q: %w", r.Stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(orderedBuffer))
	if err != nil {
		return fmt.Errorf("stream %q: %w", r.Stream, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(idleCheck))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, nats.ErrTimeout) {
				if r.Follow {
					continue
				}
				done, err := nothingPending(ctx, cons)
				if err != nil || done {
					return err
				}
				continue
			}
			return fmt.Errorf("stream %q: %w", r.Stream, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("stream %q: %w", r.Stream, err)
		}
		seq := meta.Sequence.Stream
		if seq > r.Last {
			return nil
		}
		m := &envelope.Message{Stream: r.Stream, Seq: seq, Subject: msg.Subject(), Time: meta.Timestamp, Data: msg.Data()}
		if h := msg.Headers(); len(h) > 0 {
			m.Header = h
		}
		if err := emit(m); err != nil {
			return err
		}
		if !r.Follow && (seq == r.Last || meta.NumPending == 0) {
			return nil
		}
	}
}

func nothingPending(ctx context.Context, cons jetstream.Consumer) (bool, error) {
	info, err := cons.Info(ctx)
	if errors.Is(err, jetstream.ErrOrderedConsumerNotCreated) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

func anyMatching(ctx context.Context, js jetstream.JetStream, r Range) (bool, error) {
	s, err := js.Stream(ctx, r.Stream)
	if err != nil {
		return false, err
	}
	for _, subj := range r.Subjects {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
		if err != nil {
			return false, err
		}
		if len(info.State.Subjects) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// nextFor is the subject filter the server can apply itself: one filter;
// several are applied here.
func nextFor(subjects []string) string {
	if len(subjects) == 1 {
		return subjects[0]
	}
	return ">"
}

func readDirect(ctx context.Context, js jetstream.JetStream, r Range, emit Emit) error {
	a := newAPI(js, r.Stream)
	sub, err := a.NC.SubscribeSync(a.NC.NewRespInbox())
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return err
	}
	next := r.First
	done := false
	for !done {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := a.directBatch(ctx, sub, jsapi.MsgGetRequest{Seq: next, Batch: directBatchSize, NextFor: nextFor(r.Subjects)},
			func(m *envelope.Message, _ uint64) (bool, error) {
				if m.Seq > r.Last {
					done = true
					return false, nil
				}
				next = m.Seq + 1
				if subjectMatches(r.Subjects, m.Subject) {
					if err := emit(m); err != nil {
						return false, err
					}
				}
				if m.Seq == r.Last {
					done = true
					return false, nil
				}
				return true, nil
			})
		if err != nil {
			return err
		}
		if n == 0 {
			if !r.Follow {
				return nil
			}
			if err := sleep(ctx, followPoll); err != nil {
				return err
			}
		}
	}
	return nil
}

func readGet(ctx context.Context, js jetstream.JetStream, r Range, emit Emit) error {
	a := newAPI(js, r.Stream)
	next := r.First
	for next <= r.Last {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := a.msgGet(ctx, jsapi.MsgGetRequest{Seq: next, NextFor: nextFor(r.Subjects)})
		if errors.Is(err, jsapi.ErrNoMessage) {
			if !r.Follow {
				return nil
			}
			if err := sleep(ctx, followPoll); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if m.Seq > r.Last {
			return nil
		}
		next = m.Seq + 1
		if subjectMatches(r.Subjects, m.Subject) {
			if err := emit(m); err != nil {
				return err
			}
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
