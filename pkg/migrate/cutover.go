package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
)

// phaseHeld: the first hop of a replacement is done; its consumers wait,
// paused, for the second.
const phaseHeld = "held"

// pauseFor is how long the cutover pauses a consumer. A killed run
// resumes them when run again; until then they stay paused (a consumer
// that delivered on a stream about to be replaced would lose its acks).
const pauseFor = 7 * 24 * time.Hour

// cutover holds the source (its consumers paused, its subjects taken off
// it), lets the mirror copy the last messages, makes the target hold what
// the source holds, verifies it, re-seats the consumers on the target
// (paused) and promotes the target. It returns the target's info.
func (m *mover) cutover(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	tinfo, outageStart, err := m.hold(ctx, tinfo, st)
	if err != nil {
		return nil, err
	}
	log := logctx.From(ctx)
	step := func(what string) {
		log.Debug("cutover", "stream", m.srcName, "step", what, "since_start", time.Since(outageStart))
	}
	step("positions saved")
	if err := m.checkHeld(ctx, st); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	// 4. The last messages, the deletions, the comparison.
	sfinal, deleted, err := m.settle(ctx)
	if err != nil {
		return nil, err
	}
	step("settled")
	if err := m.verifyFinal(ctx, sfinal, deleted); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	step("verified")
	return m.seatAndPromote(ctx, st, outageStart)
}

// checkHeld runs the checks of a held source, before anything is copied
// or compared: the streams downstream have read it all, nothing left it
// that no consumer had been delivered, and nobody wrote to its
// placeholder (strays removes jetctl's own markers, so it comes last).
func (m *mover) checkHeld(ctx context.Context, st *state) error {
	if err := m.downstreamsCaughtUp(ctx, st); err != nil {
		return err
	}
	if err := m.vanished(ctx, st); err != nil {
		return err
	}
	return m.strays(ctx)
}

// HeaderEnd marks the end marker a cutover publishes to the source's
// placeholder subject (see carryEnd); it is deleted from both streams.
const HeaderEnd = "Jetctl-Migrate-End"

// strays looks at what the source holds on its placeholder subject, once
// the subjects are held: end markers a killed run left are deleted; any
// other message was published there by someone else during the cutover,
// and fails the move (exit 4, the source given back, the messages left in
// it for the operator to look at and purge). A stray write is refused the
// same way whether the run was interrupted or not.
func (m *mover) strays(ctx context.Context) error {
	placeholder := PlaceholderSubject(m.srcName)
	counts, err := subjectCounts(ctx, m.src.JS, m.srcName)
	if err != nil || counts[placeholder] == 0 {
		return err
	}
	s, err := m.src.JS.Stream(ctx, m.srcName)
	if err != nil {
		return err
	}
	var foreign []uint64
	for seq := uint64(1); ; seq++ {
		msg, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(placeholder))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("stream %q: %w", m.srcName, err)
		}
		seq = msg.Sequence
		if msg.Header.Get(HeaderEnd) == "" {
			foreign = append(foreign, seq)
			continue
		}
		if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("stream %q: deleting the end marker at seq %d: %w", m.srcName, seq, err)
		}
		if t, err := m.dst.JS.Stream(ctx, m.dstName); err == nil && m.seqs == nil {
			_ = t.DeleteMsg(ctx, seq) // copied, or not: settle compares what is left
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	return m.verifyError(fmt.Sprintf("%d messages were published to %s during the cutover (seq %s); nothing but jetctl may write there: look at them, purge them (jetctl's source keeps them) and run again",
		len(foreign), placeholder, seqList(foreign)))
}

// seqList is up to 5 sequences, comma-separated, "…" after them if more.
func seqList(seqs []uint64) string {
	var b strings.Builder
	for i, q := range seqs {
		if i == 5 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, q)
	}
	return b.String()
}

// giveBack gives the source its subjects and consumers back after err
// (abandon), and returns err, saying so if that failed too.
func (m *mover) giveBack(ctx context.Context, st *state, err error) error {
	if aerr := m.abandon(context.WithoutCancel(ctx), st); aerr != nil {
		return fmt.Errorf("%w; giving the source back also failed: %v", err, aerr)
	}
	return err
}

