package migrate

// One move: its entry, how the target is reached, and the run through
// its phases (copy, verify, cutover, finish) that a killed run resumes.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/logctx"
)

// LockTTL is how long a migration's lease outlives a holder that died on
// another host (a holder that died on this host is taken over at once).
const LockTTL = 30 * time.Second

// takeLease takes the lease of a migration of stream, or fails with ErrBusy
// naming its holder. The returned context ends when the lease is lost;
// release gives it up.
func takeLease(ctx context.Context, js jetstream.JetStream, stream string) (context.Context, func(), error) {
	lock, err := lease.Acquire(ctx, js, LockKey(stream), LockTTL, "jetctl migrate unlock --stream "+stream)
	if err != nil {
		if errors.Is(err, lease.ErrLocked) {
			return ctx, nil, fmt.Errorf("%w: %v", ErrBusy, err)
		}
		return ctx, nil, err
	}
	lctx, cancel := lock.WithLease(ctx)
	return lctx, func() {
		cancel()
		lock.Release(context.WithoutCancel(ctx))
	}, nil
}

// LockKey is the lease key of a migration of stream (in jetctl's lease
// bucket on the source's server).
func LockKey(stream string) string { return "migrate." + stream }

// pollEvery is how often the copy's progress is looked at; cutoverPoll
// during the cutover, when writes wait for it.
const (
	pollEvery   = 100 * time.Millisecond
	cutoverPoll = 2 * time.Millisecond
)

// PlaceholderSubject is what the source listens on during a cutover: its
// own subjects are free for the target, and nothing else publishes here.
func PlaceholderSubject(stream string) string { return "_jetctl.migrating." + stream }

// hop carries what Replace adds to a move.
type hop struct {
	// lockHeld: the caller holds the migration's lease.
	lockHeld bool
	// hold keeps the consumers paused at the end (a second hop follows)
	// and keeps the state, with the consumers' own pause flags, on the
	// target for it.
	hold bool
}

// mover is one move in progress.
type mover struct {
	src, dst Endpoint
	cfg      Config
	hop      hop
	srcName  string
	dstName  string
	api      string // the source's API prefix as the target's server sees it
	sum      *Summary
	started  time.Time
	// tally is what the verification keeps: a digest, not the hashes.
	tally    *tally
	verified uint64            // the prefix up to here is verified
	notes    map[string]string // consumer: how its config had to change
	// same: the target is on the source's server (cluster, domain).
	same bool
	// dlqMove is the source's DLQ, moving to the target's name (dlq.go).
	dlqMove *dlq.MovePlan
	// ttl is what jetctl's copy does with a message's Nats-TTL: the
	// config's, or drop where the target allows no TTLs.
	ttl envelope.TTLMode
	// seqs pairs the source's sequences with the target's, for the
	// counter way (counter.go); nil for the others, which keep them.
	seqs *seqMap
	// copyPrefix, for jetctl's copy between servers that can reach each
	// other (a workqueue source), is the subject prefix the copy is
	// published under: the target takes it off again with a subject
	// transform, and the source, listening on the bare subjects, never
	// sees the copy.
	copyPrefix string
}

// Stream moves one stream: see the package comment.
func Stream(ctx context.Context, src, dst Endpoint, cfg Config) (*Summary, error) {
	return stream(ctx, src, dst, cfg, hop{})
}

