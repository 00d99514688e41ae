package migrate

// Between servers with no route: jetctl copies.
//
// When the target's server cannot read the source's (reach returns
// ErrUnreachable), no mirror can copy, so jetctl reads the source and
// publishes each message to the target itself. The guarantees are the
// mirror's except the timestamps:
//
//   - The target has the final config's subjects from the start (a stream
//     stores only what is published to its subjects; it is on another
//     server, so nothing overlaps) plus the placeholder subject
//     _jetctl.migrating.<target>, and it starts at the source's first
//     sequence (first_seq).
//   - Each message is published with Nats-Expected-Stream and
//     Nats-Expected-Last-Sequence: <its seq - 1>, pipelined (package
//     mover's window of async publishes): a retry after a lost ack cannot
//     store it twice, and a stray writer fails the next publish. The sequences stay
//     equal because each gap of the source is published as a filler (an
//     empty message with Jetctl-Migrate-Filler on the placeholder subject)
//     and the fillers are purged (one purge by subject) after each round.
//   - The source's Nats-Expected-* headers (a publish's expectations,
//     checked when the source stored it) are dropped, as a mirror drops
//     them; the verification leaves them out on both sides (hashMsg).
//   - Other headers the server acts on are renamed Jetctl-Orig-<Name> (one more
//     Jetctl-Orig- when the message has that name already), listed in
//     Jetctl-Migrate-Renamed; the original time is kept in
//     Jetctl-Migrate-Time. The verification maps the headers back and
//     leaves the time out (copyHash).
//   - The server stores the Nats-Expected-* headers of the copy's publish
//     (TestFactMirrorDropsExpectedHeaders: an origin keeps them): the
//     hash ignores them.
//   - While copying, the target has no limits (max_msgs, max_bytes,
//     max_age, max_msgs_per_subject, max_msg_size), no subject transform,
//     no republish, limits retention for an interest target and acks on:
//     a filler must not push a message out, and a copy must not be
//     transformed twice. The final config comes at the cutover.
//
// A killed run continues from the target's last sequence.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/logctx"
	mv "github.com/jetctl/jetctl/pkg/mover"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

func init() {
	clientCopy = func(ctx context.Context, m *mover) (*Summary, error) { return m.copyRun(ctx) }
}

// Headers of jetctl's copy.
const (
	// HeaderFiller marks a filler: a message published for a gap of the
	// source, purged from the target once the gap is passed.
	HeaderFiller = "Jetctl-Migrate-Filler"
	// HeaderTime is the original timestamp of a copied message (RFC 3339).
	HeaderTime = "Jetctl-Migrate-Time"
	// HeaderRenamed lists, space-separated, the headers of a copied message
	// renamed with envelope.OrigPrefix because the server acts on them.
	HeaderRenamed = "Jetctl-Migrate-Renamed"
)

const mechanismCopy = "copy"

// CopySubjectPrefix is the prefix under which jetctl's copy to target is
// published when the target's server can reach the source's.
func CopySubjectPrefix(target string) string { return "_jetctl.copy." + target }

// copyWindow is how many publishes of the copy wait for their acks at
// most; copyAckWait how long one ack is waited for before the publish is
// tried once more, synchronously (and how long a failed round waits for
// what it has in flight); copyAttempts how many times a copy round starts
// again from the target's last sequence after a failed publish (each
// attempt that makes progress does not count).
var (
	copyWindow   = 2000
	copyAckWait  = 10 * time.Second
	copyAttempts = 5
	// readAhead is how many messages read from the source wait for their
	// publish at most.
	readAhead = 4096
	// copyChunk is how many sequences a live round copies before it
	// compares them with the target, while it copies the next (their
	// hashes wait meanwhile: 1 MiB a chunk).
	copyChunk uint64 = 1 << 16
)

func (m *mover) copyRun(ctx context.Context) (*Summary, error) {
	return m.run(ctx, way{
		mechanism: mechanismCopy,
		check: func(final jetstream.StreamConfig, si *jetstream.StreamInfo) error {
			if m.cfg.TTL != envelope.TTLDrop && si.Config.AllowMsgTTL && !final.AllowMsgTTL {
				return fmt.Errorf("%w: stream %q allows per-message TTLs and the target would not (allow_msg_ttl): it would refuse the copies' Nats-TTL; give the target allow_msg_ttl, or copy with --ttl drop (the copies then never expire)", ErrInvalid, m.srcName)
			}
			if si.Config.AllowMsgCounter {
				// Each copy would be an increment applied again
				// (envelope.CmdCopy's Nats-Incr: refuse).
				return fmt.Errorf("%w: stream %q is a counter stream: jetctl does not copy one message by message (each copy would be applied again as an increment); a counter stream moves between servers that reach each other (one leaf node connection between their JetStream domains), by sourcing", ErrInvalid, m.srcName)
			}
			_, err := copyConfig(final, si, m.dstName, m.copyPrefix, nil)
			return err
		},
		create:  m.createCopy,
		live:    m.copyLive,
		cutover: m.copyCutover,
	})
}

