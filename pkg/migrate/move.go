package migrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// LockTTL is how long a migration's lease outlives a holder that died on
// another host (a holder that died on this host is taken over at once).
const LockTTL = 30 * time.Second

// unheardFor is how long a mirror may go without hearing from its origin
// before the move gives up: a server cannot tell that it has no route to
// another domain, its mirror just never hears.
const unheardFor = 15 * time.Second

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
	src, dst  Endpoint
	cfg       Config
	hop       hop
	srcName   string
	dstName   string
	api       string // the source's API prefix as the target's server sees it
	sum       *Summary
	started   time.Time
	srcHashes []msgHash
	dstHashes []msgHash
	verified  uint64            // the prefix up to here is verified
	notes     map[string]string // consumer: how its config had to change
	// same: the target is on the source's server (cluster, domain).
	same bool
	// dlqMove is the source's DLQ, moving to the target's name (dlq.go).
	dlqMove *dlq.MovePlan
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
	m := &mover{src: src, dst: dst, cfg: cfg, hop: h, srcName: cfg.Stream, dstName: cfg.Target, started: time.Now(), notes: map[string]string{}}
	if m.dstName == "" {
		m.dstName = m.srcName
	}
	for _, n := range []string{m.srcName, m.dstName} {
		if err := jsapi.ValidateStreamName(n); err != nil {
			return nil, err
		}
	}
	m.sum = &Summary{Stream: m.srcName, Target: m.dstName, Mechanism: "mirror", Cutover: cfg.Cutover, DryRun: cfg.DryRun, Consumers: []ConsumerMove{}}
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
		if st.Mechanism != mechanismCopy && w.mechanism == mechanismCopy {
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
	m.sum.Messages, m.sum.Bytes = ti.State.Msgs, ti.State.Bytes
	if done.Bytes > 0 {
		// The source's figure, as the move reported it (Summary.Bytes).
		m.sum.Bytes = done.Bytes
	}
	m.sum.FirstSeq, m.sum.LastSeq = ti.State.FirstSeq, ti.State.LastSeq
	m.sum.Elapsed = since(m.started)
	return m.sum, true, nil
}

// maxSnapshotDeleted bounds the deleted sequences a snapshot keeps (in the
// target's metadata); past it the loss check is skipped.
const maxSnapshotDeleted = 2000

// snapshot records, for a workqueue or interest source, what it holds as
// the copy begins (see sourceSnapshot), unless the state has one.
func (m *mover) snapshot(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	if st.Snapshot != nil {
		return tinfo, nil
	}
	sinfo, deleted, err := m.sourceDeleted(ctx)
	if err != nil {
		return nil, err
	}
	if r := sinfo.Config.Retention; r != jetstream.WorkQueuePolicy && r != jetstream.InterestPolicy {
		return tinfo, nil
	}
	cs, err := durables(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, err
	}
	snap := &sourceSnapshot{First: sinfo.State.FirstSeq, Last: sinfo.State.LastSeq, Msgs: sinfo.State.Msgs}
	for _, c := range cs {
		snap.Delivered = max(snap.Delivered, c.Delivered.Stream)
	}
	for d := range deleted {
		if d > snap.Delivered {
			snap.Deleted = append(snap.Deleted, d)
		}
	}
	if len(snap.Deleted) > maxSnapshotDeleted {
		snap.Deleted, snap.Partial = nil, true
	}
	slices.Sort(snap.Deleted)
	st.Snapshot = snap
	return saveState(ctx, m.dst.JS, tinfo, st)
}