// seatAndPromote ends a verified cutover: the consumers are created on the
// target, paused, at their positions; then the target gets its final
// config and the subjects (the outage that began at outageStart ends).
// It returns the target's info.
func (m *mover) seatAndPromote(ctx context.Context, st *state, outageStart time.Time) (*jetstream.StreamInfo, error) {
	tinfo, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return nil, err
	}
	for i := range st.Downstreams {
		// What the target takes after the promotion comes after this.
		st.Downstreams[i].FromSeq = tinfo.State.LastSeq + 1
	}
	for _, c := range st.Consumers {
		if err := m.seat(ctx, m.seatedPosition(c), tinfo.State.LastSeq); err != nil {
			return nil, fmt.Errorf("%w; the source has its subjects and consumers back", m.giveBack(ctx, st, err))
		}
	}
	m.at("seated")
	// The target takes the subjects (a mirror's is removed); the state
	// stays until finish.
	st.Phase = phasePromoted
	st.Verified = &verifiedState{Digest: m.sum.Digest, Messages: m.sum.Messages, Bytes: m.sum.Bytes, FirstSeq: m.sum.FirstSeq, LastSeq: m.sum.LastSeq, Renumbered: !m.sum.SequencesKept, Promoted: time.Now().UTC()}
	final := st.Final
	final.Mirror = nil
	final.Sources = nil  // the counter way's source of the source
	final.Sealed = false // sealing, if declared, comes last
	final.MirrorDirect = false
	final, err = withState(final, st)
	if err != nil {
		return nil, err
	}
	if tinfo, err = updateStream(ctx, m.dst.JS, final); err != nil {
		return nil, fmt.Errorf("promoting %q: %w", m.dstName, err)
	}
	m.at("promoted")
	if !st.OutageStart.IsZero() && m.sum.Resumed {
		m.sum.WriteOutage = time.Since(st.OutageStart).Round(time.Microsecond)
	} else {
		m.sum.WriteOutage = since(outageStart)
	}
	return tinfo, nil
}

// hold keeps the consumers as they are in the state, pauses them, takes
// the subjects off the source (the write outage starts, at the time it
// returns) and saves where each consumer is, now that nothing is
// delivered.
func (m *mover) hold(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, time.Time, error) {
	var err error
	if st.Phase == phaseCopying {
		// 1. Keep what the consumers were before touching them.
		cs, err := durables(ctx, m.src.JS, m.srcName)
		if err != nil {
			return nil, time.Time{}, err
		}
		held := m.heldFlags(ctx)
		st.Consumers = st.Consumers[:0]
		for _, ci := range cs {
			paused := ci.Paused
			if p, ok := held[ci.Name]; ok {
				paused = p
			}
			st.Consumers = append(st.Consumers, savedConsumer{Config: ci.Config, Paused: paused})
		}
		if st.Downstreams, err = m.findDownstreams(ctx); err != nil {
			return nil, time.Time{}, err
		}
		st.Phase = phaseCutover
		st.OutageStart = time.Now().UTC()
		if tinfo, err = saveState(ctx, m.dst.JS, tinfo, st); err != nil {
			return nil, time.Time{}, err
		}
	}
	outageStart := time.Now()
	// 2. Pause the consumers, take the subjects off the source: the
	// write outage starts.
	for _, c := range st.Consumers {
		if _, err := m.src.JS.PauseConsumer(ctx, m.srcName, c.Config.Name, time.Now().Add(pauseFor)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, outageStart, fmt.Errorf("pausing %q on %q: %w", c.Config.Name, m.srcName, err)
		}
	}
	sinfo, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, outageStart, err
	}
	placeholder := []string{PlaceholderSubject(m.srcName)}
	if !slices.Equal(sinfo.Config.Subjects, placeholder) {
		c := sinfo.Config
		c.Subjects = placeholder
		if _, err := updateStream(ctx, m.src.JS, c); err != nil {
			return nil, outageStart, err
		}
	}
	if err := m.drainInbound(ctx); err != nil {
		return nil, outageStart, err
	}
	m.at("held")
	// 3. Where each consumer is, now that nothing is delivered.
	for i, c := range st.Consumers {
		ci, err := consumerInfo(ctx, m.src.JS, m.srcName, c.Config.Name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue // deleted meanwhile; it is not recreated
		}
		if err != nil {
			return nil, outageStart, err
		}
		st.Consumers[i].AckFloor, st.Consumers[i].Delivered, st.Consumers[i].Pending = ci.AckFloor.Stream, ci.Delivered.Stream, ci.NumAckPending
	}
	if tinfo, err = saveState(ctx, m.dst.JS, tinfo, st); err != nil {
		return nil, outageStart, err
	}
	return tinfo, outageStart, nil
}