// copyConfig is the target while jetctl copies into it: final's settings
// with the source's subjects and the placeholder, starting at the source's
// first sequence, without what would change or drop a copy (limits,
// transforms, republish, interest retention, no-ack). With a prefix (the
// servers reach each other, so the source's subjects cannot be the
// target's yet) it listens on prefix.> instead of the source's subjects
// and a subject transform takes the prefix off what it stores. Without,
// it listens on outside too: the subjects the source holds messages on
// that its own subjects do not cover (stored when it sourced others, or
// by a transform), which a copy is published to as well; the final config
// leaves them out again.
func copyConfig(final jetstream.StreamConfig, si *jetstream.StreamInfo, target, prefix string, outside []string) (jetstream.StreamConfig, error) {
	c, err := mirrorConfig(final, si.Config.Name, "")
	if err != nil {
		return c, err
	}
	c.Mirror = nil
	subjects := si.Config.Subjects
	if len(subjects) == 0 {
		subjects = []string{si.Config.Name}
	}
	c.Subjects = append(append(slices.Clone(subjects), outside...), PlaceholderSubject(target))
	if prefix != "" {
		c.Subjects = []string{prefix + ".>", PlaceholderSubject(target)}
		c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: prefix + ".>", Destination: ">"}
	}
	c.FirstSeq = max(si.State.FirstSeq, 1)
	if c.FirstSeq == 1 {
		c.FirstSeq = 0
	}
	c.MaxMsgs, c.MaxBytes, c.MaxMsgsPerSubject, c.MaxMsgSize = -1, -1, -1, -1
	c.MaxAge = 0
	c.Discard = jetstream.DiscardOld
	c.DiscardNewPerSubject = false
	c.SubjectDeleteMarkerTTL = 0
	c.NoAck = false
	return c, nil
}

// createCopy makes the target: an empty stream at the source's first
// sequence, with the move's state.
func (m *mover) createCopy(ctx context.Context, si *jetstream.StreamInfo) (jetstream.Stream, *state, error) {
	final := m.finalConfig(si)
	st := &state{Source: m.srcName, Phase: phaseCopying, Mechanism: mechanismCopy, CopyPrefix: m.copyPrefix, Final: final, SourceSubjects: si.Config.Subjects}
	var outside []string
	if m.copyPrefix == "" {
		var err error
		if outside, err = m.subjectsOutside(ctx, si); err != nil {
			return nil, nil, err
		}
	}
	cc, err := copyConfig(final, si, m.dstName, m.copyPrefix, outside)
	if err != nil {
		return nil, nil, err
	}
	if cc, err = withState(cc, st); err != nil {
		return nil, nil, err
	}
	t, err := m.dst.JS.CreateStream(ctx, cc)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, nil, fmt.Errorf("%w: stream %q was created by someone else just now", ErrBusy, m.dstName)
		}
		return nil, nil, fmt.Errorf("creating %q: %w", m.dstName, err)
	}
	return t, st, nil
}

// maxOutside bounds the subjects outside its own that a source may hold
// for jetctl's copy to listen on them.
const maxOutside = 1000

// subjectsOutside lists the subjects the source holds messages on that its
// subjects do not cover.
func (m *mover) subjectsOutside(ctx context.Context, si *jetstream.StreamInfo) ([]string, error) {
	own := si.Config.Subjects
	if len(own) == 0 {
		own = []string{si.Config.Name}
	}
	counts, err := subjectCounts(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, err
	}
	var out []string
	for subj := range counts {
		if !streamread.SubjectMatchesAny(own, subj) {
			out = append(out, subj)
		}
	}
	if len(out) > maxOutside {
		return nil, fmt.Errorf("%w: stream %q holds messages on %d subjects outside its own (stored when it sourced others, say): jetctl's copy publishes each message to its subject, and listens on at most %d of them", ErrInvalid, m.srcName, len(out), maxOutside)
	}
	slices.Sort(out)
	return out, nil
}

