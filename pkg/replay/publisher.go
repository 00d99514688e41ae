package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/natsconn"
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

// copyState is one copy on its way to the target.
type copyState struct {
	stream string
	seq    uint64
	bytes  int
	msg    *nats.Msg
	// from is where each target stream stood before the copy was first
	// sent: the copy, and every copy after it, is stored after that.
	from map[string]uint64
	// sends counts the sends, tries the failed outcomes (an error or, while
	// connected, no acknowledgement within the timeout), refused the sends
	// whose outcome was an error: they stored nothing.
	sends, tries, refused int
	sentAt                time.Time
	retryAt               time.Time
	// found: a lookup found the copy in the target; failed: given up.
	found, failed bool

	// Set by acks, under its mutex.
	tokens            []uint64
	stored, duplicate bool
	err               error
}

// Publisher republishes messages asynchronously with at most MaxInFlight
// unacknowledged and settles them in order.
//
// Each copy has Nats-Msg-Id <prefix>:<stream>:<seq>:<target subject>, so
// the target stores it once per target subject within its duplicate
// window. Beyond that window, a lookup of the copies already stored
// (Prepare, with a checkpoint, and after every reconnect) keeps a copy from
// being stored twice: copies carry their id and are looked for after the
// target positions recorded before they were sent.
//
// When the connection goes away, copies keep going into the client's
// reconnect buffer up to the in-flight bound; when it is back, the copies
// not acknowledged are looked up and sent again at once. A copy without an
// acknowledgement within the timeout, with the connection up, is sent again
// together with every other one as old. An error outcome is retried after
// a short pause, Retries times.
type Publisher struct {
	js         jetstream.JetStream
	nc         *nats.Conn
	cfg        PublishConfig
	acks       *acks
	status     chan nats.Status
	ackTimeout time.Duration

	// refusal: the server refused the connection a publish or a
	// subscription; refusalSeen: refused has handled it.
	refusal     *natsconn.Refusal
	refusalSeen bool

	pending  []*copyState
	retrying int
	down     bool
	downAt   time.Time
	server   string
	// reconnected asks the next step to recover the copies in flight.
	reconnected bool
	closedErr   error
	stopping    bool
	// abandon: interrupted, so acknowledgements are not waited for while
	// the connection is down.
	abandon bool

	failed      []uint64
	firstFailed uint64
	failedFrom  map[string]uint64
	consecutive int
	fatal       error
	lastErr     error
	counts      Counts
	lastWritten uint64

	// base is where the target streams stood when the publisher started;
	// pos is the latest snapshot of base and the acknowledged positions.
	base      map[string]uint64
	pos       map[string]uint64
	posGen    uint64
	posAge    int
	prepared  bool
	found     map[copyKey]bool
	keepFrom  map[string]uint64
	keepUntil uint64
	onFloor   func(uint64)
	floorLag  uint64
	floorSeen uint64
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
	return &Publisher{js: js, nc: js.Conn(), cfg: cfg, ackTimeout: timeout}
}

// MsgID is the Nats-Msg-Id of the copy of stream's seq on target subject.
func (p *Publisher) MsgID(stream string, seq uint64, subject string) string {
	id := make([]byte, 0, len(p.cfg.MsgIDPrefix)+len(stream)+len(subject)+24)
	id = append(append(append(append(id, p.cfg.MsgIDPrefix...), ':'), stream...), ':')
	id = strconv.AppendUint(id, seq, 10)
	id = append(append(id, ':'), subject...)
	return string(id)
}

// Copy builds the message published for m.
func (p *Publisher) Copy(m *envelope.Message) *nats.Msg {
	hdr := envelope.CopyHeader(m.Header, 4)
	if !p.cfg.NoProvenance {
		envelope.SetProvenance(hdr, m)
	}
	subject := TargetSubject(p.cfg.To, m.Subject)
	hdr[jetstream.MsgIDHeader] = []string{p.MsgID(m.Stream, m.Seq, subject)}
	return &nats.Msg{Subject: subject, Header: hdr, Data: m.Data}
}

func (p *Publisher) start() error {
	if p.acks != nil {
		return nil
	}
	a, err := newAcks(p.nc)
	if err != nil {
		return err
	}
	p.acks = a
	p.status = p.nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	p.server = p.nc.ConnectedUrlRedacted()
	p.refusal = natsconn.RefusalOf(p.nc)
	return nil
}

