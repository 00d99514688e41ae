package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/mover"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/retry"
)

// MaxConsecutiveFailures stops a republish whose target keeps refusing:
// retrying every remaining message would only take long and fail alike.
const MaxConsecutiveFailures = 10

// ErrTargetFailing is returned when MaxConsecutiveFailures publishes in a
// row failed after their retries.
var ErrTargetFailing = errors.New("target keeps failing")

// NoStreamError is a publish that no stream captured: the server answered
// that nothing listens on the subject.
type NoStreamError struct{ Subject string }

func (e *NoStreamError) Error() string {
	return fmt.Sprintf("no stream captures subject %q", e.Subject)
}

// Unwrap makes a NoStreamError a jetstream.ErrNoStreamResponse.
func (e *NoStreamError) Unwrap() error { return jetstream.ErrNoStreamResponse }

// Counts is what the target confirmed of a republish.
type Counts struct {
	// Stored copies the target acknowledged as new.
	Stored uint64
	// Bytes of the stored copies' payloads.
	Bytes uint64
	// Duplicates the target already held (the same Nats-Msg-Id inside its
	// duplicate window, or found there when resuming): nothing new stored.
	Duplicates uint64
	// Unconfirmed copies were sent but no acknowledgement came before the
	// replay stopped: they may or may not be stored.
	Unconfirmed uint64
	// Expired messages were not copied: their TTL had passed (--ttl
	// remaining).
	Expired uint64
	// Markers were not copied: subject delete markers (--markers skip).
	Markers uint64
}

// DefaultMsgIDPrefix starts the Nats-Msg-Id of every copy.
const DefaultMsgIDPrefix = "replay"

// NewMsgIDPrefix returns a message id prefix of its own for one copy made
// on purpose again ("replay-<run id>"), so that the target stores it even
// where an earlier copy's ids are still known.
func NewMsgIDPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%s-%x", DefaultMsgIDPrefix, time.Now().UnixNano())
	}
	return DefaultMsgIDPrefix + "-" + hex.EncodeToString(b[:])
}

// copyStatus is where a copy stands.
type copyStatus uint8

const (
	// queued: written, not sent yet (or never, if the run stopped first).
	queued copyStatus = iota
	// sent: in the window, being settled.
	sent
	// retrying: refused, waiting for its retry.
	retrying
	// stored (a duplicate included) and failed are final.
	stored
	failed
	// unconfirmed: sent, and the settle stopped waiting (Close's context
	// ended).
	unconfirmed
)

// copyState is one copy on its way to the target.
type copyState struct {
	stream string
	seq    uint64
	bytes  int
	// from is where each target stream stood before the copy was first
	// sent: the copy, and every copy after it, is stored after that.
	from map[string]uint64
	// src is the message until send builds msg from it; at is when Write
	// took it, the time its TTL is counted at.
	src  *envelope.Message
	at   time.Time
	msg  *nats.Msg
	msgv nats.Msg
	// hdr and vals hold msgv's headers; a copy settled in order is used
	// again for a later one (see recycle), with its map.
	hdr  nats.Header
	vals [5]string
	// pub is the latest send; the first is first, others are allocated.
	pub   *mover.Pub
	first mover.Pub

	// Set by the settle stage, under the publisher's mutex.
	status copyStatus
	// found: Prepare found the copy in the target (an earlier run stored
	// it); duplicate: the target had it before this run.
	found, duplicate bool
	// maybeStored: an earlier send of this run may have stored the copy
	// (it was not acknowledged, or not in time), so a duplicate
	// acknowledgement of a later one is this run's own copy.
	maybeStored bool
	tries       int
	due         time.Time
	err         error
}

// storedBy records that the target holds c, as pub's outcome says.
func (c *copyState) storedBy(pub *mover.Pub) {
	c.status = stored
	// A duplicate is the target's own only if no send of this run can have
	// stored the copy: neither an earlier send of this one (Resent) nor
	// one of an earlier round.
	c.duplicate = pub.Duplicate && !pub.Resent && !pub.Found && !c.maybeStored
}

