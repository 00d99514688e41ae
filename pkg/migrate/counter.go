package migrate

// The counter way: a counter stream (allow_msg_counter) moves by sourcing.
//
// A 2.15 server refuses a counter stream as a mirror (10173), and no update
// makes a stream a counter (TestFactMirrorConfigRefusals), so the target
// is created as a counter stream that sources the source. It stores every
// message it sources again, under its own sequences, with the source's
// payload, the subject's total (TestFactCounterSourced: it applies the
// difference from the last total it had from the source, and rewrites
// Nats-Incr to that difference, Nats-Counter-Sources to its own record of
// the source's totals and Nats-Stream-Source to where the message came
// from). So:
//
//   - Every subject's total is kept, and verified: the target's last
//     message of each subject has the source's payload.
//   - Sequences are kept only where the source has no gaps: the target
//     starts at the source's first sequence (first_seq) and renumbers
//     past a gap. Each message of the target names the source's sequence
//     it came from (Nats-Stream-Source); the verification pairs them by
//     it, and a durable consumer's position (its ack floor, a start
//     sequence) is carried to the target's sequence of the same message.
//   - Timestamps are not kept: each message has the time it was sourced.
//   - The comparison leaves out the three headers the server rewrites.
//
// The rest is the mirror's move: live rounds while the source takes
// writes, the cutover that holds the source, lets the target source the
// last messages, deletes from it what the source deleted since (by the
// pairing), verifies, re-seats the consumers and promotes the target (its
// source removed, the subjects added). While it sources, the target has
// no limits (a limit would take out what the source still holds); the
// final config comes with the promotion.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// mechanismSource is the state's and the summary's name for the counter
// way; CopyReasonCounter the summary's reason for it.
const (
	mechanismSource   = "source"
	CopyReasonCounter = "counter"
)

// Headers the server writes on what a counter stream sources
// (TestFactCounterSourced), left out of the counter way's comparison.
const (
	headerStreamSource   = "Nats-Stream-Source"
	headerCounterSources = "Nats-Counter-Sources"
	headerIncr           = "Nats-Incr"
)

// counterWay is the move of a counter stream, by sourcing.
func (m *mover) counterWay() way {
	m.seqs = &seqMap{}
	return way{
		mechanism: mechanismSource,
		check: func(final jetstream.StreamConfig, _ *jetstream.StreamInfo) error {
			if !final.AllowMsgCounter {
				return fmt.Errorf("%w: stream %q is a counter stream and the target would not be: allow_msg_counter cannot change in a move", ErrInvalid, m.srcName)
			}
			return nil
		},
		create: m.createSourced,
		live: func(ctx context.Context, si *jetstream.StreamInfo) error {
			return m.liveRounds(ctx, si, m.counterRound)
		},
		cutover: m.counterCutover,
	}
}

// counterStream says whether this move is a counter stream's: the source
// is one, or the target is a counter way's begun before.
func (m *mover) counterStream(ctx context.Context) bool {
	if ti, err := m.dst.JS.Stream(ctx, m.dstName); err == nil {
		if st, err := readState(ti.CachedInfo()); err == nil && st != nil && st.Source == m.srcName {
			return st.Mechanism == mechanismSource
		}
	}
	si, err := m.src.JS.Stream(ctx, m.srcName)
	return err == nil && si.CachedInfo().Config.AllowMsgCounter
}

// sourcedConfig is the target while it sources the source: final's
// settings without subjects, limits, transforms or republish, sourcing
// the source from its first sequence on.
func sourcedConfig(final jetstream.StreamConfig, si *jetstream.StreamInfo, api string) jetstream.StreamConfig {
	c := final
	c.Subjects = nil
	c.Mirror = nil
	c.Sources = []*jetstream.StreamSource{{Name: si.Config.Name}}
	if api != "" {
		c.Sources[0].External = &jetstream.ExternalStream{APIPrefix: api}
	}
	c.SubjectTransform = nil
	c.RePublish = nil
	c.FirstSeq = 0
	if si.State.FirstSeq > 1 {
		// Sequences are kept where the source has no gaps.
		c.FirstSeq = si.State.FirstSeq
	}
	c.MaxMsgs, c.MaxBytes, c.MaxMsgsPerSubject, c.MaxMsgSize = -1, -1, -1, -1
	c.MaxAge = 0
	c.Sealed, c.DenyDelete, c.DenyPurge = false, false, false
	c.AllowDirect = true
	c.MirrorDirect = false
	return c
}