// Write publishes a copy of m, waiting while MaxInFlight are unsettled.
func (p *Publisher) Write(ctx context.Context, m *envelope.Message) error {
	if err := p.start(); err != nil {
		return err
	}
	p.lastWritten = m.Seq
	c := &copyState{stream: m.Stream, seq: m.Seq, bytes: len(m.Data), from: p.positionsNow(false)}
	if p.found[copyKey{m.Stream, m.Seq}] {
		c.found, c.stored, c.duplicate = true, true, true
	} else {
		c.msg = p.Copy(m)
		p.send(c)
	}
	p.pending = append(p.pending, c)
	for {
		if err := p.step(ctx); err != nil {
			return err
		}
		if len(p.pending) < p.cfg.MaxInFlight {
			return nil
		}
		if err := p.wait(ctx); err != nil {
			return err
		}
	}
}

func (p *Publisher) send(c *copyState) {
	c.sends++
	c.sentAt = time.Now()
	if !c.retryAt.IsZero() {
		c.retryAt = time.Time{}
		p.retrying--
	}
	// A send that fails while disconnected (the reconnect buffer is full)
	// is sent again when the connection is back or its timeout passes;
	// connected, the failure is its outcome (say, a copy larger than the
	// server's max_payload).
	if err := p.acks.publish(c); err != nil && p.nc.IsConnected() {
		p.acks.fail(c, err)
	}
}

// step does what needs no waiting: connection changes, retries, timeouts,
// and settling the oldest copies. It returns an error that ends the
// republish.
func (p *Publisher) step(ctx context.Context) error {
	p.pollStatus()
	if p.closedErr != nil {
		return p.closedErr
	}
	if perr := p.refusal.Err(); perr != nil {
		p.refused(perr)
	}
	now := time.Now()
	if p.reconnected {
		p.reconnected = false
		p.recover(ctx)
	}
	for _, c := range p.acks.takeFailed() {
		c.refused++
		if c.failed || c.found {
			continue
		}
		stored, _ := p.acks.outcome(c)
		if stored {
			continue
		}
		p.tried(c, p.errOf(c), now)
	}
	if !p.down && len(p.pending) > 0 {
		head := p.pending[0]
		timedOut := !head.settled(p.acks) && head.retryAt.IsZero() && now.Sub(head.sentAt) >= p.ackTimeout
		if timedOut || p.retrying > 0 {
			p.resendDue(now, timedOut)
		}
	}
	p.settle()
	if p.fatal != nil && !p.stopping {
		return p.fatal
	}
	return nil
}

func (c *copyState) settled(a *acks) bool {
	if c.failed {
		return true
	}
	stored, _ := a.outcome(c)
	return stored
}

func (p *Publisher) errOf(c *copyState) error {
	p.acks.mu.Lock()
	defer p.acks.mu.Unlock()
	err := c.err
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		err = &NoStreamError{Subject: c.msg.Subject}
	}
	return err
}

// tried records a failed outcome of c: retried after a pause, or given up.
func (p *Publisher) tried(c *copyState, err error, now time.Time) {
	c.tries++
	if c.tries > p.cfg.Retries || p.stopping || errors.Is(err, nats.ErrMaxPayload) {
		p.giveUp(c, err)
		return
	}
	if c.retryAt.IsZero() {
		p.retrying++
	}
	c.retryAt = now.Add(retryPause(c.tries))
}

// giveUp records that c could not be stored, for err.
func (p *Publisher) giveUp(c *copyState, err error) {
	c.failed = true
	if !c.retryAt.IsZero() {
		c.retryAt = time.Time{}
		p.retrying--
	}
	p.lastErr = err
	p.failed = append(p.failed, c.seq)
	if p.firstFailed == 0 || c.seq < p.firstFailed {
		p.firstFailed, p.failedFrom = c.seq, c.from
	}
}

