package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/mover"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// The sweep's policy: what the answers mean for a dead message's record,
// which source messages are deleted, which advisories acknowledged, and
// how the summary counts.

// got records what the get of it's dead message found.
func (s *sweeper) got(work context.Context, it *item, m *envelope.Message, err error) {
	switch {
	case errors.Is(err, jsapi.ErrNoMessage):
		// Gone: moved by an earlier, interrupted sweep, or removed
		// before any sweep (limits, a delete, a terminated message on
		// a workqueue or interest stream).
		dm, derr := s.api.MsgGet(work, s.n.DLQ, jsapi.MsgGetRequest{LastFor: s.n.DLQSubject(it.adv.StreamSeq)})
		switch {
		case derr == nil:
			it.rec.Status, it.rec.DLQSeq, it.rec.Subject, it.rec.Size = StatusAlreadyMoved, dm.Seq, dm.Header.Get(envelope.SourceSubject), len(dm.Data)
			it.rec.Source = SourceDeleted
		case errors.Is(derr, jsapi.ErrNoMessage):
			it.rec.Status = StatusGone
		default:
			it.rec.Status, it.rec.Error = StatusFailed, derr.Error()
		}
	case err != nil:
		it.rec.Status, it.rec.Error = StatusFailed, err.Error()
	default:
		it.src = m
		it.rec.Subject, it.rec.Size = m.Subject, len(m.Data)
	}
}

// published records the window's outcome of it's copy. A copy the window
// had to shrink (Refused) is a pointer copy: too large, for the limit
// Refused names. A copy already in the DLQ (alreadyCopied: a duplicate,
// or the per-message subject written before) is already moved, whichever
// of the window's tries met it.
func (s *sweeper) published(it *item, p *mover.Pub) {
	if p.Refused != nil {
		it.tooLarge = true
		if !errors.Is(p.Refused, nats.ErrMaxPayload) {
			it.limit = "the DLQ stream's max_msg_size"
		}
	}
	var ack *jetstream.PubAck
	if p.Err == nil {
		ack = &jetstream.PubAck{Stream: p.Stream, Sequence: p.Seq, Duplicate: p.Duplicate}
	}
	switch {
	case alreadyCopied(ack, p.Err):
		it.rec.Status, it.rec.Error = StatusAlreadyMoved, ""
		if it.tooLarge {
			it.rec.Status = StatusTooLarge
		}
	case p.Err == nil && it.tooLarge:
		it.rec.Status, it.rec.Error, it.rec.DLQSeq = StatusTooLarge, "", ack.Sequence
	case p.Err == nil:
		it.rec.Status, it.rec.Error, it.rec.DLQSeq = StatusMoved, "", ack.Sequence
	default:
		it.rec.Status, it.rec.Error = StatusFailed, "copy not stored: "+p.Err.Error()
	}
}

func (s *sweeper) tooLargeNote(it *item) string {
	limit := it.limit
	if limit == "" {
		limit = fmt.Sprintf("the server's max_payload (%d bytes)", s.js.Conn().MaxPayload())
	}
	return fmt.Sprintf("payload of %d bytes not copied: with its provenance headers it exceeds %s; "+
		"the DLQ copy holds the headers, the message stays in %s at sequence %d", len(it.src.Data), limit, s.cfg.Stream, it.src.Seq)
}

// deletes says whether it's source message is to be deleted now; where it
// stays on purpose (too large to copy, still needed), it records why.
func (s *sweeper) deletes(work context.Context, it *item) bool {
	switch {
	case it.pass != passNone || it.src == nil:
		return false
	case it.rec.Status == StatusTooLarge:
		// Only a pointer is in the DLQ: the payload stays where it is.
		it.rec.Source, it.rec.SourceNote = SourceKept, s.tooLargeNote(it)
		return false
	case it.rec.Status != StatusMoved && it.rec.Status != StatusAlreadyMoved:
		return false
	}
	remove, note := s.shouldRemove(it, s.neededBy(work))
	if !remove {
		it.rec.Source, it.rec.SourceNote = SourceKept, note
	}
	return remove
}

// neededAge is how old the other consumers' ack floors may be when an
// interest stream's source message is judged: an older reading only keeps
// more messages (an ack floor does not go back), never deletes one that
// is still needed.
const neededAge = 100 * time.Millisecond

// neededBy returns the source's consumers, for an interest stream.
func (s *sweeper) neededBy(ctx context.Context) map[string]*jetstream.ConsumerInfo {
	if s.retention != jetstream.InterestPolicy {
		return nil
	}
	s.needMu.Lock()
	defer s.needMu.Unlock()
	if s.needed == nil || time.Since(s.needAt) > neededAge {
		s.needed, s.needAt = s.consumerInfos(ctx), time.Now()
	}
	return s.needed
}

