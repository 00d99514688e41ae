package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// A redrive is a new publish of an old message. The original publish's
// server actions (a rollup, a batch, a schedule) stay undone because the
// header table keeps their headers renamed (RedriveHeader); what the
// target stream does with any publish is checked here, before anything
// is sent, by reading the selection once (preflight):
//
//   - a dead letter of a counter stream is refused: its increment was
//     applied when it was first published (TestFactCounterNeedsIncr);
//   - a TTL is given again as what is left of it (redriveTTL); a dead
//     letter whose TTL has passed is skipped and reported, and a target
//     that does not allow TTLs is refused (TestFactTTLRefusedWithoutAllowMsgTTL);
//   - a target whose max_msgs_per_subject would make the server remove a
//     message on a redriven subject (its current value, or a copy this
//     redrive sent a moment before) is refused
//     (TestFactPerSubjectLimitRemovesTheSubjectsOldest);
//   - an interest stream where no consumer receives the subject is
//     refused: the server would acknowledge the redrive and drop it, and
//     the dead letter, its DLQ copy deleted, would be lost
//     (TestFactInterestStreamDropsWhatNoConsumerReceives).
//
// Not refused, by what the server does (facts_test.go): discard new
// refuses the publish instead of removing anything, and the dead letter
// stays in the DLQ (TestFactDiscardNewRefusesAtStreamLimit,
// TestFactDiscardNewPerSubjectRefuses); a stream full by max_msgs or
// max_bytes with discard old removes its oldest message, as every publish
// into it does, the dead letter's first one included
// (TestFactDiscardOldRemovesTheStreamsOldest).

// UnsafeRedrive is a redrive refused before anything was sent: a message
// it would send would make the server act on other messages, or apply
// again what the original publish applied.
type UnsafeRedrive struct {
	DLQStream string
	// Why says what the server would do, and what to do instead.
	Why string
}

func (e *UnsafeRedrive) Error() string {
	return fmt.Sprintf("refusing to redrive %s: %s", e.DLQStream, e.Why)
}

func (e *UnsafeRedrive) Unwrap() error { return ErrInvalid }

// deadTTL is a dead letter's original TTL: its Nats-TTL as the DLQ keeps
// it (Jetctl-Orig-Nats-TTL), and the time the original was stored
// (Jetctl-Source-Time), from which the server counted it.
type deadTTL struct {
	// orig is {Nats-TTL: the original's}; nil when it had none.
	orig   nats.Header
	stored time.Time
}

// ttlOf reads a DLQ copy's header for the original's TTL. A TTL without a
// stored time to count it from is an error.
func ttlOf(h nats.Header) (deadTTL, error) {
	vs := h[envelope.OrigPrefix+envelope.TTLHeader]
	if len(vs) == 0 {
		return deadTTL{}, nil
	}
	d := deadTTL{orig: nats.Header{envelope.TTLHeader: vs}}
	stored, err := time.Parse(time.RFC3339Nano, h.Get(envelope.SourceTime))
	if err != nil {
		return deadTTL{}, fmt.Errorf("its TTL (Nats-TTL %s) cannot be counted: no time the original was stored (%s)", vs[0], envelope.SourceTime)
	}
	d.stored = stored
	if _, err := envelope.TTLAt(d.orig, d.stored, d.stored); err != nil {
		return deadTTL{}, err
	}
	return d, nil
}

// at is the TTL's state at now.
func (d deadTTL) at(now time.Time) envelope.TTLState {
	st, _ := envelope.TTLAt(d.orig, d.stored, now) // ttlOf checked it
	return st
}

// expiredReason says that a dead letter's TTL has passed.
func expiredReason(st envelope.TTLState, orig string) string {
	return fmt.Sprintf("its TTL (Nats-TTL %s) passed at %s; left in the DLQ (--include-expired sends it with that TTL again)",
		orig, st.Deadline.UTC().Format(time.RFC3339))
}

// redriveTTL sets the redrive's Nats-TTL in h (made by RedriveHeader, the
// original's still under Jetctl-Orig-Nats-TTL) at now: what is left of
// the original's, or, for a dead letter whose TTL has passed, the
// original's again with includeExpired. expired reports a TTL that has
// passed without includeExpired: the message is not sent. The original's
// TTL is not kept under Jetctl-Orig-: the copy's own is counted from its
// own stored time, which a later sweep of it keeps as Jetctl-Source-Time.
func redriveTTL(h nats.Header, d deadTTL, now time.Time, includeExpired bool) (ttl string, expired bool) {
	if d.orig == nil {
		return "", false
	}
	mode := envelope.TTLRemaining
	if includeExpired && d.at(now).Expired {
		mode = envelope.TTLKeep
	}
	if skip, _ := envelope.ApplyTTL(h, d.orig, d.stored, now, mode); skip {
		return "", true
	}
	delete(h, envelope.OrigPrefix+envelope.TTLHeader)
	return h.Get(envelope.TTLHeader), false
}