// drainInbound returns once the source has stored every publish it took
// before its subjects were taken off it. The server queues what a stream
// takes and stores it after, so a publish accepted just before the swap
// can be stored just after it: frozen it is not yet, and a message stored
// after the copy is compared would be deleted with the source. A publish
// to the placeholder that expects an impossible last sequence goes
// through the same queue and is refused, storing nothing: its answer
// comes after everything queued before it.
func (m *mover) drainInbound(ctx context.Context) error {
	return retry.Do(ctx, retry.Policy{Attempts: 5, Pause: 100 * time.Millisecond, Retryable: retry.Transient}, func(ctx context.Context) error {
		_, err := m.src.JS.PublishMsg(ctx, &nats.Msg{Subject: PlaceholderSubject(m.srcName), Header: nats.Header{HeaderEnd: []string{"barrier"}}},
			jetstream.WithExpectStream(m.srcName), jetstream.WithExpectLastSequence(math.MaxUint64))
		var apiErr *jetstream.APIError
		if err == nil || errors.As(err, &apiErr) {
			// Answered by the stream, so after what it had queued: refused
			// as it should be (10071), or for another reason (10109, a
			// sealed stream, which takes nothing). Stored, against the
			// expectation, it carries HeaderEnd and strays removes it.
			return nil
		}
		return fmt.Errorf("stream %q: waiting for the publishes it took before the cutover: %w", m.srcName, err)
	})
}

// heldFlags returns the consumers' own pause flags kept by a first hop on
// the source, if it is one.
func (m *mover) heldFlags(ctx context.Context) map[string]bool {
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil
	}
	st, err := readState(si)
	if err != nil || st == nil || st.Phase != phaseHeld {
		return nil
	}
	out := map[string]bool{}
	for _, c := range st.Consumers {
		out[c.Config.Name] = c.Paused
	}
	return out
}

// sourceDeleted returns the source's info with the sequences it deleted
// between its first and last.
func (m *mover) sourceDeleted(ctx context.Context) (*jetstream.StreamInfo, map[uint64]bool, error) {
	sinfo, err := streamInfo(ctx, m.src.JS, m.srcName, jetstream.WithDeletedDetails(true))
	if err != nil {
		return nil, nil, err
	}
	deleted := make(map[uint64]bool, len(sinfo.State.Deleted))
	for _, d := range sinfo.State.Deleted {
		deleted[d] = true
	}
	return sinfo, deleted, nil
}

// settle waits for the mirror to copy the frozen source's last message and
// deletes from the target what the source deleted since it was copied,
// until the two hold the same sequences. It returns the source's final
// info and its deleted sequences.
func (m *mover) settle(ctx context.Context) (*jetstream.StreamInfo, map[uint64]bool, error) {
	for round := 0; ; round++ {
		sinfo, deleted, err := m.sourceDeleted(ctx)
		if err != nil {
			return nil, nil, err
		}
		lastPresent := uint64(0)
		if sinfo.State.Msgs > 0 {
			for s := sinfo.State.LastSeq; s >= sinfo.State.FirstSeq; s-- {
				if !deleted[s] {
					lastPresent = s
					break
				}
			}
		}
		tinfo, err := m.waitCopied(ctx, "catching up", lastPresent, sinfo.State.LastSeq, cutoverPoll)
		if err != nil {
			return nil, nil, err
		}
		if tinfo.State.LastSeq < sinfo.State.LastSeq && round < 10 {
			carried, err := m.carryEnd(ctx, sinfo)
			if err != nil {
				return nil, nil, err
			}
			if carried {
				continue
			}
		}
		changed, err := m.applyDeletes(ctx, sinfo, deleted)
		if err != nil {
			return nil, nil, err
		}
		if !changed || round >= 10 {
			return sinfo, deleted, nil
		}
	}
}

