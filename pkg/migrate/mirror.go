package migrate

// The move through a mirror: the target's config, its creation, and
// the live rounds that wait for the mirror and compare behind it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
)

// unheardFor is how long a mirror may go without hearing from its origin
// before the move gives up: a server cannot tell that it has no route to
// another domain, its mirror just never hears.
const unheardFor = 15 * time.Second

// mirrorRefuses are the settings a 2.15 server refuses on a mirror and
// takes in the update that promotes it (TestFactMirrorConfigRefusals):
// the mirror is created without them and the promotion, which sends the
// final config, turns them on again. A mirror takes allow_msg_ttl (it
// keeps and honours each message's Nats-TTL, TestFactMirrorKeepsAndHonoursTTL)
// and persist_mode, which no update may change, so both are the final
// config's from the start. allow_msg_counter it refuses and no update may
// turn on: a counter stream moves by the counter way (counter.go).
var mirrorRefuses = []struct {
	field string
	clear func(*jetstream.StreamConfig)
}{
	{"allow_atomic", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = false }},
	{"allow_batched", func(c *jetstream.StreamConfig) { c.AllowBatchPublish = false }},
	{"allow_msg_schedules", func(c *jetstream.StreamConfig) { c.AllowMsgSchedules = false }},
	{"subject_delete_marker_ttl", func(c *jetstream.StreamConfig) { c.SubjectDeleteMarkerTTL = 0 }},
}

// mirrorConfig is the target while it copies: final's settings as a mirror
// of the source, without what a mirror may not have (subjects, first
// sequence, transforms, mirrorRefuses) and without what would stop the
// cutover deleting from it (deny delete and purge); those come with the
// promotion.
func mirrorConfig(final jetstream.StreamConfig, source, api string) (jetstream.StreamConfig, error) {
	if final.AllowMsgCounter {
		return final, fmt.Errorf("%w: a counter stream cannot be mirrored (TestFactCounterSourced)", ErrInvalid)
	}
	c := final
	c.Subjects = nil
	c.Sources = nil
	c.SubjectTransform = nil
	c.RePublish = nil
	c.FirstSeq = 0
	c.Sealed = false
	c.DenyDelete = false
	c.DenyPurge = false
	c.AllowDirect = true
	c.MirrorDirect = false
	if c.Retention == jetstream.InterestPolicy {
		// An interest mirror drops what no consumer wants yet; the
		// consumers come at the cutover, and the retention with the
		// promotion (limits to interest changes in place).
		c.Retention = jetstream.LimitsPolicy
	}
	for _, r := range mirrorRefuses {
		r.clear(&c)
	}
	c.Mirror = &jetstream.StreamSource{Name: source}
	if api != "" {
		c.Mirror.External = &jetstream.ExternalStream{APIPrefix: api}
	}
	return c, nil
}

// create makes the target: a mirror of the source, with the move's state.
func (m *mover) create(ctx context.Context, si *jetstream.StreamInfo) (jetstream.Stream, *state, error) {
	final := m.finalConfig(si)
	st := &state{Source: m.srcName, SourceAPI: m.api, Phase: phaseCopying, Final: final, SourceSubjects: si.Config.Subjects}
	mc, _ := mirrorConfig(final, m.srcName, m.api)
	mc, err := withState(mc, st)
	if err != nil {
		return nil, nil, err
	}
	t, err := m.dst.JS.CreateStream(ctx, mc)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, nil, fmt.Errorf("%w: stream %q was created by someone else just now", ErrBusy, m.dstName)
		}
		return nil, nil, fmt.Errorf("creating %q: %w", m.dstName, err)
	}
	if c := t.CachedInfo().Config; c.MirrorDirect {
		// The server turns mirror_direct on for a mirror of a stream with
		// allow_direct: the copy, lagging, would answer direct gets
		// addressed to the source.
		c.MirrorDirect = false
		if _, err := updateStream(ctx, m.dst.JS, c); err != nil {
			return nil, nil, err
		}
		if t, err = m.dst.JS.Stream(ctx, m.dstName); err != nil {
			return nil, nil, err
		}
	}
	return t, st, nil
}