// isCounterLetter reports whether a DLQ copy is a dead letter of a counter
// stream: the original carried Nats-Incr.
func isCounterLetter(h nats.Header) bool {
	return len(h[envelope.OrigPrefix+"Nats-Incr"]) > 0
}

// streamsBySubject finds the stream a publish lands in: the one whose
// subjects match it (the server refuses streams whose subjects overlap),
// from one listing of the streams.
type streamsBySubject []*jetstream.StreamInfo

func listStreams(ctx context.Context, js jetstream.JetStream) (streamsBySubject, error) {
	var out streamsBySubject
	l := js.ListStreams(ctx)
	for si := range l.Info() {
		if len(si.Config.Subjects) > 0 {
			out = append(out, si)
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	return out, nil
}

// of is the stream subject is published into, nil when none takes it
// (the publish then fails, and the dead letter stays in the DLQ).
func (s streamsBySubject) of(subject string) *jetstream.StreamInfo {
	for _, si := range s {
		if streamread.SubjectMatchesAny(si.Config.Subjects, subject) {
			return si
		}
	}
	return nil
}

// found is what preflight found in the messages a redrive would send.
type found struct {
	counters []uint64 // DLQ seqs of dead letters of a counter stream
	// intoCounter is a counter stream the redrive would publish into.
	intoCounter string
	// ttls are the DLQ seqs of messages that would carry a TTL into
	// noTTL, a stream that does not allow TTLs.
	ttls  []uint64
	noTTL string
	// perSubject counts the messages that would go to each subject of a
	// stream with max_msgs_per_subject, subjects in the order they come.
	perSubject map[string]int
	subjects   []string
	limited    map[string]*jetstream.StreamInfo
	// unheard are the DLQ seqs of messages that would go to a subject of
	// an interest stream no consumer receives: unheardStream's
	// unheardSubject first.
	unheard                       []uint64
	unheardStream, unheardSubject string
}

// preflight reads the selection once, deciding each message as the
// redrive will (decide), and refuses the redrive before anything is sent
// when a message it would send reaches consumers other than its own
// (*RefusedRedrive), or would make the stream it lands in act on other
// messages or apply again what its original publish applied
// (*UnsafeRedrive).
func (r *redriver) preflight(ctx context.Context) error {
	streams, err := listStreams(ctx, r.js)
	if err != nil {
		return err
	}
	f := found{perSubject: map[string]int{}, limited: map[string]*jetstream.StreamInfo{}}
	// The consumers' filters of each interest stream the redrive lands in.
	filters := map[string][][]string{}
	var reach *RefusedRedrive
	if r.route != nil {
		reach = &RefusedRedrive{Stream: r.route.stream, Reach: map[string][]string{}}
	}
	admitted := 0
	err = eachIn(ctx, r.js, r.rng, r.cfg.Select, func(e Entry) error {
		if r.cfg.Max > 0 && admitted >= r.cfg.Max {
			return errMaxReached
		}
		it := r.decide(e)
		if len(it.others) > 0 && reach != nil {
			for _, o := range it.others {
				if !slices.Contains(reach.Reach[e.Consumer], o) {
					reach.Reach[e.Consumer] = append(reach.Reach[e.Consumer], o)
				}
			}
			admitted++
			return nil
		}
		if it.rec.Status != "" {
			return nil
		}
		admitted++
		if isCounterLetter(e.Message.Header) {
			f.counters = append(f.counters, e.DLQSeq)
		}
		si := streams.of(it.rec.Subject)
		if si == nil {
			return nil
		}
		cfg := si.Config
		if cfg.AllowMsgCounter && f.intoCounter == "" {
			f.intoCounter = cfg.Name
		}
		if it.ttl.orig != nil && !cfg.AllowMsgTTL && (f.noTTL == "" || f.noTTL == cfg.Name) {
			f.noTTL = cfg.Name
			f.ttls = append(f.ttls, e.DLQSeq)
		}
		if cfg.Retention == jetstream.InterestPolicy {
			fs, ok := filters[cfg.Name]
			if !ok {
				if fs, err = consumerFilters(ctx, r.js, cfg.Name); err != nil {
					return err
				}
				filters[cfg.Name] = fs
			}
			if !slices.ContainsFunc(fs, func(f []string) bool { return filtersOverlap(f, it.rec.Subject) }) {
				if f.unheard == nil {
					f.unheardStream, f.unheardSubject = cfg.Name, it.rec.Subject
				}
				f.unheard = append(f.unheard, e.DLQSeq)
			}
		}
		if cfg.MaxMsgsPerSubject > 0 && !(cfg.Discard == jetstream.DiscardNew && cfg.DiscardNewPerSubject) {
			if f.perSubject[it.rec.Subject] == 0 {
				f.subjects = append(f.subjects, it.rec.Subject)
				f.limited[it.rec.Subject] = si
			}
			f.perSubject[it.rec.Subject]++
		}
		return nil
	})
	if err != nil && !errors.Is(err, errMaxReached) {
		return err
	}
	if reach != nil && len(reach.Reach) > 0 {
		for _, o := range reach.Reach {
			slices.Sort(o)
		}
		return reach
	}
	refuse := func(format string, args ...any) error {
		return &UnsafeRedrive{DLQStream: r.cfg.DLQStream, Why: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(f.counters) > 0:
		return refuse("%s of a counter stream (Nats-Incr; DLQ %s): each increment was applied when it was first published, and a redrive cannot send it without applying it again; nothing was sent. "+
			"Leave them out (--filter '.headers[\"Jetctl-Orig-Nats-Incr\"] == null') or remove them (jetctl dlq purge --dlq-stream %s --filter '.headers[\"Jetctl-Orig-Nats-Incr\"] != null' --yes)",
			plural(len(f.counters), "dead letter", "dead letters"), seqList(f.counters), r.cfg.DLQStream)
	case f.intoCounter != "":
		return refuse("stream %q is a counter stream (allow_msg_counter): it stores increments only, and a redrive never applies one; nothing was sent", f.intoCounter)
	case len(f.ttls) > 0:
		return refuse("%s a TTL (Nats-TTL; DLQ %s) and stream %q, where %s, does not allow per-message TTLs (allow_msg_ttl); nothing was sent. "+
			"Allow them on %s, or leave those out (--filter '.headers[\"Jetctl-Orig-Nats-TTL\"] == null')",
			plural(len(f.ttls), "dead letter carries", "dead letters carry"), seqList(f.ttls), f.noTTL,
			map[bool]string{true: "it would go", false: "they would go"}[len(f.ttls) == 1], f.noTTL)
	case len(f.unheard) > 0:
		return refuse("stream %q keeps a message only while a consumer is to receive it (interest retention), and no consumer receives %s, where %s would go (DLQ %s): "+
			"the server would acknowledge the redrive and drop it, and the dead letter would be lost; nothing was sent. Create the consumer first, or redrive --to a subject one receives",
			f.unheardStream, f.unheardSubject, plural(len(f.unheard), "dead letter", "dead letters"), seqList(f.unheard))
	}
	return r.checkPerSubject(ctx, f)
}

// consumerFilters are the filters of stream's consumers, one list each
// (an empty list: every subject).
func consumerFilters(ctx context.Context, js jetstream.JetStream, stream string) ([][]string, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", stream, err)
	}
	var out [][]string
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		out = append(out, ConsumerFilters(ci.Config))
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: consumers: %w", stream, err)
	}
	return out, nil
}

// checkPerSubject refuses a redrive that would make a stream's
// max_msgs_per_subject remove a message: on a subject that holds its limit
// already, or that this redrive fills past it. (A stream with
// discard_new_per_subject refuses such a publish instead, and the dead
// letter stays in the DLQ: preflight left those out.)
func (r *redriver) checkPerSubject(ctx context.Context, f found) error {
	var full []string
	first := ""
	for _, subject := range f.subjects {
		si := f.limited[subject]
		st, err := r.js.Stream(ctx, si.Config.Name)
		if err != nil {
			return fmt.Errorf("stream %q: %w", si.Config.Name, err)
		}
		now, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return fmt.Errorf("stream %q: subject %s: %w", si.Config.Name, subject, err)
		}
		limit := si.Config.MaxMsgsPerSubject
		held := int64(now.State.Subjects[subject])
		if held+int64(f.perSubject[subject]) > limit {
			if first == "" {
				first = fmt.Sprintf("stream %q keeps %s per subject (max_msgs_per_subject), and %s holds %d and would get %d",
					si.Config.Name, plural(int(limit), "message", "messages"), subject, held, f.perSubject[subject])
			}
			full = append(full, subject)
		}
	}
	if len(full) == 0 {
		return nil
	}
	more := ""
	if len(full) > 1 {
		more = fmt.Sprintf(" (and %s more)", plural(len(full)-1, "subject", "subjects"))
	}
	return &UnsafeRedrive{DLQStream: r.cfg.DLQStream, Why: fmt.Sprintf(
		"%s%s: the server would remove the oldest there, messages this redrive never touched; nothing was sent. "+
			"Redrive those --to a subject with room, or raise max_msgs_per_subject", first, more)}
}

// seqList is "seq 4" or "seqs 4, 5, 6" (at most five, then "…").
func seqList(seqs []uint64) string {
	if len(seqs) == 1 {
		return "seq " + strconv.FormatUint(seqs[0], 10)
	}
	parts := make([]string, 0, 6)
	for i, s := range seqs {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strconv.FormatUint(s, 10))
	}
	return "seqs " + strings.Join(parts, ", ")
}

// plural is "1 <one>" or "<n> <many>".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