// carryEnd brings the target's last sequence up to the source's when the
// source's last messages were deleted (a mirror copies only what is
// stored, so its next sequence would be lower than the source's): it
// publishes a marker to the source's placeholder subject, waits for the
// mirror to copy it, and deletes it from both. It does nothing, and the
// consumers are seated no further than the target's end, when the marker
// could push a message out of the source (at its message or byte limit),
// could not be deleted, or would not be kept (interest retention).
func (m *mover) carryEnd(ctx context.Context, sinfo *jetstream.StreamInfo) (bool, error) {
	c, st := sinfo.Config, sinfo.State
	if c.Retention == jetstream.InterestPolicy || c.DenyDelete || c.Sealed ||
		(c.MaxMsgs > 0 && int64(st.Msgs) >= c.MaxMsgs) || (c.MaxBytes > 0 && int64(st.Bytes)+1024 > c.MaxBytes) {
		return false, nil
	}
	ack, err := m.src.JS.PublishMsg(ctx, &nats.Msg{Subject: PlaceholderSubject(m.srcName), Header: nats.Header{HeaderEnd: []string{"1"}}},
		jetstream.WithExpectStream(m.srcName), jetstream.WithExpectLastSequence(st.LastSeq))
	if err != nil {
		return false, fmt.Errorf("stream %q: marking its end: %w", m.srcName, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, werr := m.waitCopied(wctx, "catching up", ack.Sequence, ack.Sequence, cutoverPoll)
	cancel()
	s, err := m.src.JS.Stream(ctx, m.srcName)
	if err != nil {
		return false, err
	}
	if err := s.DeleteMsg(ctx, ack.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("stream %q: deleting the end marker: %w", m.srcName, err)
	}
	if werr != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, nil
	}
	t, err := m.dst.JS.Stream(ctx, m.dstName)
	if err != nil {
		return false, err
	}
	if err := t.DeleteMsg(ctx, ack.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("stream %q: deleting the end marker: %w", m.dstName, err)
	}
	return true, nil
}

// applyDeletes removes from the target what the source no longer holds:
// everything below its first sequence, and its deleted sequences.
func (m *mover) applyDeletes(ctx context.Context, sinfo *jetstream.StreamInfo, deleted map[uint64]bool) (bool, error) {
	tinfo, err := streamInfo(ctx, m.dst.JS, m.dstName, jetstream.WithDeletedDetails(true))
	if err != nil {
		return false, err
	}
	t, err := m.dst.JS.Stream(ctx, m.dstName)
	if err != nil {
		return false, err
	}
	changed := false
	first := sinfo.State.FirstSeq
	if sinfo.State.Msgs == 0 {
		first = sinfo.State.LastSeq + 1
	}
	if tinfo.State.Msgs > 0 && tinfo.State.FirstSeq < first {
		if err := t.Purge(ctx, jetstream.WithPurgeSequence(first)); err != nil {
			return false, fmt.Errorf("target %q: purging below seq %d: %w", m.dstName, first, err)
		}
		changed = true
	}
	gone := map[uint64]bool{}
	for _, d := range tinfo.State.Deleted {
		gone[d] = true
	}
	seqs := slices.Sorted(maps.Keys(deleted))
	for _, d := range seqs {
		if d < first || d > tinfo.State.LastSeq || gone[d] {
			continue
		}
		if err := t.DeleteMsg(ctx, d); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, fmt.Errorf("target %q: deleting seq %d: %w", m.dstName, d, err)
		}
		changed = true
	}
	return changed, nil
}

func subjectCounts(ctx context.Context, js jetstream.JetStream, name string) (map[string]uint64, error) {
	si, err := streamInfo(ctx, js, name, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return nil, err
	}
	if si.State.Subjects == nil {
		return map[string]uint64{}, nil
	}
	return si.State.Subjects, nil
}

// abandon gives the source its subjects and consumers back after a failed
// verification; the target stays for inspection.
func (m *mover) abandon(ctx context.Context, st *state) error {
	sinfo, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return err
	}
	c := sinfo.Config
	c.Subjects = st.SourceSubjects
	if st.SourceDirectOff {
		c.AllowDirect = false
		st.SourceDirectOff = false
	}
	if _, err := updateStream(ctx, m.src.JS, c); err != nil {
		return err
	}
	for _, sc := range st.Consumers {
		if !sc.Paused {
			if _, err := m.src.JS.ResumeConsumer(ctx, m.srcName, sc.Config.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return err
			}
		}
	}
	tinfo, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return err
	}
	st.Phase = phaseCopying
	st.Consumers = nil
	st.Downstreams = nil
	st.Snapshot = nil // the next run's copy begins from what the source holds then
	_, err = saveState(ctx, m.dst.JS, tinfo, st)
	return err
}