// shouldRemove applies the retention policy: workqueue streams lose the
// message, interest streams when no other consumer still needs it, limits
// streams only with DeleteSource.
func (s *sweeper) shouldRemove(it *item, infos map[string]*jetstream.ConsumerInfo) (bool, string) {
	switch s.retention {
	case jetstream.WorkQueuePolicy:
		return true, ""
	case jetstream.InterestPolicy:
		for name, ci := range infos {
			if name == it.adv.Consumer || !consumerWants(ci, it.src.Subject) {
				continue
			}
			if ci.AckFloor.Stream < it.src.Seq {
				return false, fmt.Sprintf("consumer %q has not acknowledged it yet", name)
			}
		}
		return true, ""
	default:
		if s.cfg.DeleteSource {
			return true, ""
		}
		return false, "limits retention (use --delete-source to remove it)"
	}
}

func (s *sweeper) consumerInfos(ctx context.Context) map[string]*jetstream.ConsumerInfo {
	ctx, cancel := s.api.WithTimeout(ctx)
	defer cancel()
	out := map[string]*jetstream.ConsumerInfo{}
	st, err := s.js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return out
	}
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		out[ci.Name] = ci
	}
	return out
}

func consumerWants(ci *jetstream.ConsumerInfo, subject string) bool {
	filters := ci.Config.FilterSubjects
	if ci.Config.FilterSubject != "" {
		filters = append(slices.Clip(filters), ci.Config.FilterSubject)
	}
	return streamread.SubjectMatchesAny(filters, subject)
}

// finish acknowledges the advisory of a message that is done (a failed
// or interrupted one comes back on the next run), counts and reports it.
// An advisory it leaves unacknowledged on purpose is counted in unacked,
// which the durable's own count is checked against (see acksKept).
func (s *sweeper) finish(it *item) {
	acked := false
	ack := func() { acked = true; s.ack(it.ack) }
	defer func() {
		if it.ack != nil && !acked {
			s.unacked++
		}
	}()
	switch it.pass {
	case passIgnored:
		s.sum.Ignored++
		ack()
		return
	case passDuplicate:
		s.sum.Duplicates++
		// Acknowledged only when the message it repeats was handled:
		// it may be a redelivery of that very advisory.
		if it.orig.done {
			ack()
		}
		return
	}
	if it.rec.Status == "" {
		return
	}
	if it.rec.Status != StatusFailed {
		it.out.done = true
		ack()
	}
	it.src = nil
	s.count(it.rec)
	if s.cfg.OnRecord != nil {
		s.cfg.OnRecord(it.rec)
	}
	if s.finished++; s.finished%pipeDepth == 0 {
		s.progress()
	}
}

func (s *sweeper) count(r Record) {
	s.sum.Found++
	switch r.Status {
	case StatusMoved:
		s.sum.Moved++
		s.sum.Bytes += int64(r.Size)
	case StatusAlreadyMoved:
		s.sum.AlreadyMoved++
	case StatusGone:
		s.sum.Gone++
	case StatusFailed:
		s.sum.Failed++
	case StatusWouldMove:
		s.sum.WouldMove++
		s.sum.Bytes += int64(r.Size)
	case StatusTooLarge:
		s.sum.TooLarge++
	}
	switch r.Source {
	case SourceDeleted:
		if r.Status == StatusMoved || r.Status == StatusAlreadyMoved {
			s.sum.SourceDeleted++
		}
	case SourceKept:
		s.sum.SourceKept++
	}
}

func (s *sweeper) progress() {
	if s.cfg.Progress != nil {
		sum := s.sum
		sum.Seconds = time.Since(s.start).Seconds()
		s.cfg.Progress(sum)
	}
}

// ack acknowledges an advisory, one behind: it sends the acknowledgement of
// the advisory before m, and holds m's until the next one, or until
// confirmAcks sends it as a double ack at the end of the run.
func (s *sweeper) ack(m jetstream.Msg) {
	if m == nil {
		return
	}
	if s.held != nil {
		_ = s.held.Ack()
	}
	s.held = m
}

// confirmAcks acknowledges the held advisory and waits for the server's
// answer. The server handles a durable's acknowledgements in the order
// they came in on a connection, so once it has answered, it has handled
// every acknowledgement this run sent before it on this connection, and
// the durable's count of advisories pending acknowledgement is exact
// (see acksKept). No answer (a restart, an election) is no error here:
// acksKept finds what the server does not have.
func (s *sweeper) confirmAcks(ctx context.Context) {
	m := s.held
	if m == nil {
		return
	}
	s.held = nil
	ctx, cancel := context.WithTimeout(ctx, s.api.Timeout)
	defer cancel()
	if err := m.DoubleAck(ctx); err != nil {
		logctx.From(ctx).Debug("dlq sweep: the last acknowledgement of the run was not confirmed", "stream", s.n.Capture, "error", err)
	}
}