// refusedBy records pub's error outcome on c.
func (c *copyState) refusedBy(pub *mover.Pub) {
	c.maybeStored = c.maybeStored || pub.Resent || mayBeStored(pub.Err)
	c.err = pub.Err
	if errors.Is(c.err, jetstream.ErrNoStreamResponse) {
		c.err = &NoStreamError{Subject: c.msg.Subject}
	}
}

// mayBeStored: a send that ended in err may still have been stored (its
// answer did not come), unlike one the target refused.
func mayBeStored(err error) bool {
	return errors.Is(err, mover.ErrUnconfirmed) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoHeartbeat)
}

// Publisher republishes messages through a mover.Window, with at most
// MaxInFlight copies written and not yet settled, and settles them in
// order: Write publishes each copy itself (a hand-over to a goroutine of
// its own cost more CPU than the publish), a retry stage sends the copies
// to try again, and a settle stage settles them in the order they were
// sent, so that sending and settling overlap.
//
// Each copy has Nats-Msg-Id <prefix>:<stream>:<seq>:<target subject>, so
// the target stores it once per target subject within its duplicate
// window. Beyond that window, a lookup of the copies already stored
// (Prepare, with a checkpoint, and after every reconnect) keeps a copy from
// being stored twice: copies carry their id and are looked for after the
// target positions recorded before they were sent.
//
// The window sends again what a reconnect may have lost (after the lookup)
// and what was not acknowledged in time. A refused copy is retried here,
// Retries times after a growing pause (250 ms to 1 s), while the copies
// after it go on; a copy still refused then has failed.
type Publisher struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	cfg     PublishConfig
	timeout time.Duration

	w     *mover.Window
	sent  chan *copyState // Write and the retry stage → the settle stage
	kick  chan struct{}   // wakes the retry stage: a retry, or the end
	slots chan struct{}   // one per copy written and not yet settled in order
	done  chan struct{}   // closed when both stages ended
	// sendMu is held while a copy is published and handed to the settle
	// stage, so that the window's publishes and settles keep one order
	// (Write and the retry stage both send); sentClosed, under it: the
	// retry stage ended and closed sent.
	sendMu     sync.Mutex
	sentClosed bool
	runCtx     context.Context // ends when Close stops waiting
	halt       context.CancelFunc
	closing    atomic.Bool
	// inWindow counts the copies sent and not yet settled, nRetrying those
	// waiting for a retry: the retry stage ends when Close was called and
	// both are zero.
	inWindow, nRetrying atomic.Int64

	// Write's own (the caller's goroutine).
	lastWritten uint64
	pos         map[string]uint64
	posGen      uint64
	posAge      int
	prepared    bool
	found       map[copyKey]bool
	keepFrom    map[string]uint64
	keepUntil   uint64
	onFloor     func(uint64)
	floorLag    uint64
	floorSeen   uint64
	abandon     bool

	// Shared with the stages.
	mu      sync.Mutex
	pending []*copyState // written and not settled in order, oldest first
	free    []*copyState // settled in order, to be used again (recycle)
	retries []*copyState // waiting for their retry
	// base is where the target streams stood when the publisher started;
	// acked the highest sequence acknowledged per stream, ackedGen its
	// version.
	base        map[string]uint64
	acked       map[string]uint64
	ackedGen    uint64
	stopping    bool
	failed      []uint64
	firstFailed uint64
	failedFrom  map[string]uint64
	consecutive int
	fatal       error
	lastErr     error
	counts      Counts
}

type copyKey struct {
	stream string
	seq    uint64
}

// NewPublisher returns a publisher to js.
func NewPublisher(js jetstream.JetStream, cfg PublishConfig) *Publisher {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	} else if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.MsgIDPrefix == "" {
		cfg.MsgIDPrefix = DefaultMsgIDPrefix
	}
	timeout := js.Options().DefaultTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Publisher{js: js, nc: js.Conn(), cfg: cfg, timeout: timeout, acked: make(map[string]uint64)}
}