// copyAndVerify waits for the mirror to copy what the source holds now,
// then compares the copy with the source, message by message; while the
// source keeps taking writes it goes round again, so that the cutover has
// only a short tail left to compare.
func (m *mover) copyAndVerify(ctx context.Context, si *jetstream.StreamInfo) error {
	return m.liveRounds(ctx, si, m.mirrorRound)
}

// mirrorRound is one live round of a mirror's copy: it waits for the
// mirror to copy what the source holds, compares, and marks it verified.
func (m *mover) mirrorRound(ctx context.Context, si *jetstream.StreamInfo) error {
	want := si.State.LastSeq
	if si.State.Msgs == 0 {
		want = 0
	} else if _, err := getMsg(ctx, m.src.JS, m.srcName, want); err != nil {
		// The last sequence was deleted: wait for the last one stored.
		want = 0
	}
	m.at("copying")
	from := max(si.State.FirstSeq, m.verified+1)
	if want > 0 && want >= from {
		src := streamHashes(ctx, m.src.JS, m.srcName, from, want, timedHash)
		return m.acceptStreams(ctx, from, src, m.behindMirror(ctx, from, want, si.State.LastSeq))
	}
	tinfo, err := m.waitCopied(ctx, "copying", want, si.State.LastSeq, pollEvery)
	if err != nil {
		return err
	}
	if to := min(tinfo.State.LastSeq, si.State.LastSeq); to >= from {
		src, dst := m.readBoth(ctx, from, to)
		return m.acceptStreams(ctx, from, src, dst)
	}
	return nil
}

// waitCopied waits until the target holds seq want (or, with want 0,
// until its mirror reports no lag twice in a row), reporting progress.
func (m *mover) waitCopied(ctx context.Context, phase string, want, total uint64, every time.Duration) (*jetstream.StreamInfo, error) {
	w := m.watch(phase, total)
	idle := 0
	for {
		ti, err := w.poll(ctx)
		if err != nil {
			return nil, err
		}
		if want > 0 && ti.State.LastSeq >= want {
			return ti, nil
		}
		if caughtUp(ti) {
			idle++
		} else {
			idle = 0
		}
		if idle >= 2 && want == 0 {
			return ti, nil
		}
		if idle >= 2 {
			// Caught up short of want: want may be gone from the source
			// (deleted, expired) after it was looked at; then the mirror
			// never copies it.
			if gone, err := m.gone(ctx, want); err != nil || gone {
				return ti, err
			}
		}
		if err := retry.Sleep(ctx, every); err != nil {
			return nil, err
		}
	}
}

// caughtUp says whether a mirror (or the counter way's sourced target)
// reports that it has copied everything its origin holds: no lag, and
// heard from lately.
func caughtUp(ti *jetstream.StreamInfo) bool {
	mi := replication(ti)
	return mi != nil && mi.Error == nil && mi.Lag == 0 && mi.Active >= 0 && mi.Active < time.Minute
}

// replication is how the target reads the source: its mirror, or the
// counter way's one source; nil for neither.
func replication(ti *jetstream.StreamInfo) *jetstream.StreamSourceInfo {
	if ti.Mirror != nil {
		return ti.Mirror
	}
	if len(ti.Sources) == 1 {
		return ti.Sources[0]
	}
	return nil
}

// gone says whether seq is no longer in the source (its leader says so).
func (m *mover) gone(ctx context.Context, seq uint64) (bool, error) {
	_, err := getMsg(ctx, m.src.JS, m.srcName, seq)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true, nil
	case err != nil && !retry.Transient(err):
		return false, fmt.Errorf("stream %q: seq %d: %w", m.srcName, seq, err)
	}
	return false, nil
}

// copyWatch looks at the copy's progress: it reports it, and fails on a
// mirror error or an origin the mirror never hears from.
type copyWatch struct {
	m        *mover
	phase    string
	total    uint64
	start    time.Time
	startSeq uint64
	polled   bool
	// errSince is when the mirror began to report the error it reports
	// now; warned, that it was said on stderr.
	errSince time.Time
	warned   bool
}