// seat creates consumer c on the target, paused, and moves it to where it
// was on the source: the next message it delivers is the one after its ack
// floor (messages acknowledged above the floor on a limits stream are
// delivered again; on workqueue and interest streams they are gone).
func (m *mover) seat(ctx context.Context, c savedConsumer, targetLast uint64) error {
	cc := c.Config
	cc.PauseUntil = ptr(time.Now().Add(pauseFor))
	next := min(c.AckFloor, targetLast) + 1
	reset := c.AckFloor > 0
	switch cc.DeliverPolicy {
	case jetstream.DeliverNewPolicy, jetstream.DeliverLastPolicy, jetstream.DeliverLastPerSubjectPolicy:
		// The reset refuses these policies; created as they are, they
		// would start at the target's end. One with messages left to
		// acknowledge starts at the first of them instead.
		if next <= targetLast {
			m.notes[cc.Name] = fmt.Sprintf("deliver policy %s became by_start_sequence from seq %d: the server resets no consumer with policy %s", cc.DeliverPolicy, next, cc.DeliverPolicy)
			cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, next
		}
		reset = false
	}
	cons, err := m.dst.JS.CreateOrUpdateConsumer(ctx, m.dstName, cc)
	if err != nil {
		// The consumer exists from an earlier run: it is paused; seat it again.
		if cons, err = m.dst.JS.Consumer(ctx, m.dstName, cc.Name); err != nil {
			return fmt.Errorf("creating consumer %q on %q: %w", cc.Name, m.dstName, err)
		}
	}
	_ = cons
	if reset {
		// Idempotent, so tried again when unanswered (a replicated
		// consumer on a busy cluster can take longer than a request).
		err := retry.Do(ctx, retry.Policy{Attempts: 5, Pause: 200 * time.Millisecond, Retryable: retry.Transient}, func(ctx context.Context) error {
			_, err := m.dst.JS.ResetConsumerToSequence(ctx, m.dstName, cc.Name, next)
			return err
		})
		if err != nil {
			return fmt.Errorf("consumer %q on %q: reset to seq %d: %w", cc.Name, m.dstName, next, err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// finish completes a promoted move: the source goes, the consumers resume
// (unless a second hop follows), the state leaves the target's metadata.
func (m *mover) finish(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*Summary, error) {
	if err := m.src.JS.DeleteStream(ctx, m.srcName); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("deleting %q: %w", m.srcName, err)
	}
	if err := m.sourcedUpTo(ctx, st.Downstreams); err != nil {
		return nil, err
	}
	// No advisory of either name is sent now: the source is gone and the
	// consumers on the target are paused.
	if err := m.finishDLQ(ctx); err != nil {
		return nil, err
	}
	m.sum.Downstreams = st.Downstreams
	m.explain(m.sum.Downstreams, true, st.Final)
	for _, c := range st.Consumers {
		m.sum.Consumers = append(m.sum.Consumers, ConsumerMove{Name: c.Config.Name, AckFloor: c.AckFloor, Pending: c.Pending, Changed: m.notes[c.Config.Name]})
		if m.hop.hold {
			continue
		}
		var err error
		if c.Paused && c.Config.PauseUntil != nil {
			_, err = m.dst.JS.PauseConsumer(ctx, m.dstName, c.Config.Name, *c.Config.PauseUntil)
		} else if _, err = m.dst.JS.ResumeConsumer(ctx, m.dstName, c.Config.Name); err == nil {
			// A resumed consumer serves neither a pull request already
			// waiting nor its push subscriber until a message arrives;
			// a reset to its own ack floor + 1 starts it at once.
			_, err = m.dst.JS.ResetConsumer(ctx, m.dstName, c.Config.Name)
		}
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("consumer %q on %q: %w", c.Config.Name, m.dstName, err)
		}
	}
	final := st.Final
	final.Mirror = nil
	final.Metadata = userMetadata(final.Metadata)
	if !m.hop.lockHeld {
		// A move of its own (not a hop of a replacement) leaves its mark.
		mark, err := json.Marshal(doneMark{Source: m.srcName, Mechanism: m.sum.Mechanism, Digest: m.sum.Digest, Bytes: m.sum.Bytes, Renumbered: !m.sum.SequencesKept, Finished: time.Now().UTC()})
		if err != nil {
			return nil, err
		}
		if final.Metadata == nil {
			final.Metadata = map[string]string{}
		}
		final.Metadata[doneKey] = string(mark)
	}
	if m.hop.hold {
		st.Phase = phaseHeld
		var err error
		if final, err = withState(final, st); err != nil {
			return nil, err
		}
	}
	if _, err := updateStream(ctx, m.dst.JS, final); err != nil {
		return nil, err
	}
	m.at("finished")
	m.sum.Cutover = true
	m.sum.Elapsed = since(m.started)
	return m.sum, nil
}

// consumerInfo is a durable's info, pull or push.
func consumerInfo(ctx context.Context, js jetstream.JetStream, stream, name string) (*jetstream.ConsumerInfo, error) {
	c, err := js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrNotPullConsumer) {
		pc, perr := js.PushConsumer(ctx, stream, name)
		if perr != nil {
			return nil, perr
		}
		return pc.CachedInfo(), nil
	}
	if err != nil {
		return nil, err
	}
	return c.CachedInfo(), nil
}