// createSourced makes the target: a counter stream sourcing the source,
// with the move's state.
func (m *mover) createSourced(ctx context.Context, si *jetstream.StreamInfo) (jetstream.Stream, *state, error) {
	final := m.finalConfig(si)
	st := &state{Source: m.srcName, SourceAPI: m.api, Phase: phaseCopying, Mechanism: mechanismSource, Final: final, SourceSubjects: si.Config.Subjects}
	sc, err := withState(sourcedConfig(final, si, m.api), st)
	if err != nil {
		return nil, nil, err
	}
	t, err := m.dst.JS.CreateStream(ctx, sc)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, nil, fmt.Errorf("%w: stream %q was created by someone else just now", ErrBusy, m.dstName)
		}
		return nil, nil, fmt.Errorf("creating %q: %w", m.dstName, err)
	}
	return t, st, nil
}

// counterRound is one live round of the counter way: it waits for the
// target to source what the source holds, compares, and marks it
// verified.
func (m *mover) counterRound(ctx context.Context, si *jetstream.StreamInfo) error {
	m.at("copying")
	want := si.State.LastSeq
	from := max(si.State.FirstSeq, m.verified+1)
	ti, err := m.waitSourced(ctx, "copying", want, pollEvery)
	if err != nil {
		return err
	}
	if si.State.Msgs == 0 || want < from {
		return nil
	}
	src := streamHashes(ctx, m.src.JS, m.srcName, from, want, counterHash)
	dst := m.sourcedHashes(ctx, m.sourcedFrom(), ti.State.LastSeq, want)
	return m.acceptStreams(ctx, from, src, dst)
}

// sourcedFrom is the target's sequence a comparison reads on from: the
// one after the target's message of the last source sequence verified.
func (m *mover) sourcedFrom() uint64 {
	if t, ok := m.seqs.atOrBelow(m.verified); ok {
		return t + 1
	}
	return 1
}

// waitSourced waits until the target has sourced the source's message
// want (or, want gone from the source, until it reports no lag twice in a
// row), reporting progress.
func (m *mover) waitSourced(ctx context.Context, phase string, want uint64, every time.Duration) (*jetstream.StreamInfo, error) {
	w := m.watch(phase, want)
	idle := 0
	for {
		ti, err := w.poll(ctx)
		if err != nil {
			return nil, err
		}
		last, err := m.lastSourced(ctx, ti)
		if err != nil {
			return nil, err
		}
		if last >= want {
			// Its info again: it was read before the last message was.
			return streamInfo(ctx, m.dst.JS, m.dstName)
		}
		if caughtUp(ti) {
			idle++
		} else {
			idle = 0
		}
		if idle >= 2 {
			// Caught up short of want: want may have left the source.
			if gone, err := m.gone(ctx, want); err != nil || gone {
				if err != nil {
					return nil, err
				}
				return streamInfo(ctx, m.dst.JS, m.dstName)
			}
		}
		if err := retry.Sleep(ctx, every); err != nil {
			return nil, err
		}
	}
}

// lastSourced is the source's sequence of the last message the target
// sourced, 0 for none.
func (m *mover) lastSourced(ctx context.Context, ti *jetstream.StreamInfo) (uint64, error) {
	if ti.State.Msgs == 0 {
		return 0, nil
	}
	msg, err := jsapi.New(m.dst.JS).MsgGet(ctx, m.dstName, jsapi.MsgGetRequest{LastFor: ">"})
	switch {
	case errors.Is(err, jsapi.ErrNoMessage):
		return 0, nil
	case err != nil:
		if retry.Transient(err) {
			return 0, nil // looked at again at the next poll
		}
		return 0, fmt.Errorf("target %q: its last message: %w", m.dstName, err)
	}
	return m.sourcedSeq(msg)
}