// vanished refuses a move (a VerifyError) in which messages left a
// workqueue or interest source that no consumer had been delivered: the
// snapshot's messages above every durable's delivered sequence (as the
// consumers stand now, paused) that are gone now. Nothing but an
// acknowledgement should remove them; a copy that consumed, or a delete
// by hand, did.
func (m *mover) vanished(ctx context.Context, st *state) error {
	snap := st.Snapshot
	if snap == nil || snap.Partial || snap.Msgs == 0 {
		return nil
	}
	delivered := snap.Delivered
	for _, c := range st.Consumers {
		delivered = max(delivered, c.Delivered)
	}
	from := max(delivered+1, snap.First)
	if from > snap.Last {
		return nil
	}
	sinfo, deleted, err := m.sourceDeleted(ctx)
	if err != nil {
		return err
	}
	wasGone := func(seq uint64) bool { _, ok := slices.BinarySearch(snap.Deleted, seq); return ok }
	// Gone now: everything below the source's first sequence (all of it
	// when it is empty), and its deleted sequences; in the snapshot's
	// range above the consumers, less what was gone already. Counted
	// without walking the range, which may be long: this runs while
	// writers wait.
	var gone []uint64
	n := uint64(0)
	low := snap.Last
	if sinfo.State.Msgs > 0 {
		low = min(low, sinfo.State.FirstSeq-1)
	}
	if low >= from {
		n = low - from + 1
		for _, d := range snap.Deleted {
			if d >= from && d <= low {
				n--
			}
		}
		for seq := from; seq <= low && len(gone) < 5; seq++ {
			if !wasGone(seq) {
				gone = append(gone, seq)
			}
		}
	}
	var above []uint64
	for d := range deleted {
		if d >= max(from, low+1) && d <= snap.Last && !wasGone(d) {
			above = append(above, d)
		}
	}
	n += uint64(len(above))
	slices.Sort(above)
	gone = append(gone, above[:min(len(above), 5-len(gone))]...)
	if n == 0 {
		return nil
	}
	list := seqList(gone)
	if n > uint64(len(gone)) {
		list += ", …"
	}
	return m.verifyError(fmt.Sprintf("%d messages left the source during the move that no consumer had been delivered (seq %s; consumers delivered up to seq %d): something consumed or deleted them",
		n, list, delivered))
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

// mirrorConfig is the target while it copies: final's settings as a mirror
// of the source, without what a mirror may not have (subjects, first
// sequence, transforms) and without what would stop the cutover deleting
// from it (deny delete and purge); those come with the promotion.
func mirrorConfig(final jetstream.StreamConfig, source, api string) (jetstream.StreamConfig, error) {
	if final.AllowMsgCounter {
		return final, fmt.Errorf("%w: a counter stream cannot be mirrored, so it is not migrated", ErrInvalid)
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
	c.AllowMsgSchedules = false
	c.AllowAtomicPublish = false
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

// liveRounds runs live rounds (each under liveRetry) while anotherRound
// says so: the mirror's and jetctl's copy alike.
func (m *mover) liveRounds(ctx context.Context, si *jetstream.StreamInfo, round func(context.Context, *jetstream.StreamInfo) error) error {
	for n := 0; ; n++ {
		if err := m.liveRetry(ctx, func(ctx context.Context) error { return round(ctx, si) }); err != nil {
			return err
		}
		var again bool
		var err error
		if si, again, err = m.anotherRound(ctx, si, n); err != nil || !again {
			return err
		}
	}
}

// liveRetry runs one live round, and again after a transient error (a
// reply lost while the connection came back after a server restart, no
// responders while JetStream starts) for up to a minute, warning once on
// stderr: no writer waits meanwhile, and the round starts from what was
// verified.
func (m *mover) liveRetry(ctx context.Context, round func(ctx context.Context) error) error {
	warned := false
	return retry.Do(ctx, retry.Policy{Within: mirrorErrorGrace, Pause: 250 * time.Millisecond, MaxPause: 2 * time.Second,
		Retryable: func(err error) bool {
			if !retry.Transient(err) || ctx.Err() != nil {
				return false
			}
			if !warned {
				warned = true
				logctx.From(ctx).Warn("copying: the server did not answer; trying again (a server restarting?)", "stream", m.srcName, "error", err)
			}
			return true
		}}, round)
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
	to := want
	var srcHs, dstHs []msgHash
	if want > 0 && want >= from {
		var err error
		if srcHs, dstHs, to, err = m.readWhileCopying(ctx, from, want, si.State.LastSeq); err != nil {
			return err
		}
	} else {
		tinfo, err := m.waitCopied(ctx, "copying", want, si.State.LastSeq, pollEvery)
		if err != nil {
			return err
		}
		to = min(tinfo.State.LastSeq, si.State.LastSeq)
		if to >= from {
			srcN, dstN := len(m.srcHashes), len(m.dstHashes)
			if err := m.readBoth(ctx, from, to); err != nil {
				return err
			}
			srcHs, dstHs = m.srcHashes[srcN:], m.dstHashes[dstN:]
			m.srcHashes, m.dstHashes = m.srcHashes[:srcN], m.dstHashes[:dstN]
		}
	}
	if to >= from {
		return m.accept(ctx, srcHs, dstHs, to)
	}
	return nil
}

// accept compares the hashes of a live round (the source's against the
// target's, read up to seq to), keeps them for the final digest and marks
// the range verified.
func (m *mover) accept(ctx context.Context, srcHs, dstHs []msgHash, to uint64) error {
	srcN, dstN := len(m.srcHashes), len(m.dstHashes)
	m.srcHashes, m.dstHashes = append(m.srcHashes, srcHs...), append(m.dstHashes, dstHs...)
	src, dst, err := m.compare(ctx, m.srcHashes[srcN:], m.dstHashes[dstN:], false)
	if err != nil {
		// Nothing of the round is kept: it may be run again.
		m.srcHashes, m.dstHashes = m.srcHashes[:srcN], m.dstHashes[:dstN]
		return err
	}
	m.srcHashes, m.dstHashes = append(m.srcHashes[:srcN], src...), append(m.dstHashes[:dstN], dst...)
	m.verified = to
	return nil
}

// anotherRound says whether a live round should follow round: only before
// a cutover, while the source's unverified tail is long, for at most
// maxLiveRounds rounds. It returns the source's info it looked at.
func (m *mover) anotherRound(ctx context.Context, si *jetstream.StreamInfo, round int) (*jetstream.StreamInfo, bool, error) {
	logctx.From(ctx).Debug("live round", "stream", m.srcName, "round", round, "verified", m.verified, "source_last", si.State.LastSeq)
	if !m.cfg.Cutover || round >= maxLiveRounds {
		return si, false, nil
	}
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, false, err
	}
	return si, si.State.LastSeq > m.verified+shortTail, nil
}

// A cutover starts once the unverified tail is at most shortTail messages
// long, or after maxLiveRounds rounds of copying and comparing.
const (
	shortTail     = 2000
	maxLiveRounds = 5
)

// directOn turns allow_direct on at a workqueue or interest source, so
// that it can be read without a consumer (a consumer would disturb it),
// and notes it in the state.
func (m *mover) directOn(ctx context.Context, si *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	if si.Config.AllowDirect || si.Config.Retention == jetstream.LimitsPolicy {
		return si, nil
	}
	ti, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return nil, err
	}
	st.SourceDirectOff = true
	if _, err := saveState(ctx, m.dst.JS, ti, st); err != nil {
		return nil, err
	}
	c := si.Config
	c.AllowDirect = true
	return updateStream(ctx, m.src.JS, c)
}

// directOff undoes directOn.
func (m *mover) directOff(ctx context.Context, st *state) error {
	if !st.SourceDirectOff {
		return nil
	}
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return err
	}
	c := si.Config
	c.AllowDirect = false
	if _, err := updateStream(ctx, m.src.JS, c); err != nil {
		return err
	}
	st.SourceDirectOff = false
	ti, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return err
	}
	_, err = saveState(ctx, m.dst.JS, ti, st)
	return err
}