// mirrorErrorGrace is how long a mirror may report an error before the
// move gives up: after a server restart a mirror reports its origin "not
// found" for a while (about 12 s seen), and then copies on.
var mirrorErrorGrace = time.Minute

// mirrorError says whether the error the mirror reports, if any, ends the
// move: only once it has lasted mirrorErrorGrace. The first time it warns
// on stderr that the move waits.
func (w *copyWatch) mirrorError(ctx context.Context, ti *jetstream.StreamInfo, now time.Time) error {
	mi := replication(ti)
	if mi == nil || mi.Error == nil {
		w.errSince, w.warned = time.Time{}, false
		return nil
	}
	err := fmt.Errorf("target %q: mirror of %q: %s", w.m.dstName, w.m.srcName, mi.Error.Description)
	if w.errSince.IsZero() {
		w.errSince = now
	}
	if lasted := now.Sub(w.errSince); lasted >= mirrorErrorGrace {
		return fmt.Errorf("%w (for %s)", err, lasted.Round(time.Second))
	}
	if !w.warned {
		w.warned = true
		logctx.From(ctx).Warn("the mirror reports an error; waiting for it to clear (a server restarting?)", "error", err, "gives_up_after", mirrorErrorGrace)
	}
	return nil
}

func (m *mover) watch(phase string, total uint64) *copyWatch {
	return &copyWatch{m: m, phase: phase, total: total, start: time.Now()}
}

func (w *copyWatch) poll(ctx context.Context) (*jetstream.StreamInfo, error) {
	m := w.m
	ti, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return nil, err
	}
	if !w.polled {
		w.startSeq, w.polled = ti.State.LastSeq, true
	}
	if err := w.mirrorError(ctx, ti, time.Now()); err != nil {
		return nil, err
	}
	if mi := replication(ti); mi != nil && mi.Active < 0 && time.Since(w.start) > unheardFor {
		return nil, fmt.Errorf("%w: the mirror %q has not heard from %q in %s (through %q); the state is kept: delete %q to give up",
			ErrUnreachable, m.dstName, m.srcName, unheardFor, cmp.Or(m.api, "the same server"), m.dstName)
	}
	if m.cfg.Progress != nil {
		rate := 0.0
		if el := time.Since(w.start).Seconds(); el > 0 && ti.State.LastSeq >= w.startSeq {
			rate = float64(ti.State.LastSeq-w.startSeq) / el
		}
		lag := uint64(0)
		if w.total > ti.State.LastSeq {
			lag = w.total - ti.State.LastSeq
		}
		m.cfg.Progress(Progress{Phase: w.phase, Copied: ti.State.LastSeq, Total: w.total, Rate: rate, Lag: lag})
	}
	return ti, nil
}

// behindMirror reads the target from..want behind the mirror as it
// copies, so that the comparison with the source, read at once, costs
// little more time than the copy. When want leaves the source before the
// mirror copied it (deleted, expired), the mirror stops short of it: the
// read ends where the mirror caught up (the stream's end).
func (m *mover) behindMirror(ctx context.Context, from, want, total uint64) *hashStream {
	return produce(ctx, func(ctx context.Context, e *emitter) (uint64, error) {
		w := m.watch("copying", total)
		to := want
		for next, idle := from, 0; next <= to; {
			ti, err := w.poll(ctx)
			if err != nil {
				return 0, err
			}
			if upto := min(ti.State.LastSeq, to); upto >= next {
				if err := readHashesTo(ctx, m.dst.JS, m.dstName, next, upto, timedHash, e.emit); err != nil {
					return 0, err
				}
				if err := e.flush(); err != nil {
					return 0, err
				}
				next, idle = upto+1, 0
				continue
			}
			if caughtUp(ti) {
				idle++
			} else {
				idle = 0
			}
			if idle >= 2 {
				gone, err := m.gone(ctx, to)
				if err != nil {
					return 0, err
				}
				if gone {
					to = ti.State.LastSeq
					continue
				}
			}
			if err := retry.Sleep(ctx, pollEvery); err != nil {
				return 0, err
			}
		}
		return to, nil
	})
}