func stream(ctx context.Context, src, dst Endpoint, cfg Config, h hop) (*Summary, error) {
	m := &mover{src: src, dst: dst, cfg: cfg, hop: h, srcName: cfg.Stream, dstName: cfg.Target, started: time.Now(), notes: map[string]string{}, tally: newTally()}
	if m.dstName == "" {
		m.dstName = m.srcName
	}
	for _, n := range []string{m.srcName, m.dstName} {
		if err := jsapi.ValidateStreamName(n); err != nil {
			return nil, err
		}
	}
	m.sum = &Summary{Stream: m.srcName, Target: m.dstName, Mechanism: "mirror", Cutover: cfg.Cutover, DryRun: cfg.DryRun, Consumers: []ConsumerMove{}, SequencesKept: true}
	api, same, err := reach(ctx, src, dst)
	if errors.Is(err, ErrUnreachable) && clientCopy != nil {
		// No route between the servers: jetctl copies (clientcopy.go).
		m.sum.Mechanism, m.sum.CopyReason = "copy", "no-route"
		return clientCopy(ctx, m)
	}
	if err != nil {
		return nil, err
	}
	m.api, m.same = api, same
	if same && m.srcName == m.dstName {
		return nil, fmt.Errorf("%w: the target is the source (%q on the same server); give another name or another server", ErrInvalid, m.srcName)
	}
	if m.counterStream(ctx) {
		// A counter stream cannot be mirrored: the target sources it
		// (counter.go).
		m.sum.Mechanism, m.sum.CopyReason = mechanismSource, CopyReasonCounter
		return m.run(ctx, m.counterWay())
	}
	if byCopy, err := m.workqueueCopy(ctx); err != nil {
		return nil, err
	} else if byCopy && clientCopy != nil {
		// A mirror drains a workqueue origin: jetctl copies, reading the
		// source without consuming it (clientcopy.go).
		m.sum.Mechanism, m.sum.CopyReason = "copy", "workqueue"
		m.copyPrefix = CopySubjectPrefix(m.dstName)
		return clientCopy(ctx, m)
	}
	return m.run(ctx, m.mirrorWay())
}

// workqueueCopy says whether this move copies with jetctl although a
// mirror could: a mirror's reads take messages out of a workqueue origin
// (TestFactMirrorDrainsWorkqueueOrigin), so a workqueue source is copied
// by jetctl, which reads it with direct gets and consumes nothing. A move
// already begun goes on the way it began (the target's state says which).
func (m *mover) workqueueCopy(ctx context.Context) (bool, error) {
	ti, err := m.dst.JS.Stream(ctx, m.dstName)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return false, fmt.Errorf("target %q: %w", m.dstName, err)
	default:
		if st, err := readState(ti.CachedInfo()); err == nil && st != nil && st.Source == m.srcName && st.Phase != phaseHeld {
			// A copy begun with no route between the servers holds the
			// source's subjects: with a route it cannot go on (run says so).
			return st.Mechanism == mechanismCopy && st.CopyPrefix != "", nil
		}
	}
	si, err := m.src.JS.Stream(ctx, m.srcName)
	if err != nil {
		return false, nil // run says what is wrong with the source
	}
	return si.CachedInfo().Config.Retention == jetstream.WorkQueuePolicy, nil
}

// ErrInvalid: the move asked for is not possible; nothing was changed.
var ErrInvalid = errkind.New(errkind.Invalid, "invalid migration")

// reach works out how the target's server reads the source: the same
// server (or cluster, or domain) needs no prefix; another domain is read
// through $JS.<domain>.API.
func reach(ctx context.Context, src, dst Endpoint) (api string, same bool, err error) {
	srcDomain, err := domainOf(ctx, src)
	if err != nil {
		return "", false, fmt.Errorf("source: %w", err)
	}
	dstDomain, err := domainOf(ctx, dst)
	if err != nil && dst.Domain != "" && (errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)) {
		return "", false, fmt.Errorf("%w: no server answers for JetStream domain %q (%v); nothing was changed", ErrInvalid, dst.Domain, err)
	}
	if err != nil {
		return "", false, fmt.Errorf("target: %w", err)
	}
	sc, dc := src.JS.Conn(), dst.JS.Conn()
	sameConn := sc == dc || (sc.ConnectedServerId() == dc.ConnectedServerId()) ||
		(sc.ConnectedClusterName() != "" && sc.ConnectedClusterName() == dc.ConnectedClusterName())
	switch {
	case srcDomain == dstDomain && sameConn:
		return "", true, nil
	case srcDomain != dstDomain && srcDomain != "":
		return "$JS." + srcDomain + ".API", false, nil
	case srcDomain != dstDomain:
		return "", false, fmt.Errorf("%w: the source has no JetStream domain and the target is in domain %q: the target's server cannot address it", ErrUnreachable, dstDomain)
	}
	return "", false, fmt.Errorf("%w: the source and the target are different servers without JetStream domains; give the servers domains (jetctl --js-domain) and connect them by a leaf node", ErrUnreachable)
}