// copyLive copies what the source holds and compares the copy with it;
// before a cutover it goes round again while writes keep coming, until the
// tail left is short.
func (m *mover) copyLive(ctx context.Context, si *jetstream.StreamInfo) error {
	return m.liveRounds(ctx, si, m.copyRound)
}

// copyRound is one live round of jetctl's copy: it copies up to what the
// source held at si, compares, and marks it verified, copyChunk sequences
// at a time. The source's messages are hashed as they are copied (only
// what the target held already is read from the source again), and each
// chunk is compared with what the target stored while the next is
// copied: two chunks' hashes are what the comparison holds. Run again
// after a failure, it continues from the target's last sequence.
func (m *mover) copyRound(ctx context.Context, si *jetstream.StreamInfo) error {
	m.at("copying")
	want := si.State.LastSeq
	from := max(si.State.FirstSeq, m.verified+1)
	// A failed comparison stops the copy.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var compared chan error // the comparison running, if any
	wait := func() error {
		if compared == nil {
			return nil
		}
		err := <-compared
		compared = nil
		return err
	}
	defer func() { _ = wait() }()
	fail := func(err error) error {
		if cerr := wait(); cerr != nil {
			return cerr
		}
		return err
	}
	var bufs [2][]msgHash
	for i := 0; ; i++ {
		ti, err := streamInfo(cctx, m.dst.JS, m.dstName)
		if err != nil {
			return fail(err)
		}
		end := min(want, max(ti.State.LastSeq, from-1)+copyChunk)
		copied := bufs[i%2][:0]
		began, err := m.copyUpTo(cctx, end, want, "copying", &copied)
		bufs[i%2] = copied
		if err != nil {
			return fail(err)
		}
		if err := wait(); err != nil {
			return err
		}
		if si.State.Msgs > 0 && end >= from {
			src := m.copiedSource(ctx, from, began, end, copied)
			dst := streamHashes(ctx, m.dst.JS, m.dstName, from, end, copyHash)
			compared = make(chan error, 1)
			go func(from uint64) {
				err := m.acceptStreams(ctx, from, src, dst)
				if err != nil {
					cancel(err)
				}
				compared <- err
			}(from)
			from = end + 1
		}
		if end >= want {
			return wait()
		}
	}
}

// copiedSource is the source's hashes from..end: read from the source
// below began (what the target held before this copy), the copied ones
// from began on.
func (m *mover) copiedSource(ctx context.Context, from, began, end uint64, copied []msgHash) *hashStream {
	return produce(ctx, func(ctx context.Context, e *emitter) (uint64, error) {
		if began > from {
			if err := readHashesTo(ctx, m.src.JS, m.srcName, from, min(began-1, end), sourceHash, e.emit); err != nil {
				return 0, err
			}
		}
		for _, h := range copied {
			if h.Seq >= max(from, began) && h.Seq <= end {
				if err := e.emit(h); err != nil {
					return 0, err
				}
			}
		}
		return end, nil
	})
}