// refused ends the republish when the server refused the connection a
// publish or a subscription (the command is stopping: see
// natsconn.WithAbort). The copies to a refused subject stored nothing:
// they fail now rather than wait for acknowledgements that never come.
func (p *Publisher) refused(perr *natsconn.PermissionError) {
	if !p.refusalSeen {
		p.refusalSeen = true
		if p.fatal == nil {
			p.fatal = perr
		}
	}
	if perr.Op != "publish" {
		return
	}
	for _, c := range p.pending {
		if c.msg == nil || c.failed || c.found || c.msg.Subject != perr.Subject {
			continue
		}
		if stored, _ := p.acks.outcome(c); !stored {
			p.giveUp(c, perr)
		}
	}
}

// retryPause grows from 250ms to 1s: long enough for a stream that is
// being restored after a restart, short enough for a missing one to fail
// fast.
func retryPause(try int) time.Duration {
	return min(time.Second, 250*time.Millisecond<<(try-1))
}

// resendDue sends again the copies whose retry pause is over and, when the
// oldest one timed out, every copy as old as the timeout: they were all
// sent before whatever lost the oldest one's acknowledgement.
func (p *Publisher) resendDue(now time.Time, timedOut bool) {
	for _, c := range p.pending {
		if c.failed || c.found {
			continue
		}
		if stored, _ := p.acks.outcome(c); stored {
			continue
		}
		switch {
		case !c.retryAt.IsZero() && p.stopping:
			p.tried(c, p.errOf(c), now)
		case !c.retryAt.IsZero():
			if !now.Before(c.retryAt) {
				p.send(c)
			}
		case timedOut && now.Sub(c.sentAt) >= p.ackTimeout:
			p.tried(c, fmt.Errorf("no acknowledgement within %s", p.ackTimeout), now)
			if !c.failed {
				p.send(c)
			}
		}
	}
}

// settle takes the oldest copies off the window while they are settled.
func (p *Publisher) settle() {
	advanced := false
	for len(p.pending) > 0 {
		c := p.pending[0]
		stored, dup := p.acks.outcome(c)
		if !stored && !c.failed {
			break
		}
		p.pending[0] = nil
		p.pending = p.pending[1:]
		p.acks.forget(c)
		advanced = true
		if c.failed {
			p.consecutive++
			if p.consecutive >= MaxConsecutiveFailures && p.fatal == nil {
				p.fatal = fmt.Errorf("%w: %d publishes in a row failed (last: %v)", ErrTargetFailing, p.consecutive, p.lastErr)
			}
			continue
		}
		p.consecutive = 0
		p.count(c, dup)
	}
	if advanced && p.onFloor != nil {
		if floor := p.Floor(p.lastWritten); floor >= p.floorSeen+p.floorLag {
			p.floorSeen = floor
			p.onFloor(floor)
		}
	}
}

// count adds a stored copy to the counts. A duplicate acknowledgement of a
// copy whose other sends were all refused (or that was sent once) means
// the target had it before this run; otherwise, that an earlier send of
// this run may have stored it.
func (p *Publisher) count(c *copyState, dup bool) {
	if c.found || (dup && c.sends-c.refused == 1) {
		p.counts.Duplicates++
		return
	}
	p.counts.Stored++
	p.counts.Bytes += uint64(c.bytes)
}