// clientCopy, when set, moves a stream between servers that cannot reach
// each other, with jetctl copying (clientcopy.go).
var clientCopy func(ctx context.Context, m *mover) (*Summary, error)

// ErrUnreachable: the target's server cannot read the source's.
var ErrUnreachable = errkind.New(errkind.Invalid, "the target's server cannot reach the source")

// domainOf is the JetStream domain of the server e talks to, asked of the
// server even when given (a domain nobody answers for fails here).
func domainOf(ctx context.Context, e Endpoint) (string, error) {
	ai, err := e.JS.AccountInfo(ctx)
	if err != nil {
		return "", err
	}
	if e.Domain != "" {
		return e.Domain, nil
	}
	return ai.Domain, nil
}

// way is how a move copies: through a mirror the target's server keeps
// (the default), or by jetctl publishing (clientcopy.go) when the servers
// have no route between them. The rest of a move is the same either way.
type way struct {
	// mechanism is the state's and the summary's name for it ("" for the
	// mirror in the state).
	mechanism string
	// check says whether final can be reached this way, before anything
	// is changed.
	check func(final jetstream.StreamConfig, si *jetstream.StreamInfo) error
	// create makes the target, with the move's state.
	create func(ctx context.Context, si *jetstream.StreamInfo) (jetstream.Stream, *state, error)
	// live copies and compares while the source takes writes.
	live func(ctx context.Context, si *jetstream.StreamInfo) error
	// cutover holds the source, finishes the copy, verifies, seats the
	// consumers and gives the target the subjects.
	cutover func(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error)
}

// mirrorWay is the move through a mirror.
func (m *mover) mirrorWay() way {
	return way{
		check: func(final jetstream.StreamConfig, _ *jetstream.StreamInfo) error {
			_, err := mirrorConfig(final, m.srcName, m.api)
			return err
		},
		create:  m.create,
		live:    m.copyAndVerify,
		cutover: m.cutover,
	}
}