// sourcedSeq is the source's sequence of msg, a message the target
// sourced (Nats-Stream-Source: "<stream>[:<hash>] <seq> ...").
func (m *mover) sourcedSeq(msg *envelope.Message) (uint64, error) {
	f := strings.Fields(msg.Header.Get(headerStreamSource))
	if len(f) < 2 || strings.SplitN(f[0], ":", 2)[0] != m.srcName {
		return 0, m.verifyError(fmt.Sprintf("seq %d of %s was not sourced from %s (%s %q)", msg.Seq, m.dstName, m.srcName, headerStreamSource, msg.Header.Get(headerStreamSource)))
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, m.verifyError(fmt.Sprintf("seq %d of %s: %s %q", msg.Seq, m.dstName, headerStreamSource, msg.Header.Get(headerStreamSource)))
	}
	return seq, nil
}

// sourcedHashes reads the target from..to and passes on each message's
// counterHash under the source's sequence it came from, noting the
// pairing; end is the source's sequence up to which the target is known
// to hold everything the source held.
func (m *mover) sourcedHashes(ctx context.Context, from, to, end uint64) *hashStream {
	return produce(ctx, func(ctx context.Context, e *emitter) (uint64, error) {
		if to < from || to == 0 {
			return end, nil
		}
		r, err := streamread.Resolve(ctx, m.dst.JS, streamread.Config{Stream: m.dstName, FromSeq: from, ToSeq: to})
		if err != nil {
			return 0, fmt.Errorf("stream %q: %w", m.dstName, err)
		}
		err = streamread.Read(ctx, m.dst.JS, r, func(msg *envelope.Message) error {
			seq, err := m.sourcedSeq(msg)
			if err != nil {
				return err
			}
			m.seqs.add(seq, msg.Seq)
			return e.emit(msgHash{Seq: seq, Hash: counterHash(msg)})
		})
		if err != nil {
			return 0, fmt.Errorf("stream %q: reading seq %d..%d: %w", m.dstName, from, to, err)
		}
		return end, nil
	})
}

// counterHash hashes a message of a counter stream as the counter way
// compares it: subject, payload (the total) and headers, without those the
// server rewrites on what it sources, nor the time.
func counterHash(msg *envelope.Message) uint64 {
	h := msg.Header
	if len(h[headerStreamSource])+len(h[headerCounterSources])+len(h[headerIncr]) > 0 {
		h = maps.Clone(h)
		delete(h, headerStreamSource)
		delete(h, headerCounterSources)
		delete(h, headerIncr)
	}
	return hashMsg(&envelope.Message{Subject: msg.Subject, Header: h, Data: msg.Data}, sourcedHash)
}

// counterCutover holds the source, lets the target source its last
// messages, deletes from the target what the source deleted since it was
// sourced, verifies (every message and every subject's total), seats the
// consumers at the target's sequences of their positions and promotes the
// target.
func (m *mover) counterCutover(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	tinfo, outageStart, err := m.hold(ctx, tinfo, st)
	if err != nil {
		return nil, err
	}
	if err := m.checkHeld(ctx, st); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	sinfo, deleted, err := m.sourceDeleted(ctx)
	if err != nil {
		return nil, err
	}
	ti, err := m.waitSourced(ctx, "catching up", sinfo.State.LastSeq, cutoverPoll)
	if err != nil {
		return nil, err
	}
	// The tail: what the source deleted since it was sourced is in the
	// target only, and deleted from it next.
	from := max(m.verified+1, sinfo.State.FirstSeq)
	src := streamHashes(ctx, m.src.JS, m.srcName, from, sinfo.State.LastSeq, counterHash)
	dst := m.sourcedHashes(ctx, m.sourcedFrom(), ti.State.LastSeq, sinfo.State.LastSeq)
	if err := m.acceptStreams(ctx, from, src, dst); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	if err := m.counterDeletes(ctx, sinfo, deleted); err != nil {
		return nil, err
	}
	if err := m.counterSets(ctx, sinfo, deleted); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	return m.seatAndPromote(ctx, st, outageStart)
}