// MsgID is the Nats-Msg-Id of the copy of stream's seq on target subject.
func (p *Publisher) MsgID(stream string, seq uint64, subject string) string {
	id := make([]byte, 0, len(p.cfg.MsgIDPrefix)+len(stream)+len(subject)+24)
	id = append(append(append(append(id, p.cfg.MsgIDPrefix...), ':'), stream...), ':')
	id = strconv.AppendUint(id, seq, 10)
	id = append(append(id, ':'), subject...)
	return string(id)
}

// Copy builds the message published for m at now, or says why m is not
// copied (its TTL has passed, or it is a marker to skip).
func (p *Publisher) Copy(m *envelope.Message, now time.Time) (*nats.Msg, Skip) {
	if why := p.cfg.skipOf(m, now); why != SkipNone {
		return nil, why
	}
	c := &copyState{at: now}
	p.build(c, m)
	return &c.msgv, SkipNone
}

// build makes c.msgv the copy of m: m's headers as the header table's
// republish column says (envelope.CopyHeaderInto: those the server acts on moved
// aside, Nats-TTL by --ttl as of c.at), provenance and the copy's
// Nats-Msg-Id, to the target subject. The subject and the values it adds
// share one string, in c's header map and values (made once per
// copyState, see recycle): one allocation per copy of a message without
// headers, at hundreds of thousands of copies a second.
func (p *Publisher) build(c *copyState, m *envelope.Message) {
	if c.hdr == nil {
		c.hdr = make(nats.Header, len(m.Header)+5)
	}
	hdr := c.hdr
	envelope.CopyHeaderInto(envelope.CmdRepublish, hdr, m.Header)
	p.cfg.applyTTL(hdr, m, c.at)
	var buf [256]byte
	b := append(buf[:0], p.cfg.MsgIDPrefix...)
	b = append(append(append(b, ':'), m.Stream...), ':')
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, ':')
	subjectAt := len(b)
	b = appendTargetSubject(b, p.cfg.To, m.Subject)
	idEnd := len(b)
	var seqEnd int
	if !p.cfg.NoProvenance {
		b = strconv.AppendUint(b, m.Seq, 10)
		seqEnd = len(b)
		b = m.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	}
	text := string(b)
	vals := &c.vals
	vals[0] = text[:idEnd]
	hdr[jetstream.MsgIDHeader] = vals[0:1:1]
	if !p.cfg.NoProvenance {
		// As envelope.SetProvenance.
		vals[1], vals[2], vals[3], vals[4] = m.Stream, text[idEnd:seqEnd], m.Subject, text[seqEnd:]
		hdr[envelope.SourceStream] = vals[1:2:2]
		hdr[envelope.SourceSeq] = vals[2:3:3]
		hdr[envelope.SourceSubject] = vals[3:4:4]
		hdr[envelope.SourceTime] = vals[4:5:5]
	}
	c.msgv = nats.Msg{Subject: text[subjectAt:idEnd], Header: hdr, Data: m.Data}
}

// newCopy returns a copyState for m, one settled before if there is one.
// Called with the mutex held.
func (p *Publisher) newCopy(m *envelope.Message) *copyState {
	var c *copyState
	if n := len(p.free); n > 0 {
		c, p.free[n-1] = p.free[n-1], nil
		p.free = p.free[:n-1]
	} else {
		c = new(copyState)
	}
	c.stream, c.seq, c.bytes, c.src, c.found = m.Stream, m.Seq, len(m.Data), m, p.found[copyKey{m.Stream, m.Seq}]
	return c
}

