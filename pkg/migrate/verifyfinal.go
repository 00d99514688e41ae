package migrate

// The cutover's verification: the frozen source's tail compared with the
// target's, then the two compared as wholes, from what the comparison
// kept (tally.go) and the streams' states.

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// verifyFinal compares the frozen source with the target: the messages
// copied since the live comparison one by one, then counts, first and last
// sequences, per-subject counts and that every message was compared.
func (m *mover) verifyFinal(ctx context.Context, sinfo *jetstream.StreamInfo, deleted map[uint64]bool) error {
	src, dst := m.readBoth(ctx, max(m.verified+1, sinfo.State.FirstSeq), sinfo.State.LastSeq)
	if err := m.compareFrozen(ctx, src, dst); err != nil {
		return err
	}
	return m.verifySets(ctx, sinfo, deleted, setChecks{})
}

// setChecks tune verifySets to how a move copies.
type setChecks struct {
	// lastSeq compares the last sequences. (The byte counts are not
	// compared: a mirror drops the Nats-Expected-* headers, so they differ
	// where the source stored some; every message is compared.)
	lastSeq bool
}

// verifySets compares the frozen source and the target as wholes, once
// every message of both has been compared: counts, first (and last)
// sequence, per-subject counts, the sequences each holds, and that each
// message either holds was compared (the tally's digest is then the
// summary's).
func (m *mover) verifySets(ctx context.Context, sinfo *jetstream.StreamInfo, deleted map[uint64]bool, c setChecks) error {
	tinfo, err := streamInfo(ctx, m.dst.JS, m.dstName, jetstream.WithDeletedDetails(true))
	if err != nil {
		return err
	}
	s, t := sinfo.State, tinfo.State
	tdel := map[uint64]bool{}
	for _, d := range t.Deleted {
		tdel[d] = true
	}
	// A replica behind its leader may have answered a direct get without a
	// message: what either holds and the comparison did not see is read
	// from the leaders.
	unseen, err := m.compareUnseen(ctx, s, deleted, t, tdel)
	if err != nil {
		return err
	}
	// A difference names the first sequence that differs.
	fail := func(format string, a ...any) error {
		what := fmt.Sprintf(format, a...)
		if seq, first, ok := firstDifference(s, deleted, t, tdel); ok && (unseen.what == "" || seq < unseen.seq) {
			what = first + " (" + what + ")"
		} else if unseen.what != "" {
			what = unseen.what + " (" + what + ")"
		}
		return m.verifyError(what)
	}
	if s.Msgs != t.Msgs {
		return fail("%d messages, the source %d", t.Msgs, s.Msgs)
	}
	if s.Msgs > 0 && s.FirstSeq != t.FirstSeq {
		return fail("first seq %d, the source %d", t.FirstSeq, s.FirstSeq)
	}
	if c.lastSeq && s.LastSeq != t.LastSeq {
		return fail("last seq %d, the source %d", t.LastSeq, s.LastSeq)
	}
	ssub, err := subjectCounts(ctx, m.src.JS, m.srcName)
	if err != nil {
		return err
	}
	if n := ssub[PlaceholderSubject(m.srcName)]; n > 0 {
		// Written there since the cutover began (strays looked before).
		return m.verifyError(fmt.Sprintf("%d messages were published to %s during the cutover; nothing but jetctl may write there: look at them, purge them (the source keeps them) and run again", n, PlaceholderSubject(m.srcName)))
	}
	tsub, err := subjectCounts(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return err
	}
	for subj, n := range ssub {
		if tsub[subj] != n {
			return fail("subject %q has %d messages, the source %d", subj, tsub[subj], n)
		}
	}
	if len(ssub) != len(tsub) {
		return fail("%d subjects, the source %d", len(tsub), len(ssub))
	}
	sn := m.tally.held(s.Msgs, s.FirstSeq, s.LastSeq, deleted)
	tn := m.tally.held(t.Msgs, t.FirstSeq, t.LastSeq, tdel)
	if sn != s.Msgs || tn != t.Msgs {
		return fail("read %d messages of the target's %d, %d of the source's %d", tn, t.Msgs, sn, s.Msgs)
	}
	// Every message either holds was compared and found the same: the two
	// are equal when they hold the same sequences.
	if _, first, ok := firstDifference(s, deleted, t, tdel); ok {
		return m.verifyError(first)
	}
	if unseen.what != "" {
		return m.verifyError(unseen.what)
	}
	m.sum.Digest = m.tally.digest()
	m.sum.Verified = true
	m.sum.Messages, m.sum.Bytes, m.sum.FirstSeq, m.sum.LastSeq = s.Msgs, s.Bytes, s.FirstSeq, s.LastSeq
	return nil
}