// counterDeletes deletes from the target the messages whose source
// message the frozen source no longer holds: those below its first
// sequence (one purge) and its deleted ones.
func (m *mover) counterDeletes(ctx context.Context, sinfo *jetstream.StreamInfo, deleted map[uint64]bool) error {
	t, err := m.dst.JS.Stream(ctx, m.dstName)
	if err != nil {
		return fmt.Errorf("target %q: %w", m.dstName, err)
	}
	first := sinfo.State.FirstSeq
	if sinfo.State.Msgs == 0 {
		first = sinfo.State.LastSeq + 1
	}
	keep, ok := m.seqs.atOrAbove(first)
	if !ok {
		keep = m.seqs.next()
	}
	tinfo, err := streamInfo(ctx, m.dst.JS, m.dstName, jetstream.WithDeletedDetails(true))
	if err != nil {
		return err
	}
	if tinfo.State.Msgs > 0 && tinfo.State.FirstSeq < keep {
		if err := t.Purge(ctx, jetstream.WithPurgeSequence(keep)); err != nil {
			return fmt.Errorf("target %q: purging below seq %d: %w", m.dstName, keep, err)
		}
	}
	gone := map[uint64]bool{}
	for _, d := range tinfo.State.Deleted {
		gone[d] = true
	}
	seqs := make([]uint64, 0, len(deleted))
	for d := range deleted {
		seqs = append(seqs, d)
	}
	slices.Sort(seqs)
	for _, d := range seqs {
		tseq, ok := m.seqs.target(d)
		if !ok || tseq < keep || gone[tseq] {
			continue
		}
		if err := t.DeleteMsg(ctx, tseq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("target %q: deleting seq %d (the source's seq %d): %w", m.dstName, tseq, d, err)
		}
	}
	return nil
}

// counterSets compares the frozen source and the target as wholes, once
// every message of the source has been compared with the target's of the
// same source sequence: counts, per-subject counts, every subject's total
// (its last message's payload), and that every message the source holds
// was compared.
func (m *mover) counterSets(ctx context.Context, sinfo *jetstream.StreamInfo, deleted map[uint64]bool) error {
	tinfo, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return err
	}
	s, t := sinfo.State, tinfo.State
	if n := m.tally.held(s.Msgs, s.FirstSeq, s.LastSeq, deleted); n != s.Msgs {
		return m.verifyError(fmt.Sprintf("compared %d messages of the source's %d", n, s.Msgs))
	}
	if s.Msgs != t.Msgs {
		return m.verifyError(fmt.Sprintf("%d messages, the source %d", t.Msgs, s.Msgs))
	}
	ssub, err := subjectCounts(ctx, m.src.JS, m.srcName)
	if err != nil {
		return err
	}
	if n := ssub[PlaceholderSubject(m.srcName)]; n > 0 {
		return m.verifyError(fmt.Sprintf("%d messages were published to %s during the cutover; nothing but jetctl may write there: look at them, purge them (the source keeps them) and run again", n, PlaceholderSubject(m.srcName)))
	}
	tsub, err := subjectCounts(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return err
	}
	subjects := make([]string, 0, len(ssub))
	for subj, n := range ssub {
		if tsub[subj] != n {
			return m.verifyError(fmt.Sprintf("subject %q has %d messages, the source %d", subj, tsub[subj], n))
		}
		subjects = append(subjects, subj)
	}
	if len(ssub) != len(tsub) {
		return m.verifyError(fmt.Sprintf("%d subjects, the source %d", len(tsub), len(ssub)))
	}
	if err := m.sameTotals(ctx, subjects); err != nil {
		return err
	}
	m.sum.Digest = m.tally.digest()
	m.sum.Verified = true
	m.sum.SequencesKept = !m.seqs.renumbered()
	m.sum.Messages, m.sum.Bytes, m.sum.FirstSeq, m.sum.LastSeq = s.Msgs, s.Bytes, s.FirstSeq, s.LastSeq
	return nil
}

// totalsBatch is how many subjects one multi_last direct get asks for.
const totalsBatch = 256