// recycle keeps c, taken off pending and counted, for a later copy: its
// message was published and settled, and nothing refers to it any more
// (the window let go of it in Settle, the stages passed it on). Called
// with the mutex held.
func (p *Publisher) recycle(c *copyState) {
	if len(p.free) >= p.cfg.MaxInFlight {
		return
	}
	hdr := c.hdr
	clear(hdr)
	*c = copyState{hdr: hdr}
	p.free = append(p.free, c)
}

// start opens the window and starts the two stages, at the first Write.
func (p *Publisher) start() error {
	if p.w != nil {
		return nil
	}
	w, err := mover.New(p.js, mover.Config{
		MaxPending:   p.cfg.MaxInFlight,
		AckWait:      p.timeout,
		Recover:      p.recoverOpen,
		OnConnection: p.cfg.OnConnection,
		OwnRetries:   true,
	})
	if err != nil {
		return err
	}
	n := p.cfg.MaxInFlight
	p.w = w
	p.sent = make(chan *copyState, n)
	p.slots, p.kick, p.done = make(chan struct{}, n), make(chan struct{}, 1), make(chan struct{})
	p.runCtx, p.halt = context.WithCancel(context.Background())
	go p.retryStage()
	go func() {
		defer close(p.done)
		p.settleStage()
	}()
	return nil
}