// difference is a sequence that differs, and how.
type difference struct {
	seq  uint64
	what string
}

// compareUnseen reads from both leaders, and compares, what either stream
// holds that the comparison did not see (none when the tally has every
// message of both; too many, past maxRechecks, are left for the counts to
// name). It returns the first that differs.
func (m *mover) compareUnseen(ctx context.Context, s jetstream.StreamState, sdel map[uint64]bool, t jetstream.StreamState, tdel map[uint64]bool) (difference, error) {
	var unseen []uint64
	collect := func(st jetstream.StreamState, del map[uint64]bool) bool {
		if m.tally.held(st.Msgs, st.FirstSeq, st.LastSeq, del) >= st.Msgs {
			return true
		}
		for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
			if del[seq] || m.tally.seen.has(seq) {
				continue
			}
			if unseen = append(unseen, seq); len(unseen) > maxRechecks {
				return false
			}
		}
		return true
	}
	if !collect(s, sdel) || !collect(t, tdel) {
		return difference{}, nil
	}
	slices.Sort(unseen)
	var first difference
	for _, seq := range slices.Compact(unseen) {
		sm, sIn, err := leaderMsg(ctx, m.src.JS, m.srcName, seq)
		if err != nil {
			return first, err
		}
		tm, tIn, err := leaderMsg(ctx, m.dst.JS, m.dstName, seq)
		if err != nil {
			return first, err
		}
		if sIn && tIn {
			if sh := m.hasher(true)(sm); sh == m.hasher(false)(tm) {
				m.tally.add(msgHash{Seq: seq, Hash: sh})
				continue
			}
		}
		if (sIn || tIn) && first.what == "" {
			first = difference{seq, differs(seq, sIn, tIn)}
			if sIn && tIn {
				first.what += ": " + m.whatDiffers(sm, tm)
			}
		}
	}
	return first, nil
}

// firstDifference is the first sequence that one of two streams holds and
// the other does not, by their states and deleted sequences, and says so
// as compareStreams would.
func firstDifference(s jetstream.StreamState, sdel map[uint64]bool, t jetstream.StreamState, tdel map[uint64]bool) (uint64, string, bool) {
	holds := func(st jetstream.StreamState, del map[uint64]bool, seq uint64) bool {
		return st.Msgs > 0 && seq >= st.FirstSeq && seq <= st.LastSeq && !del[seq]
	}
	// Where they may differ: each first sequence, the first held past the
	// shorter one's last, and the deleted sequences.
	var cands []uint64
	for _, st := range []jetstream.StreamState{s, t} {
		if st.Msgs > 0 {
			cands = append(cands, st.FirstSeq)
		}
	}
	if s.Msgs > 0 && t.Msgs > 0 {
		longer, del, from := s, sdel, t.LastSeq+1
		if t.LastSeq > s.LastSeq {
			longer, del, from = t, tdel, s.LastSeq+1
		}
		for seq := from; seq <= longer.LastSeq; seq++ {
			if !del[seq] {
				cands = append(cands, seq)
				break
			}
		}
	}
	var best uint64
	found := false
	try := func(seq uint64) {
		if (!found || seq < best) && holds(s, sdel, seq) != holds(t, tdel, seq) {
			best, found = seq, true
		}
	}
	for _, seq := range cands {
		try(seq)
	}
	for d := range sdel {
		try(d)
	}
	for d := range tdel {
		try(d)
	}
	if !found {
		return 0, "", false
	}
	return best, differs(best, holds(s, sdel, best), holds(t, tdel, best)), true
}