// sameTotals compares every subject's total, its last message's payload,
// in the source and the target.
func (m *mover) sameTotals(ctx context.Context, subjects []string) error {
	slices.Sort(subjects)
	read := func(js jetstream.JetStream, stream string, batch []string) (map[string]string, error) {
		out := make(map[string]string, len(batch))
		err := streamread.DirectGet(ctx, js, stream, jsapi.MsgGetRequest{MultiLastFor: batch, Batch: len(batch)}, func(msg *envelope.Message) error {
			out[msg.Subject] = string(msg.Data)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("stream %q: the subjects' totals: %w", stream, err)
		}
		return out, nil
	}
	for i := 0; i < len(subjects); i += totalsBatch {
		batch := subjects[i:min(i+totalsBatch, len(subjects))]
		st, err := read(m.src.JS, m.srcName, batch)
		if err != nil {
			return err
		}
		tt, err := read(m.dst.JS, m.dstName, batch)
		if err != nil {
			return err
		}
		for _, subj := range batch {
			if st[subj] != tt[subj] {
				return m.verifyError(fmt.Sprintf("subject %q totals %s, the source %s", subj, tt[subj], st[subj]))
			}
		}
	}
	return nil
}

// seatedPosition is consumer c with its positions (the source's
// sequences) carried to the target's sequences of the same messages, for
// the counter way; as it is for the others.
func (m *mover) seatedPosition(c savedConsumer) savedConsumer {
	if m.seqs == nil {
		return c
	}
	var notes []string
	if c.AckFloor > 0 {
		floor, _ := m.seqs.atOrBelow(c.AckFloor)
		if floor != c.AckFloor {
			notes = append(notes, fmt.Sprintf("ack floor seq %d of %s is seq %d of %s", c.AckFloor, m.srcName, floor, m.dstName))
		}
		c.AckFloor = floor
	}
	if c.Config.DeliverPolicy == jetstream.DeliverByStartSequencePolicy && c.Config.OptStartSeq > 0 {
		start, ok := m.seqs.atOrAbove(c.Config.OptStartSeq)
		if !ok {
			start = m.seqs.next()
		}
		if start != c.Config.OptStartSeq {
			notes = append(notes, fmt.Sprintf("start seq %d became %d", c.Config.OptStartSeq, start))
		}
		c.Config.OptStartSeq = start
	}
	if len(notes) > 0 {
		m.notes[c.Config.Name] = strings.Join(notes, "; ") + " (a counter stream is renumbered where the source has gaps)"
	}
	return c
}

// seqMap pairs the source's sequences with the target's for the counter
// way, as runs of messages that follow each other in both: one run when
// the source has no gaps, one more for each gap.
type seqMap struct {
	mu   sync.Mutex
	runs []seqRun
}

// seqRun is n messages, at src.. in the source and dst.. in the target.
type seqRun struct{ src, dst, n uint64 }

// add pairs source sequence src with target sequence dst; a pairing of a
// target sequence already paired (a target read again) is let be.
func (s *seqMap) add(src, dst uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := len(s.runs); k > 0 {
		last := &s.runs[k-1]
		if dst < last.dst+last.n {
			return
		}
		if src == last.src+last.n && dst == last.dst+last.n {
			last.n++
			return
		}
	}
	s.runs = append(s.runs, seqRun{src, dst, 1})
}

// next is the target sequence after the last paired, 1 before any.
func (s *seqMap) next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.runs) == 0 {
		return 1
	}
	last := s.runs[len(s.runs)-1]
	return last.dst + last.n
}

// target is the target's sequence of the source's src, if paired.
func (s *seqMap) target(src uint64) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].src+s.runs[i].n > src })
	if i == len(s.runs) || s.runs[i].src > src {
		return 0, false
	}
	return s.runs[i].dst + (src - s.runs[i].src), true
}

// atOrBelow is the target's sequence of the last message paired whose
// source sequence is src or lower (0, false for none).
func (s *seqMap) atOrBelow(src uint64) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].src > src })
	if i == 0 {
		return 0, false
	}
	r := s.runs[i-1]
	return r.dst + min(src-r.src, r.n-1), true
}

// atOrAbove is the target's sequence of the first message paired whose
// source sequence is src or higher.
func (s *seqMap) atOrAbove(src uint64) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].src+s.runs[i].n > src })
	if i == len(s.runs) {
		return 0, false
	}
	r := s.runs[i]
	if src <= r.src {
		return r.dst, true
	}
	return r.dst + (src - r.src), true
}

// renumbered says whether a message paired has another sequence in the
// target than in the source.
func (s *seqMap) renumbered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if r.src != r.dst {
			return true
		}
	}
	return false
}