// copyUpTo copies the source to the target up to seq want (gaps
// included), starting from the target's last sequence, and purges the
// fillers. A failed round starts again from the target's last sequence.
// It returns the sequence it began from; hashes, if not nil, gets the
// hashes of the source's messages copied (in sequence order). Progress
// counts towards total.
func (m *mover) copyUpTo(ctx context.Context, want, total uint64, phase string, hashes *[]msgHash) (uint64, error) {
	failed, lastFrom, began := 0, uint64(0), uint64(0)
	for {
		ti, err := streamInfo(ctx, m.dst.JS, m.dstName)
		if err != nil {
			return 0, err
		}
		next := ti.State.LastSeq + 1
		if began == 0 {
			began = next
		}
		if hashes != nil {
			// A round that failed may have hashed what was not stored.
			i, _ := slices.BinarySearchFunc(*hashes, next, func(h msgHash, s uint64) int { return cmp.Compare(h.Seq, s) })
			*hashes = (*hashes)[:i]
		}
		if next > want {
			break
		}
		if next == lastFrom {
			failed++
		}
		lastFrom = next
		err = m.copyRange(ctx, next, want, total, phase, hashes)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || failed >= copyAttempts {
			return 0, err
		}
		logctx.From(ctx).Debug("copy round failed; again from the target's last sequence", "stream", m.srcName, "err", err)
		if err := retry.Sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return began, m.purgeFillers(ctx)
}

// purgeFillers removes the fillers from the target: one purge by subject.
func (m *mover) purgeFillers(ctx context.Context) error {
	t, err := m.dst.JS.Stream(ctx, m.dstName)
	if err != nil {
		return fmt.Errorf("target %q: %w", m.dstName, err)
	}
	if err := t.Purge(ctx, jetstream.WithPurgeSubject(PlaceholderSubject(m.dstName))); err != nil {
		return fmt.Errorf("target %q: purging the fillers: %w", m.dstName, err)
	}
	return nil
}

// copyPub is one publish of the copy: a message of the source, or a
// filler for a gap, to be stored at seq.
type copyPub struct {
	mv.Pub
	seq    uint64
	hash   uint64 // the source message's sourceHash; 0 for a filler
	filler bool
}

// stored says whether the target acknowledged p at its own sequence; a
// refusal (a stray writer took the sequence, or an earlier send of p was
// stored and its acknowledgement lost: wrong last sequence either way)
// fails the round, which starts again from the target's last sequence.
func (p *copyPub) stored(target string) error {
	switch {
	case p.Err != nil:
		return fmt.Errorf("seq %d: %w", p.seq, p.Err)
	case p.Stream != target || p.Seq != p.seq:
		return fmt.Errorf("seq %d stored as %q seq %d", p.seq, p.Stream, p.Seq)
	}
	return nil
}

// copyRange reads the source from next to want and publishes each
// message, and a filler for each gap, to the target, through a window of
// at most copyWindow publishes waiting for their acknowledgement (package
// mover): a feed reads the source and makes the copies, a publish stage
// sends them, and this goroutine settles them in order. Each copy expects
// the target's last sequence to be its own minus one, so a copy is never
// stored twice nor out of place. At the first one not stored the reading
// and publishing stop, what is in flight is still settled (for
// copyAckWait at most), and the round fails.
func (m *mover) copyRange(ctx context.Context, next, want, total uint64, phase string, hashes *[]msgHash) error {
	r, err := streamread.Resolve(ctx, m.src.JS, streamread.Config{Stream: m.srcName, FromSeq: next, ToSeq: want})
	if err != nil {
		return fmt.Errorf("stream %q: %w", m.srcName, err)
	}
	w, err := mv.New(m.dst.JS, mv.Config{MaxPending: copyWindow, AckWait: copyAckWait})
	if err != nil {
		return fmt.Errorf("copying %q to %q: %w", m.srcName, m.dstName, err)
	}
	defer w.Close()
	// pctx stops the reading and the publishing at the first failure.
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	feed := make(chan *copyPub, readAhead)
	readErr := make(chan error, 1)
	go func() {
		defer close(feed)
		readErr <- m.feedCopy(pctx, r, next, want, hashes != nil, feed)
	}()
	sent := mv.Serial(feed, copyWindow, func(p *copyPub) {
		if pctx.Err() == nil {
			_ = w.Publish(pctx, &p.Pub) // not sent: Settle says so
		}
	})

	start, lastReport := time.Now(), time.Now()
	done := next - 1 // the last sequence stored
	report := func(force bool) {
		if m.cfg.Progress == nil || (!force && time.Since(lastReport) < pollEvery) {
			return
		}
		lastReport = time.Now()
		rate := float64(done+1-next) / time.Since(start).Seconds()
		m.cfg.Progress(Progress{Phase: phase, Copied: done, Total: total, Rate: rate, Lag: total - done})
	}
	var failed error
	sctx := ctx
	for p := range sent {
		w.Settle(sctx, &p.Pub)
		if hashes != nil && !p.filler {
			// Kept whatever the outcome, sent or not: copyUpTo keeps
			// those below the target's next sequence, which the
			// verification compares with what the target holds there.
			*hashes = append(*hashes, msgHash{Seq: p.seq, Hash: p.hash})
		}
		if failed != nil {
			continue
		}
		if failed = p.stored(m.dstName); failed != nil {
			stop()
			var cancel context.CancelFunc
			sctx, cancel = context.WithTimeout(ctx, copyAckWait)
			defer cancel()
			continue
		}
		done = p.seq
		report(false)
	}
	err = <-readErr
	if failed != nil {
		err = failed
	}
	if err != nil {
		return fmt.Errorf("copying %q to %q: %w", m.srcName, m.dstName, err)
	}
	report(true)
	return nil
}

// feedCopy reads r (the source from next to want) and passes on the copy
// of each message, and a filler for each gap up to want, each expecting
// the target's last sequence to be its own minus one.
func (m *mover) feedCopy(ctx context.Context, r streamread.Range, next, want uint64, hash bool, feed chan<- *copyPub) error {
	filler := PlaceholderSubject(m.dstName)
	expect := next
	put := func(p *copyPub) error {
		p.Msg.Header.Set(jetstream.ExpectedStreamHeader, m.dstName)
		p.Msg.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(p.seq-1, 10))
		select {
		case feed <- p:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	gap := func(upto uint64) error {
		for ; expect < upto; expect++ {
			msg := &nats.Msg{Subject: filler, Header: nats.Header{HeaderFiller: []string{"1"}}}
			if err := put(&copyPub{Pub: mv.Pub{Msg: msg}, seq: expect, filler: true}); err != nil {
				return err
			}
		}
		return nil
	}
	err := streamread.Read(ctx, m.src.JS, r, func(e *envelope.Message) error {
		if err := gap(e.Seq); err != nil {
			return err
		}
		subject := e.Subject
		if m.copyPrefix != "" {
			subject = m.copyPrefix + "." + subject
		}
		p := &copyPub{Pub: mv.Pub{Msg: &nats.Msg{Subject: subject, Header: encodeHeader(e.Header, e.Time, time.Now(), m.ttl), Data: e.Data}}, seq: e.Seq}
		if hash {
			p.hash = sourceHash(e)
		}
		if err := put(p); err != nil {
			return err
		}
		expect = e.Seq + 1
		return nil
	})
	if err != nil {
		return err
	}
	return gap(want + 1)
}

// copyCutover holds the source (its consumers paused, its subjects taken
// off it), copies the tail, makes the target hold what the source holds,
// verifies it, seats the consumers on the target (paused) and gives the
// target its final config. It returns the target's info.
func (m *mover) copyCutover(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	tinfo, outageStart, err := m.hold(ctx, tinfo, st)
	if err != nil {
		return nil, err
	}
	if err := m.checkHeld(ctx, st); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	sfinal, deleted, err := m.copySettle(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.verifyCopy(ctx, sfinal, deleted); err != nil {
		return nil, m.giveBack(ctx, st, err)
	}
	return m.seatAndPromote(ctx, st, outageStart)
}

// copySettle copies the frozen source's tail (its trailing gaps as
// fillers, so that the target's next sequence is the source's) and deletes
// from the target what the source deleted since it was copied, until
// neither changes. It returns the source's final info and its deleted
// sequences.
func (m *mover) copySettle(ctx context.Context) (*jetstream.StreamInfo, map[uint64]bool, error) {
	for round := 0; ; round++ {
		sinfo, deleted, err := m.sourceDeleted(ctx)
		if err != nil {
			return nil, nil, err
		}
		if _, err := m.copyUpTo(ctx, sinfo.State.LastSeq, sinfo.State.LastSeq, "catching up", nil); err != nil {
			return nil, nil, err
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

// verifyCopy compares the frozen source with the target as verifyFinal
// does, with the copy's hashes and without the byte count (the copy's
// headers differ).
func (m *mover) verifyCopy(ctx context.Context, sinfo *jetstream.StreamInfo, deleted map[uint64]bool) error {
	from, to := max(m.verified+1, sinfo.State.FirstSeq), sinfo.State.LastSeq
	src := streamHashes(ctx, m.src.JS, m.srcName, from, to, sourceHash)
	dst := streamHashes(ctx, m.dst.JS, m.dstName, from, to, copyHash)
	if err := m.compareFrozen(ctx, src, dst); err != nil {
		return err
	}
	return m.verifySets(ctx, sinfo, deleted, setChecks{lastSeq: true})
}

// encodeHeader is the header of the copy, published at now, of a message
// with header h stored at t: headers the server acts on renamed (listed in
// Jetctl-Migrate-Renamed), the original time kept, and a Nats-TTL of the
// copy's own by ttl (copyTTL; the original's is renamed like the others, so
// that DecodeHeader gives it back). jetctl's own headers go one
// Jetctl-Orig- deeper than any of their names the message has already (a
// message copied before), so that DecodeHeader tells them apart.
func encodeHeader(h nats.Header, t, now time.Time, ttl envelope.TTLMode) nats.Header {
	out := make(nats.Header, len(h)+3)
	var server []string
	depth := -1
	for k, vs := range h {
		if isExpectation(k) {
			// A publish's expectation, checked when the source stored it:
			// meaningless in the copy, and harmful to anyone publishing
			// the copy again. A mirror drops them too.
			continue
		}
		if envelope.Renames(envelope.CmdCopy, k) {
			server = append(server, k)
			continue
		}
		out[k] = vs
		depth = max(depth, ownDepth(k))
	}
	pre := strings.Repeat(envelope.OrigPrefix, depth+1)
	if len(server) > 0 {
		slices.Sort(server)
		renamed := make([]string, 0, len(server))
		for _, k := range server {
			n := envelope.OrigPrefix + k
			for {
				if _, taken := h[n]; !taken {
					break
				}
				n = envelope.OrigPrefix + n
			}
			out[n] = h[k]
			renamed = append(renamed, n)
		}
		out[pre+HeaderRenamed] = []string{strings.Join(renamed, " ")}
	}
	out[pre+HeaderTime] = []string{t.UTC().Format(time.RFC3339Nano)}
	if v := copyTTL(h, t, now, ttl); v != "" {
		out[envelope.TTLHeader] = []string{v}
	}
	return out
}

// copyTTL is the Nats-TTL of the copy, published at now, of a message
// stored at stored with header h, by mode; "" for none. remaining gives
// what is left of the original's, rounded up to whole seconds, and at
// least the server's least (1s) for one whose time is up (the server
// removes it from the source any moment): the copy never goes before its
// original, so a comparison never finds it gone from the target alone,
// and jetctl's copy keeps every sequence, so it skips nothing. keep gives
// the original's TTL again, counted from the copy's time; drop none (the
// copy never expires).
func copyTTL(h nats.Header, stored, now time.Time, mode envelope.TTLMode) string {
	if mode == envelope.TTLDrop || len(h[envelope.TTLHeader]) == 0 {
		return ""
	}
	st, err := envelope.TTLAt(h, stored, now)
	switch {
	case err != nil || !st.Has:
		// None the server would act on: the copy has none either.
		return ""
	case st.Never:
		return envelope.FormatTTL(0, true)
	case mode == envelope.TTLKeep:
		return envelope.FormatTTL(st.TTL, false)
	}
	left := (st.Deadline.Sub(now) + time.Second - 1) / time.Second * time.Second
	return envelope.FormatTTL(max(left, time.Second), false)
}

// isExpectation says whether header name is a publish's expectation
// (Nats-Expected-*): the server checks it when it stores the message and
// keeps it; a mirror drops it, and so do jetctl's copy and verification.
func isExpectation(name string) bool { return strings.HasPrefix(name, "Nats-Expected-") }

// ownDepth is n when name is n times envelope.OrigPrefix before one of
// jetctl's copy headers, -1 otherwise.
func ownDepth(name string) int {
	n := 0
	for strings.HasPrefix(name, envelope.OrigPrefix) {
		name = name[len(envelope.OrigPrefix):]
		n++
	}
	if name == HeaderTime || name == HeaderRenamed || name == HeaderFiller {
		return n
	}
	return -1
}

// DecodeHeader is the header of the source message of which h is the
// copy's: encodeHeader undone, and the Nats-Expected-* headers of the
// copy's publish (the server stores them) dropped.
func DecodeHeader(h nats.Header) nats.Header {
	depth := -1
	for k := range h {
		if strings.HasSuffix(k, HeaderTime) {
			depth = max(depth, ownDepth(k))
		}
	}
	if depth < 0 {
		return h
	}
	pre := strings.Repeat(envelope.OrigPrefix, depth)
	out := maps.Clone(h)
	for k := range h {
		if isExpectation(k) {
			delete(out, k) // the copy's publish's: the source's were dropped
		}
	}
	delete(out, pre+HeaderTime)
	if r, ok := out[pre+HeaderRenamed]; ok && len(r) > 0 {
		delete(out, pre+HeaderRenamed)
		for _, n := range strings.Fields(r[0]) {
			vs, ok := out[n]
			if !ok {
				continue
			}
			delete(out, n)
			orig := n
			for strings.HasPrefix(orig, envelope.OrigPrefix) {
				orig = orig[len(envelope.OrigPrefix):]
			}
			out[orig] = vs
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sourceHash hashes a message of the source for the copy's verification:
// subject, headers and payload, not the time.
func sourceHash(m *envelope.Message) uint64 { return hashMsg(m, copiedHash) }

// copyHash hashes a message of the target, jetctl's copy, as sourceHash
// hashes its original: the headers mapped back.
func copyHash(m *envelope.Message) uint64 {
	return hashMsg(&envelope.Message{Subject: m.Subject, Header: DecodeHeader(m.Header), Data: m.Data}, copiedHash)
}