// wait blocks until an acknowledgement, a connection change or the
// server's refusal arrives, a timeout or retry is due, or ctx ends.
func (p *Publisher) wait(ctx context.Context) error {
	var due <-chan time.Time
	if !p.down && len(p.pending) > 0 {
		next := p.pending[0].sentAt.Add(p.ackTimeout)
		if p.retrying > 0 {
			for _, c := range p.pending {
				if !c.retryAt.IsZero() && c.retryAt.Before(next) {
					next = c.retryAt
				}
			}
		}
		t := time.NewTimer(max(time.Until(next), time.Millisecond))
		defer t.Stop()
		due = t.C
	}
	var refused <-chan struct{}
	if !p.refusalSeen {
		refused = p.refusal.Done()
	}
	select {
	case <-p.acks.notify:
	case <-refused:
	case s := <-p.status:
		p.onStatus(s)
	case <-due:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (p *Publisher) pollStatus() {
	for {
		select {
		case s := <-p.status:
			p.onStatus(s)
		default:
			return
		}
	}
}

func (p *Publisher) onStatus(s nats.Status) {
	switch s {
	case nats.DISCONNECTED, nats.RECONNECTING:
		if !p.down {
			p.down, p.downAt = true, time.Now()
			if p.cfg.OnConnection != nil {
				p.cfg.OnConnection(false, p.server, 0)
			}
		}
	case nats.CONNECTED:
		if p.down {
			p.down, p.reconnected = false, true
			p.server = p.nc.ConnectedUrlRedacted()
			if p.cfg.OnConnection != nil {
				p.cfg.OnConnection(true, p.server, time.Since(p.downAt))
			}
		}
	case nats.CLOSED:
		p.closedErr = fmt.Errorf("connection to the target closed: %w", nats.ErrConnectionClosed)
	}
}

// recover runs after a reconnect: acknowledgements of copies in flight may
// be lost, so the copies the target stored are looked up (cheap: from the
// positions recorded before the oldest was sent) and the rest sent again
// at once, without waiting for their timeouts. Without a lookup (it
// failed), the Nats-Msg-Id keeps a copy sent twice within the duplicate
// window from being stored twice.
func (p *Publisher) recover(ctx context.Context) {
	var open []*copyState
	for _, c := range p.pending {
		if !c.settled(p.acks) && !c.found {
			open = append(open, c)
		}
	}
	if len(open) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 2*p.ackTimeout)
	found, err := p.findStored(lctx, open[0].from, func(copyKey) bool { return true })
	cancel()
	if err != nil {
		found = nil
	}
	for _, c := range open {
		if found[copyKey{c.stream, c.seq}] {
			p.acks.markStored(c)
			continue
		}
		p.send(c)
	}
}

// positionsNow is a snapshot of where the target streams stand as far as
// the publisher knows: a lower bound, refreshed every 64 copies (or now,
// if fresh).
func (p *Publisher) positionsNow(fresh bool) map[string]uint64 {
	p.posAge++
	if p.pos != nil && !fresh && p.posAge < 64 {
		return p.pos
	}
	p.posAge = 0
	acked, gen, changed := p.acks.positions(p.posGen)
	if !changed && p.pos != nil {
		return p.pos
	}
	p.posGen = gen
	pos := make(map[string]uint64, len(p.base)+len(acked))
	for k, v := range p.base {
		pos[k] = v
	}
	for k, v := range acked {
		pos[k] = max(pos[k], v)
	}
	p.pos = pos
	return pos
}

// interrupted tells Close not to wait for acknowledgements while the
// connection is down: the run was interrupted, and they may never come.
func (p *Publisher) interrupted() { p.abandon = true }

// watchFloor calls fn whenever the floor moved by lag (0: MaxInFlight)
// since fn was last called.
func (p *Publisher) watchFloor(lag uint64, fn func(floor uint64)) {
	if lag == 0 {
		lag = uint64(p.cfg.MaxInFlight)
	}
	p.floorLag, p.onFloor = lag, fn
}

// Floor is the last sequence before the oldest unsettled or failed copy:
// everything up to it is stored in the target.
func (p *Publisher) Floor(lastRead uint64) uint64 {
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

// Close waits for every copy in flight until ctx ends; what is still
// unacknowledged then is counted as unconfirmed. After a fatal error it
// only collects the outcomes of what was sent, without retries.
func (p *Publisher) Close(ctx context.Context) error {
	if p.acks == nil {
		return nil
	}
	defer p.acks.close()
	p.stopping = p.fatal != nil || p.closedErr != nil || ctx.Err() != nil
	var err error
	for len(p.pending) > 0 {
		if serr := p.step(ctx); serr != nil && serr == p.fatal {
			// The target keeps failing, or refused a copy: collect the
			// outcomes of what is in flight, without retries.
			err, p.stopping = serr, true
			continue
		} else if serr != nil {
			err = serr
			break
		}
		if len(p.pending) == 0 || (p.abandon && p.down) || p.wait(ctx) != nil {
			break
		}
	}
	for _, c := range p.pending {
		if c.failed {
			continue
		}
		if stored, dup := p.acks.outcome(c); stored {
			p.count(c, dup)
		} else {
			p.counts.Unconfirmed++
		}
	}
	slices.Sort(p.failed)
	return err
}

// Counts is what the target confirmed so far.
func (p *Publisher) Counts() Counts { return p.counts }

// Failed lists the sequences whose copies could not be stored.
func (p *Publisher) Failed() []uint64 { return p.failed }

// LastError is the last publish error, for reporting failures.
func (p *Publisher) LastError() error { return p.lastErr }

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