func (m *mover) run(ctx context.Context, w way) (_ *Summary, err error) {
	ti, err := m.dst.JS.Stream(ctx, m.dstName)
	var st *state
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return nil, fmt.Errorf("target %q: %w", m.dstName, err)
	default:
		if st, err = readState(ti.CachedInfo()); err != nil {
			return nil, err
		}
		if st == nil && !m.cfg.DryRun {
			if sum, done, err := m.alreadyDone(ctx, ti.CachedInfo()); err != nil || done {
				return sum, err
			}
		}
		if st == nil || st.Source != m.srcName || st.Phase == phaseHeld {
			return nil, fmt.Errorf("%w: stream %q exists and is not a migration of %q; nothing was changed", ErrTargetExists, m.dstName, m.srcName)
		}
		if st.Mechanism == mechanismCopy && w.mechanism != mechanismCopy {
			return nil, fmt.Errorf("%w: stream %q is jetctl's copy of %q, begun when the servers had no route; delete it to move by a mirror; nothing was changed", ErrTargetExists, m.dstName, m.srcName)
		}
		if st.Mechanism != w.mechanism {
			return nil, fmt.Errorf("%w: stream %q exists and is not a migration of %q; nothing was changed", ErrTargetExists, m.dstName, m.srcName)
		}
		m.sum.Resumed = true
		m.copyPrefix = st.CopyPrefix
	}
	si, err := m.src.JS.Stream(ctx, m.srcName)
	var sinfo *jetstream.StreamInfo
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if st == nil || st.Phase != phasePromoted {
			return nil, fmt.Errorf("stream %q: %w", m.srcName, err)
		}
	case err != nil:
		return nil, fmt.Errorf("stream %q: %w", m.srcName, err)
	default:
		sinfo = si.CachedInfo()
		if sinfo.Config.Mirror != nil && st == nil {
			return nil, fmt.Errorf("%w: stream %q is a mirror: its data belongs to %q", ErrInvalid, m.srcName, sinfo.Config.Mirror.Name)
		}
	}
	if sinfo != nil {
		m.sum.Messages, m.sum.Bytes = sinfo.State.Msgs, sinfo.State.Bytes
		m.sum.FirstSeq, m.sum.LastSeq = sinfo.State.FirstSeq, sinfo.State.LastSeq
	}
	switch {
	case m.cfg.TTL == envelope.TTLRemaining || w.mechanism == mechanismCopy:
	case w.mechanism == mechanismSource:
		return nil, fmt.Errorf("%w: --ttl %s is for jetctl's copy, and stream %q, a counter stream (which has no TTLs), moves by sourcing", ErrInvalid, m.cfg.TTL, m.srcName)
	default:
		return nil, fmt.Errorf("%w: --ttl %s is for jetctl's copy, and stream %q moves by a mirror: the target keeps each message's Nats-TTL as the source stored it (it expires when the original would)", ErrInvalid, m.cfg.TTL, m.srcName)
	}
	if st == nil {
		final := m.finalConfig(sinfo)
		if err := Migratable(sinfo.Config, withName(final, m.srcName)); err != nil {
			return nil, fmt.Errorf("%w: stream %q: %v", ErrInvalid, m.srcName, err)
		}
		if err := w.check(final, sinfo); err != nil {
			return nil, err
		}
		if final.Retention == jetstream.WorkQueuePolicy {
			cs, err := durables(ctx, m.src.JS, m.srcName)
			if err != nil {
				return nil, err
			}
			if err := workqueueConsumers(cs); err != nil {
				return nil, fmt.Errorf("%w: stream %q: %v; nothing was changed", ErrInvalid, m.srcName, err)
			}
		}
	}
	if err := m.planDLQ(ctx); err != nil {
		return nil, err
	}
	if m.cfg.DryRun {
		if sinfo != nil {
			cs, err := durables(ctx, m.src.JS, m.srcName)
			if err != nil {
				return nil, err
			}
			for _, c := range cs {
				m.sum.Consumers = append(m.sum.Consumers, ConsumerMove{Name: c.Name, AckFloor: c.AckFloor.Stream, Pending: c.NumAckPending})
			}
			if m.sum.Downstreams, err = m.findDownstreams(ctx); err != nil {
				return nil, err
			}
			m.explain(m.sum.Downstreams, false, m.finalConfig(sinfo))
		}
		return m.sum, nil
	}
	if !m.hop.lockHeld {
		var release func()
		if ctx, release, err = takeLease(ctx, m.src.JS, m.srcName); err != nil {
			return nil, err
		}
		defer release()
		defer func() { err = lease.Explain(ctx, err) }()
	}
	if st == nil {
		if ti, st, err = w.create(ctx, sinfo); err != nil {
			return nil, err
		}
		m.at("created")
	}
	m.ttl = m.cfg.TTL
	if !st.Final.AllowMsgTTL {
		m.ttl = envelope.TTLDrop
	}
	if st.Mechanism != mechanismCopy && sinfo != nil && sinfo.Config.Retention == jetstream.WorkQueuePolicy && (st.Phase == phaseCopying || st.Phase == phaseCutover) {
		// Begun by an earlier jetctl, which mirrored workqueue sources.
		if st.Phase == phaseCutover {
			if err := m.abandon(ctx, st); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("%w: stream %q is a mirror of workqueue stream %q, begun by an earlier jetctl: a mirror takes the messages out of a workqueue source; delete %q and run again (the source has its subjects and consumers)", ErrTargetExists, m.dstName, m.srcName, m.dstName)
	}
	if st.Phase == phaseCutover {
		// A run killed during its cutover left the subjects held. Rather
		// than compare the whole stream again while writers wait, give the
		// source its subjects and consumers back, copy and verify live
		// again, and cut over as a first run does: the outage is a normal
		// cutover's, however long the stream.
		logctx.From(ctx).Debug("a killed run's cutover: giving the source back before verifying again", "stream", m.srcName)
		if err := m.abandon(ctx, st); err != nil {
			return nil, fmt.Errorf("giving %q its subjects back after a killed cutover: %w", m.srcName, err)
		}
		if sinfo, err = streamInfo(ctx, m.src.JS, m.srcName); err != nil {
			return nil, err
		}
		if ti, err = m.dst.JS.Stream(ctx, m.dstName); err != nil {
			return nil, fmt.Errorf("target %q: %w", m.dstName, err)
		}
	}
	tinfo := ti.CachedInfo()
	if st.Phase == phaseCopying {
		if tinfo, err = m.snapshot(ctx, tinfo, st); err != nil {
			return nil, err
		}
		if sinfo, err = m.directOn(ctx, sinfo, st); err != nil {
			return nil, err
		}
		if err := w.live(ctx, sinfo); err != nil {
			return nil, err
		}
		if !m.cfg.Cutover {
			if err := m.directOff(ctx, st); err != nil {
				return nil, err
			}
			return m.finishCopy(ctx)
		}
	}
	if st.Phase == phaseCopying || st.Phase == phaseCutover {
		if err := m.prepareDLQ(ctx); err != nil {
			return nil, err
		}
		if tinfo, err = w.cutover(ctx, tinfo, st); err != nil {
			return nil, err
		}
	} else if v := st.Verified; v != nil {
		// Promoted by a run that was killed: report what it verified
		// and the outage it measured.
		m.sum.Verified, m.sum.Digest = true, v.Digest
		m.sum.Messages, m.sum.Bytes, m.sum.FirstSeq, m.sum.LastSeq = v.Messages, v.Bytes, v.FirstSeq, v.LastSeq
		m.sum.SequencesKept = !v.Renumbered
		if !st.OutageStart.IsZero() {
			m.sum.WriteOutage = v.Promoted.Sub(st.OutageStart).Round(time.Microsecond)
		}
	}
	return m.finish(ctx, tinfo, st)
}