// Write publishes a copy of m, waiting while MaxInFlight copies are
// written and not settled. It returns the error that ends the republish:
// the target keeps failing, or the connection is closed.
func (p *Publisher) Write(ctx context.Context, m *envelope.Message) error {
	if err := p.start(); err != nil {
		return err
	}
	if p.nc.IsClosed() {
		return fmt.Errorf("connection to the target closed: %w", nats.ErrConnectionClosed)
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Decided once the copy can be sent, so that its TTL is what is left
	// when it is.
	now := time.Now()
	if why := p.cfg.skipOf(m, now); why != SkipNone {
		<-p.slots
		p.skip(m, why)
		return nil
	}
	p.mu.Lock()
	c := p.newCopy(m)
	if perr := natsconn.RefusalOf(p.nc).Err(); perr != nil && p.fatal == nil {
		// The server refused the connection something: the command is
		// stopping (natsconn aborts it).
		p.fatal = perr
	}
	if err := p.fatal; err != nil {
		var perr *natsconn.PermissionError
		if errors.As(err, &perr) && perr.Op == "publish" && perr.Subject == TargetSubject(p.cfg.To, m.Subject) && !c.found {
			// A copy to the refused subject would store nothing.
			c.err = err
			p.fail(c)
		}
		p.mu.Unlock()
		<-p.slots
		return err
	}
	c.from, c.at = p.positionsLocked(false), now
	p.pending = append(p.pending, c)
	p.lastWritten = m.Seq
	floor := p.floorLocked(m.Seq)
	p.mu.Unlock()
	if !p.send(c) {
		// Only Close stops the run, and Write is not called after it.
		return fmt.Errorf("republish stopped: %w", context.Canceled)
	}
	if p.onFloor != nil && floor >= p.floorSeen+p.floorLag {
		p.floorSeen = floor
		p.onFloor(floor)
	}
	return nil
}

// skip counts m as done without a copy: the floor (and the checkpoint)
// passes it once the copies before it are settled, so that a resumed run
// starts after it.
func (p *Publisher) skip(m *envelope.Message, why Skip) {
	p.mu.Lock()
	switch why {
	case SkipExpired:
		p.counts.Expired++
	case SkipMarker:
		p.counts.Markers++
	}
	p.lastWritten = m.Seq
	floor := p.floorLocked(m.Seq)
	p.mu.Unlock()
	if p.onFloor != nil && floor >= p.floorSeen+p.floorLag {
		p.floorSeen = floor
		p.onFloor(floor)
	}
}

// retryStage sends the retries when they are due, until Close was called
// and nothing is left to send, or the run was stopped; then it closes the
// settle stage's input.
func (p *Publisher) retryStage() {
	defer func() {
		p.sendMu.Lock()
		p.sentClosed = true
		close(p.sent)
		p.sendMu.Unlock()
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var due <-chan time.Time
		if p.nRetrying.Load() > 0 {
			c, wait := p.dueRetry(time.Now())
			if c != nil {
				if !p.send(c) {
					return
				}
				continue
			}
			if wait > 0 {
				timer.Reset(wait)
				due = timer.C
			}
		} else if p.closing.Load() && p.inWindow.Load() == 0 && p.nRetrying.Load() == 0 {
			// Write sent every copy before Close was called, and the
			// settle stage counts a retry before it lets go of the copy:
			// with nothing in the window, none can come.
			return
		}
		select {
		case <-p.kick:
		case <-due:
		case <-p.runCtx.Done():
			return
		}
		timer.Stop()
	}
}

// send publishes c (building its message the first time) and hands it to
// the settle stage; false when the run was stopped first.
func (p *Publisher) send(c *copyState) bool {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.sentClosed {
		return false
	}
	if c.msg == nil && !c.found {
		p.build(c, c.src)
		c.msg, c.src = &c.msgv, nil
	}
	p.inWindow.Add(1)
	if !c.found {
		if c.pub == nil {
			c.first.Msg = c.msg
			c.pub = &c.first
		} else {
			c.pub = &mover.Pub{Msg: c.msg}
		}
		if err := p.w.Publish(p.runCtx, c.pub); err != nil {
			p.inWindow.Add(-1)
			return false
		}
	}
	p.sent <- c
	return true
}

// dueRetry takes the copy whose retry is due, if any, or says how long
// until the next one is.
func (p *Publisher) dueRetry(now time.Time) (*copyState, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var next time.Duration
	for i, c := range p.retries {
		if wait := c.due.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		p.retries = slices.Delete(p.retries, i, i+1)
		p.nRetrying.Add(-1)
		c.status = queued
		return c, 0
	}
	return nil, next
}

// settleStage settles the copies in the order they were sent.
func (p *Publisher) settleStage() {
	for c := range p.sent {
		if !c.found {
			p.w.Settle(p.runCtx, c.pub)
		}
		p.settled(c)
	}
}

// settled applies the publisher's policy to c's outcome: stored, retried
// after a pause, or failed; then takes the settled copies off the head.
func (p *Publisher) settled(c *copyState) {
	p.mu.Lock()
	wake := false
	switch pub := c.pub; {
	case c.found:
		c.status, c.duplicate = stored, true
	case pub.Stored():
		c.storedBy(pub)
		if pub.Stream != "" && pub.Seq > p.acked[pub.Stream] {
			p.acked[pub.Stream] = pub.Seq
			p.ackedGen++
		}
	case errors.Is(pub.Err, mover.ErrUnconfirmed):
		c.status = unconfirmed
	default:
		c.refusedBy(pub)
		var perr *natsconn.PermissionError
		if errors.As(c.err, &perr) && p.fatal == nil {
			// The server refused this user the subject: the command is
			// stopping (natsconn aborts it), and no retry helps.
			p.fatal = perr
		}
		if c.tries < p.cfg.Retries && p.retryable(c.err) {
			c.tries++
			c.status, c.due = retrying, time.Now().Add(retryPause(c.tries))
			p.retries = append(p.retries, c)
			p.nRetrying.Add(1)
			wake = true
		} else {
			c.status = failed
		}
	}
	release := p.advance()
	p.mu.Unlock()
	p.inWindow.Add(-1)
	for range release {
		<-p.slots
	}
	if wake || (p.closing.Load() && p.inWindow.Load() == 0) {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// retryable: err may pass when the copy is sent again (jetctl's one
// transient rule, as every mover's), and the run goes on. An answer, even
// a refusal (a full discard-new stream, 10077), is final. Called with the
// mutex held.
func (p *Publisher) retryable(err error) bool {
	return !p.stopping && p.fatal == nil && retry.Transient(err)
}

// retryPause grows from 250ms to 1s: long enough for a stream that is
// being restored after a restart, short enough for a missing one to fail
// fast.
func retryPause(try int) time.Duration {
	return min(time.Second, 250*time.Millisecond<<(try-1))
}

// advance takes the settled copies off the head of pending, counting them,
// and returns how many. After a fatal error the copies waiting for a
// retry have failed. Called with the mutex held.
func (p *Publisher) advance() int {
	n := 0
	for {
		for len(p.pending) > 0 {
			c := p.pending[0]
			if c.status != stored && c.status != failed {
				break
			}
			p.pending[0] = nil
			p.pending = p.pending[1:]
			n++
			if c.status == failed {
				p.fail(c)
				p.consecutive++
				if p.consecutive >= MaxConsecutiveFailures && p.fatal == nil {
					p.fatal = fmt.Errorf("%w: %d publishes in a row failed (last: %v)", ErrTargetFailing, p.consecutive, p.lastErr)
				}
				continue
			}
			p.consecutive = 0
			p.count(c)
			p.recycle(c)
		}
		if p.fatal == nil || len(p.retries) == 0 {
			return n
		}
		p.giveUpRetries()
	}
}

// giveUpRetries fails the copies waiting for a retry. Called with the
// mutex held.
func (p *Publisher) giveUpRetries() {
	for _, c := range p.retries {
		c.status = failed
		p.nRetrying.Add(-1)
	}
	p.retries = p.retries[:0]
}

// fail records c as failed. Called with the mutex held.
func (p *Publisher) fail(c *copyState) {
	p.lastErr = c.err
	p.failed = append(p.failed, c.seq)
	if p.firstFailed == 0 || c.seq < p.firstFailed {
		p.firstFailed, p.failedFrom = c.seq, c.from
	}
}

// count adds a stored copy to the counts: a duplicate if the target had it
// before this run (found when resuming, or acknowledged as a duplicate
// with no earlier send of this run that may have stored it), else stored.
func (p *Publisher) count(c *copyState) {
	if c.found || c.duplicate {
		p.counts.Duplicates++
		return
	}
	p.counts.Stored++
	p.counts.Bytes += uint64(c.bytes)
}

// recoverOpen is the window's Recover: after a reconnect, the copies the
// target stored of those whose acknowledgement may be lost are looked up
// (cheap: from the positions recorded before the oldest unsettled copy was
// sent) and settled as found; the window sends the rest again at once.
// Without a lookup (it failed), the Nats-Msg-Id keeps a copy sent twice
// within the duplicate window from being stored twice.
func (p *Publisher) recoverOpen(ctx context.Context, open []*mover.Pub) {
	p.mu.Lock()
	var from map[string]uint64
	if len(p.pending) > 0 {
		from = p.pending[0].from
	}
	p.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, 2*p.timeout)
	defer cancel()
	found, err := p.findStored(lctx, from, func(copyKey) bool { return true })
	if err != nil || len(found) == 0 {
		return
	}
	for _, pub := range open {
		if k, ok := p.keyOf(pub.Msg); ok && found[k] {
			p.w.Found(pub)
		}
	}
}

// positionsLocked is a snapshot of where the target streams stand as far
// as the publisher knows: a lower bound, refreshed every 64 copies (or
// now, if fresh). Called with the mutex held.
func (p *Publisher) positionsLocked(fresh bool) map[string]uint64 {
	p.posAge++
	if p.pos != nil && !fresh && p.posAge < 64 {
		return p.pos
	}
	p.posAge = 0
	if p.pos != nil && p.posGen == p.ackedGen {
		return p.pos
	}
	p.posGen = p.ackedGen
	pos := make(map[string]uint64, len(p.base)+len(p.acked))
	for k, v := range p.base {
		pos[k] = v
	}
	for k, v := range p.acked {
		pos[k] = max(pos[k], v)
	}
	p.pos = pos
	return pos
}

// interrupted tells Close not to wait for acknowledgements while the
// connection is down: the run was interrupted, and they may never come.
func (p *Publisher) interrupted() { p.abandon = true }

// watchFloor calls fn (from Write) whenever the floor moved by lag (0:
// MaxInFlight) since fn was last called.
func (p *Publisher) watchFloor(lag uint64, fn func(floor uint64)) {
	if lag == 0 {
		lag = uint64(p.cfg.MaxInFlight)
	}
	p.floorLag, p.onFloor = lag, fn
}

// Floor is the last sequence before the oldest unsettled or failed copy:
// everything up to it is stored in the target.
func (p *Publisher) Floor(lastRead uint64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.floorLocked(lastRead)
}

func (p *Publisher) floorLocked(lastRead uint64) uint64 {
	// Nothing pending, everything written is settled: called while Write
	// is still at work, lastRead is the message before; the positions a
	// checkpoint records then are for copies after the last written.
	floor := max(lastRead, p.lastWritten)
	if len(p.pending) > 0 {
		floor = p.pending[0].seq - 1
	}
	if p.firstFailed > 0 && p.firstFailed-1 < floor {
		floor = p.firstFailed - 1
	}
	return floor
}

// stop makes the stages stop waiting: what is not acknowledged is
// unconfirmed, and nothing more is sent or retried.
func (p *Publisher) stop() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	p.halt()
}

// Close waits for every copy written until ctx ends (not at all when
// interrupted while the connection is down); what is still unacknowledged
// then is counted as unconfirmed. After a fatal error it only collects the
// outcomes of what was sent, without retries, and returns that error.
func (p *Publisher) Close(ctx context.Context) error {
	if p.w == nil {
		return nil
	}
	p.closing.Store(true)
	select {
	case p.kick <- struct{}{}:
	default:
	}
	if ctx.Err() != nil || (p.abandon && !p.nc.IsConnected()) {
		p.stop()
	}
	stopWaiting := context.AfterFunc(ctx, p.stop)
	<-p.done
	stopWaiting()
	p.halt()
	p.w.Close()

	p.mu.Lock()
	defer p.mu.Unlock()
	// What could not be settled in order: counted, listed or unconfirmed;
	// it stays pending, so that the floor stays before it.
	for _, c := range p.pending {
		switch c.status {
		case stored:
			p.count(c)
		case failed, retrying:
			p.fail(c)
		case queued:
			// Taken for a retry the run stopped before: it failed.
			if c.err != nil {
				p.fail(c)
			}
		case unconfirmed:
			p.counts.Unconfirmed++
		}
	}
	p.giveUpRetries()
	slices.Sort(p.failed)
	if p.fatal == nil && p.nc.IsClosed() && len(p.pending) > 0 {
		return fmt.Errorf("connection to the target closed: %w", nats.ErrConnectionClosed)
	}
	return p.fatal
}

// Counts is what the target confirmed so far.
func (p *Publisher) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// Failed lists the sequences whose copies could not be stored.
func (p *Publisher) Failed() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// LastError is the last publish error, for reporting failures.
func (p *Publisher) LastError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// MsgIDPrefixFor returns the message id prefix of a republish: a resumed
// one keeps its checkpoint's, so that it stays one copy; newID starts a
// copy of its own (NewMsgIDPrefix), which the target stores even where an
// earlier copy's ids are known.
func MsgIDPrefixFor(cp *Checkpoint, newID bool) (string, error) {
	if cp == nil {
		if newID {
			return NewMsgIDPrefix(), nil
		}
		return DefaultMsgIDPrefix, nil
	}
	prefix := cp.MsgIDPrefix
	if prefix == "" {
		prefix = DefaultMsgIDPrefix
	}
	if newID && prefix == DefaultMsgIDPrefix {
		return "", errors.New("--new-msg-id: the checkpoint continues a copy made without it; remove the checkpoint file to copy again")
	}
	return prefix, nil
}