// readBoth hashes from..to of the source and of the target, appending.
func (m *mover) readBoth(ctx context.Context, from, to uint64) error {
	type res struct {
		hs  []msgHash
		err error
	}
	ch := make(chan res, 1)
	go func() {
		hs, err := readHashes(ctx, m.dst.JS, m.dstName, from, to, true)
		ch <- res{hs, err}
	}()
	hs, err := readHashes(ctx, m.src.JS, m.srcName, from, to, true)
	r := <-ch
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	m.srcHashes = append(m.srcHashes, hs...)
	m.dstHashes = append(m.dstHashes, r.hs...)
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

// caughtUp says whether a mirror reports that it has copied everything
// its origin holds: no lag, and heard from lately.
func caughtUp(ti *jetstream.StreamInfo) bool {
	return ti.Mirror != nil && ti.Mirror.Error == nil && ti.Mirror.Lag == 0 && ti.Mirror.Active >= 0 && ti.Mirror.Active < time.Minute
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
	mi := ti.Mirror
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
	if mi := ti.Mirror; mi != nil && mi.Active < 0 && time.Since(w.start) > unheardFor {
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

// readWhileCopying hashes from..want of the source and of the target,
// reading the source at once and the target behind the mirror as it
// copies, so that the comparison costs little more time than the copy.
// When want leaves the source before the mirror copied it (deleted,
// expired), the mirror stops short of it: the round ends where the mirror
// caught up. It returns the hashes and the last sequence they cover.
func (m *mover) readWhileCopying(ctx context.Context, from, want, total uint64) ([]msgHash, []msgHash, uint64, error) {
	type res struct {
		hs  []msgHash
		err error
	}
	ch := make(chan res, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		hs, err := readHashes(rctx, m.src.JS, m.srcName, from, want, true)
		ch <- res{hs, err}
	}()
	w := m.watch("copying", total)
	var dst []msgHash
	to := want
	for next, idle := from, 0; next <= to; {
		ti, err := w.poll(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		if upto := min(ti.State.LastSeq, to); upto >= next {
			hs, err := readHashes(ctx, m.dst.JS, m.dstName, next, upto, true)
			if err != nil {
				return nil, nil, 0, err
			}
			dst = append(dst, hs...)
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
				return nil, nil, 0, err
			}
			if gone {
				to = ti.State.LastSeq
				continue
			}
		}
		if err := retry.Sleep(ctx, pollEvery); err != nil {
			return nil, nil, 0, err
		}
	}
	r := <-ch
	src := r.hs
	for len(src) > 0 && src[len(src)-1].Seq > to {
		src = src[:len(src)-1]
	}
	return src, dst, to, r.err
}

// finishCopy ends a move without a cutover: the target stays a verified
// mirror, and a later run with a cutover continues from here.
// Its figures are the source's, as a cutover's are (see Summary.Bytes).
func (m *mover) finishCopy(ctx context.Context) (*Summary, error) {
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, err
	}
	m.sum.Messages, m.sum.Bytes = si.State.Msgs, si.State.Bytes
	m.sum.FirstSeq, m.sum.LastSeq = si.State.FirstSeq, si.State.LastSeq
	m.sum.Verified = true
	m.sum.Elapsed = since(m.started)
	return m.sum, nil
}

// updateStream updates a stream, riding out a server that does not answer
// for a moment.
func updateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (*jetstream.StreamInfo, error) {
	var si *jetstream.StreamInfo
	err := retry.Do(ctx, retry.Policy{Attempts: 5, Pause: 100 * time.Millisecond, Retryable: retry.Transient}, func(ctx context.Context) error {
		s, err := js.UpdateStream(ctx, cfg)
		if err == nil {
			si = s.CachedInfo()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating %q: %w", cfg.Name, err)
	}
	return si, nil
}

func streamInfo(ctx context.Context, js jetstream.JetStream, name string, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	var si *jetstream.StreamInfo
	err := retry.Do(ctx, retry.Policy{Attempts: 5, Pause: 100 * time.Millisecond, Retryable: retry.Transient}, func(ctx context.Context) error {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return err
		}
		si, err = s.Info(ctx, opts...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", name, err)
	}
	return si, nil
}

func getMsg(ctx context.Context, js jetstream.JetStream, name string, seq uint64) (*jetstream.RawStreamMsg, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.GetMsg(ctx, seq)
}

// durables lists the source's durable consumers.
func durables(ctx context.Context, js jetstream.JetStream, stream string) ([]*jetstream.ConsumerInfo, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	var out []*jetstream.ConsumerInfo
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.Config.Durable == "" || serverOwned(ci.Config.Metadata) {
			continue // ephemeral: it belongs to a live client and ends with it
		}
		out = append(out, ci)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: listing consumers: %w", stream, err)
	}
	return out, nil
}

// serverOwned says whether a consumer is the server's own: the one through
// which a mirror or a source reads its origin.
func serverOwned(md map[string]string) bool {
	for k := range md {
		if strings.HasPrefix(k, "_nats.mirror.") || strings.HasPrefix(k, "_nats.source.") {
			return true
		}
	}
	return false
}

// workqueueConsumers checks that consumers can live on a workqueue
// stream, which takes one consumer per subject: several need filters, and
// no two filters may overlap.
func workqueueConsumers(cs []*jetstream.ConsumerInfo) error {
	if len(cs) < 2 {
		return nil
	}
	type f struct{ consumer, subject string }
	var all []f
	for _, c := range cs {
		subs := c.Config.FilterSubjects
		if c.Config.FilterSubject != "" {
			subs = append(subs, c.Config.FilterSubject)
		}
		if len(subs) == 0 {
			return fmt.Errorf("a workqueue stream takes one consumer per subject, and consumer %q has no filter beside %d others", c.Name, len(cs)-1)
		}
		for _, s := range subs {
			for _, o := range all {
				if o.consumer != c.Name && streamread.SubjectsOverlap(o.subject, s) {
					return fmt.Errorf("a workqueue stream takes one consumer per subject, and the filters of %q (%s) and %q (%s) overlap", o.consumer, o.subject, c.Name, s)
				}
			}
			all = append(all, f{c.Name, s})
		}
	}
	return nil
}