// alreadyDone says whether the move asked for finished before (a run
// killed after its last step, run again): the target carries the mark a
// finished move leaves, naming the source, and the source is gone. The
// summary then says what that move verified.
func (m *mover) alreadyDone(ctx context.Context, ti *jetstream.StreamInfo) (*Summary, bool, error) {
	var done doneMark
	if json.Unmarshal([]byte(ti.Config.Metadata[doneKey]), &done) != nil || done.Source != m.srcName {
		return nil, false, nil
	}
	_, err := m.src.JS.Stream(ctx, m.srcName)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return nil, false, fmt.Errorf("stream %q: %w", m.srcName, err)
	default:
		return nil, false, nil // a new stream of that name: not this move's
	}
	m.sum.AlreadyDone, m.sum.Cutover, m.sum.Verified, m.sum.Digest = true, true, true, done.Digest
	m.sum.Mechanism = cmp.Or(done.Mechanism, "mirror")
	m.sum.SequencesKept = !done.Renumbered
	if m.sum.Mechanism == mechanismSource {
		m.sum.CopyReason = CopyReasonCounter
	}
	m.sum.Messages, m.sum.Bytes = ti.State.Msgs, ti.State.Bytes
	if done.Bytes > 0 {
		// The source's figure, as the move reported it (Summary.Bytes).
		m.sum.Bytes = done.Bytes
	}
	m.sum.FirstSeq, m.sum.LastSeq = ti.State.FirstSeq, ti.State.LastSeq
	m.sum.Elapsed = since(m.started)
	return m.sum, true, nil
}

func withName(c jetstream.StreamConfig, name string) jetstream.StreamConfig {
	c.Name = name
	return c
}

func (m *mover) at(step string) {
	if m.cfg.AtStep != nil {
		m.cfg.AtStep(step)
	}
}

// finalConfig is the target's config once promoted.
func (m *mover) finalConfig(si *jetstream.StreamInfo) jetstream.StreamConfig {
	var c jetstream.StreamConfig
	if m.cfg.TargetConfig != nil {
		c = *m.cfg.TargetConfig
	} else {
		c = si.Config
	}
	c.Name = m.dstName
	c.Metadata = userMetadata(c.Metadata)
	c.Mirror = nil
	return c
}
