package mover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/retry"
)

// ErrUnconfirmed is the outcome of a publish whose acknowledgement did not
// come before the settle stopped waiting (its context ended): the copy may
// or may not be stored.
var ErrUnconfirmed = errors.New("not acknowledged")

// errNotSent is the outcome of a Pub that Publish did not send.
var errNotSent = errors.New("not sent")

// Config says how a Window publishes.
type Config struct {
	// MaxPending bounds the publishes sent and not yet settled (default
	// 256); Publish waits while that many are.
	MaxPending int
	// AckWait is how long an acknowledgement is waited for, while the
	// connection is up, before the publish is tried once more,
	// synchronously (default twice the JetStream context's timeout).
	AckWait time.Duration
	// Rate bounds the publishes per second (0: as fast as the server
	// acknowledges). The bucket holds a quarter second's worth and starts
	// empty: N publishes take N/Rate seconds, and a stall of up to a
	// quarter second is made up for.
	Rate float64
	// Shrink, when set, is asked what to publish instead of a message the
	// server refused for its size (its max_payload, or the stream's
	// max_msg_size); the Pub's Refused says why. Without it, the refusal
	// is the outcome.
	Shrink func(m *nats.Msg, refused error) *nats.Msg
	// Recover, when set, is called after the connection came back, with
	// the publishes whose outcome is not known (their acknowledgements
	// may be lost), oldest first. It may settle some of them with Found
	// (looked up in the target); the others are sent again at once.
	Recover func(ctx context.Context, open []*Pub)
	// OnConnection, when set, hears that the connection went away (up
	// false) and that it is back (up true, after down).
	OnConnection func(up bool, server string, down time.Duration)
	// OwnRetries: the caller tries refused publishes again itself, in its
	// own time, so Settle settles a transient refusal as the outcome
	// instead of publishing once more, synchronously (which holds up the
	// settles after it: half a second for each copy no stream captures,
	// with the client's own retries). A publish not acknowledged within
	// AckWait is still tried once more.
	OwnRetries bool
}

// Pub is one message on its way: the caller sets Msg, Publish sends it,
// Settle fills in the outcome.
type Pub struct {
	Msg *nats.Msg

	// The outcome, once Settle returned. Stored: Err is nil, and Stream
	// and Seq say where (Duplicate: the target had it already, within its
	// duplicate window, or refused it as a repeat of a stored message).
	Stream    string
	Seq       uint64
	Duplicate bool
	Err       error
	// Resent: the outcome is that of a later send, and an earlier one may
	// have been stored (its acknowledgement was lost), so a Duplicate may
	// be this run's own copy.
	Resent bool
	// Refused is the size refusal that made Shrink replace Msg; nil when
	// Msg went as it was.
	Refused error
	// Found: Recover found the copy in the target (Stream and Seq unset).
	Found bool

	w      *Window
	token  uint64
	older  []uint64
	acked  bool
	maybe  bool
	sendEr error
	sentAt time.Time
}

// Stored says whether the target holds the copy: acknowledged (a
// duplicate included) or found.
func (p *Pub) Stored() bool { return p.w != nil && p.Err == nil }

// Window publishes copies asynchronously, with at most MaxPending of them
// waiting for their acknowledgement, and settles them. Acknowledgements
// come to a reply subject of the window's own: no future and no full JSON
// decode per message.
//
// Publish is called from one goroutine (a publish stage) and Settle from
// one other (a settle stage after it), each in the same order.
type Window struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	cfg     Config
	prefix  string
	sub     *nats.Subscription
	status  chan nats.Status
	limiter *rate.Limiter
	slots   chan struct{}
	wake    chan struct{}

	mu      sync.Mutex
	next    uint64
	tokens  map[uint64]*Pub
	waiting *Pub
	// open holds the publishes not settled, oldest first, from openHead
	// on: settled from the front, they leave without moving the rest.
	open     []*Pub
	openHead int
	// wakeDue: the publish Settle waits for is settled, and Settle is
	// woken once the acknowledgements queued behind it are in too (or 64
	// of them), so that it settles a run of them in one go instead of
	// sleeping and waking for each.
	wakeDue   bool
	sinceWake int

	// Settle's own. refusal: the connection's permission refusal
	// (natsconn), which fails the publishes to the refused subject at
	// once; refusalSeen: Settle has woken for it.
	refusal     *natsconn.Refusal
	refusalSeen bool
	timer       *time.Timer
	down        bool
	downAt      time.Time
	server      string
	closed      error
}

// New opens a window to js.
func New(js jetstream.JetStream, cfg Config) (*Window, error) {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 256
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 2 * js.Options().DefaultTimeout
		if cfg.AckWait <= 0 {
			cfg.AckWait = 10 * time.Second
		}
	}
	nc := js.Conn()
	w := &Window{
		js: js, nc: nc, cfg: cfg, prefix: nats.NewInbox() + ".",
		slots: make(chan struct{}, cfg.MaxPending), wake: make(chan struct{}, 1),
		tokens: make(map[uint64]*Pub), server: nc.ConnectedUrlRedacted(), refusal: natsconn.RefusalOf(nc),
		timer: time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	if cfg.Rate > 0 {
		burst := max(1, int(cfg.Rate/4))
		w.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), burst)
		w.limiter.AllowN(time.Now(), burst)
	}
	sub, err := nc.Subscribe(w.prefix+"*", w.handle)
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	w.sub = sub
	w.status = nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	w.down = !nc.IsConnected()
	return w, nil
}

// Close stops listening for acknowledgements; what is not settled stays
// so.
func (w *Window) Close() {
	_ = w.sub.Unsubscribe()
	w.nc.RemoveStatusListener(w.status)
}

// Publish sends p.Msg without waiting for its acknowledgement, once fewer
// than MaxPending publishes are unsettled and the rate allows. It sets
// p.Msg.Reply. Unless it returns an error (ctx ended first, and nothing
// was sent), p is to be settled.
func (w *Window) Publish(ctx context.Context, p *Pub) error {
	if w.limiter != nil {
		if err := w.limiter.Wait(ctx); err != nil {
			p.Err = errNotSent
			return err
		}
	}
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		p.Err = errNotSent
		return ctx.Err()
	}
	p.w = w
	if err := w.send(p); err != nil && tooLarge(err) && w.cfg.Shrink != nil {
		w.shrink(p, err)
		_ = w.send(p)
	}
	w.mu.Lock()
	w.open = append(w.open, p)
	w.mu.Unlock()
	return nil
}

// send publishes p.Msg with a reply token of its own; a send that fails
// is p's outcome so far.
func (w *Window) send(p *Pub) error {
	w.mu.Lock()
	if p.token != 0 {
		p.older = append(p.older, p.token)
	}
	w.next++
	p.token = w.next
	w.tokens[p.token] = p
	p.sentAt, p.sendEr = time.Now(), nil
	w.mu.Unlock()
	// One allocation for the reply subject, not two.
	var buf [64]byte
	p.Msg.Reply = string(strconv.AppendUint(append(buf[:0], w.prefix...), p.token, 10))
	err := w.nc.PublishMsg(p.Msg)
	if err != nil {
		w.mu.Lock()
		p.sendEr = err
		w.mu.Unlock()
	}
	return err
}

func (w *Window) shrink(p *Pub, refused error) {
	w.mu.Lock()
	p.Refused = refused
	w.mu.Unlock()
	p.Msg = w.cfg.Shrink(p.Msg, refused)
}

// handle records an acknowledgement. The first that says "stored"
// settles a publish, whichever of its sends it answers; an error counts
// only for its latest send.
func (w *Window) handle(m *nats.Msg) {
	token, err := strconv.ParseUint(m.Subject[len(w.prefix):], 10, 64)
	var ack pubAck
	if err == nil {
		ack = parseAck(m)
	}
	w.mu.Lock()
	p := w.tokens[token]
	if err == nil && p != nil && !p.acked {
		switch {
		case ack.err == nil:
			p.acked, p.Stream, p.Seq, p.Duplicate, p.Err = true, ack.stream, ack.seq, ack.duplicate, nil
			// A send made again after a reconnect answered: the first
			// may have been stored before the connection went.
			p.Resent = p.maybe && token != p.first()
		case token == p.token:
			p.acked, p.Err = true, ack.err
		}
	}
	if p != nil && p == w.waiting {
		w.wakeDue = true
	}
	wake := false
	if w.wakeDue {
		w.sinceWake++
		// Pending counts m itself until handle returns (nats.go settles
		// its accounting at the next message): at most 1 is none behind.
		if queued, _, _ := m.Sub.Pending(); queued <= 1 || w.sinceWake >= 64 {
			wake, w.wakeDue, w.sinceWake = true, false, 0
		}
	}
	w.mu.Unlock()
	if wake {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// first is the token of p's first send.
func (p *Pub) first() uint64 {
	if len(p.older) > 0 {
		return p.older[0]
	}
	return p.token
}

// Settle waits for p's outcome and sets it:
//   - acknowledged: stored (or a duplicate);
//   - refused for its size: with Shrink, what Shrink returns is published
//     synchronously; else the refusal;
//   - refused for a reason that may pass (transient: an election,
//     no responders, a timeout), or not acknowledged within AckWait while
//     the connection is up: published once more, synchronously, and that
//     answer is the outcome (with OwnRetries, a refusal is the outcome);
//     if the connection goes away before that answer comes (a server
//     restarting), it is published again once the connection is back;
//   - any other refusal: that error.
//
// While the connection is down it waits; when it is back, Recover is
// asked about the open publishes and the others are sent again at once.
// If ctx ends first, nothing is sent again: the outcome is the refusal,
// or ErrUnconfirmed. Settle frees p's place in the window.
func (w *Window) Settle(ctx context.Context, p *Pub) {
	if p.w != w {
		if p.Err == nil {
			p.Err = errNotSent
		}
		return
	}
	defer w.release(p)
	for {
		w.pollStatus(ctx)
		w.mu.Lock()
		acked, err, sentAt := p.acked, p.Err, p.sentAt
		if !acked && p.sendEr != nil && !w.down {
			acked, err = true, p.sendEr
		}
		if !acked {
			w.waiting = p
		}
		w.mu.Unlock()
		switch {
		case acked && err == nil:
			return
		case acked:
			w.refused(ctx, p, err)
			return
		case w.closed != nil:
			w.setErr(p, w.closed)
			return
		}
		if perr := w.refusal.Err(); perr != nil && perr.Op == "publish" && p.Msg.Subject == perr.Subject {
			// The server refused this subject: no acknowledgement comes.
			w.setErr(p, perr)
			return
		}
		var refused <-chan struct{}
		if !w.refusalSeen {
			refused = w.refusal.Done()
		}
		var due <-chan time.Time
		if !w.down {
			w.timer.Reset(max(time.Until(sentAt.Add(w.cfg.AckWait)), 0))
			due = w.timer.C
		}
		select {
		case <-w.wake:
		case <-refused:
			w.refusalSeen = true
		case s, ok := <-w.status:
			if ok {
				w.onStatus(ctx, s)
			}
		case <-due:
			if ctx.Err() != nil {
				w.unconfirmed(ctx, p)
				return
			}
			w.mu.Lock()
			if !p.acked {
				p.maybe = true
			}
			w.mu.Unlock()
			w.syncPublish(ctx, p)
			return
		case <-ctx.Done():
			w.unconfirmed(ctx, p)
			return
		}
		// Stopped, the timer sends nothing stale (Go 1.23 timers).
		w.timer.Stop()
	}
}

// unconfirmed settles p, unless acknowledged meanwhile, as not known to
// be stored: ctx ended first.
func (w *Window) unconfirmed(ctx context.Context, p *Pub) {
	w.mu.Lock()
	if !p.acked {
		p.Err = fmt.Errorf("%w: %w", ErrUnconfirmed, ctx.Err())
	}
	w.mu.Unlock()
}

// refused settles p, refused with err by the server (or the client).
func (w *Window) refused(ctx context.Context, p *Pub, err error) {
	switch {
	case tooLarge(err) && w.cfg.Shrink != nil && p.Refused == nil && ctx.Err() == nil:
		w.shrink(p, err)
		w.syncPublish(ctx, p)
	case transient(err) && !w.cfg.OwnRetries && ctx.Err() == nil:
		w.syncPublish(ctx, p)
	default:
		w.setErr(p, err)
	}
}

// syncPublish publishes p.Msg once more and waits for the answer: p's
// outcome, unless an acknowledgement of an earlier send said "stored"
// meanwhile. A try whose answer cannot come, because the connection went
// away while it waited (a server restarting: the request went to the
// server that left), does not count: once the connection is back (within
// AckWait), p.Msg is sent again, up to lostTries times.
func (w *Window) syncPublish(ctx context.Context, p *Pub) {
	var ack *jetstream.PubAck
	var err error
	for lost := 0; ; lost++ {
		ack, err = w.publishOnce(ctx, p)
		if !errors.Is(err, errAnswerLost) || lost == lostTries || ctx.Err() != nil || w.storedMeanwhile(p) {
			break
		}
		// That try may have been stored: a duplicate now is its own.
		w.mu.Lock()
		p.maybe = true
		w.mu.Unlock()
		natsconn.WaitConnected(ctx, w.nc, w.cfg.AckWait)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.acked && p.Err == nil {
		return
	}
	p.acked, p.Resent = true, p.maybe
	if err != nil {
		p.Err = err
		return
	}
	p.Stream, p.Seq, p.Duplicate, p.Err = ack.Stream, ack.Sequence, ack.Duplicate, nil
}

// lostTries bounds the sends again of a synchronous publish whose answer
// was lost with the connection: enough for a server restart or two, not a
// loop on a connection that keeps failing.
const lostTries = 4

// errAnswerLost: the connection went away while a publish waited for its
// answer, so none will come.
var errAnswerLost = fmt.Errorf("%w: the connection went away before the acknowledgement came", nats.ErrDisconnected)

// publishOnce is one try of syncPublish: it publishes p.Msg (what Shrink
// returns, if the server refuses it for its size) and waits for the
// answer, at most AckWait; errAnswerLost if the connection goes away or
// comes back meanwhile.
func (w *Window) publishOnce(ctx context.Context, p *Pub) (*jetstream.PubAck, error) {
	actx, cancel := context.WithTimeout(ctx, max(w.cfg.AckWait, w.js.Options().DefaultTimeout))
	defer cancel()
	// A listener of this try's own: Settle, which reads w.status, is
	// waiting here.
	lost := w.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	var gone atomic.Bool
	go func() {
		if _, ok := <-lost; ok {
			gone.Store(true)
			cancel()
		}
	}()
	defer w.nc.RemoveStatusListener(lost) // ends the goroutine
	reconnects := w.nc.Stats().Reconnects
	publish := func() (*jetstream.PubAck, error) {
		return w.js.PublishMsg(actx, &nats.Msg{Subject: p.Msg.Subject, Header: p.Msg.Header, Data: p.Msg.Data})
	}
	ack, err := publish()
	if err != nil && tooLarge(err) && w.cfg.Shrink != nil && p.Refused == nil {
		w.shrink(p, err)
		ack, err = publish()
	}
	switch {
	case err == nil || ctx.Err() != nil:
	case w.nc.IsClosed():
		// A closed connection does not come back.
		return nil, fmt.Errorf("%w: %w", nats.ErrConnectionClosed, err)
	case gone.Load() || (transient(err) && (!w.nc.IsConnected() || w.nc.Stats().Reconnects != reconnects)):
		return nil, errAnswerLost
	}
	return ack, err
}

// storedMeanwhile says whether an acknowledgement of an earlier send of
// p said "stored".
func (w *Window) storedMeanwhile(p *Pub) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.acked && p.Err == nil
}

func (w *Window) setErr(p *Pub, err error) {
	w.mu.Lock()
	if !p.acked || p.Err != nil {
		p.acked, p.Err = true, err
	}
	w.mu.Unlock()
}

// Found settles p as stored in the target without an acknowledgement:
// for Recover, which looked it up.
func (w *Window) Found(p *Pub) {
	w.mu.Lock()
	if !p.acked || p.Err != nil {
		p.acked, p.Found, p.Err = true, true, nil
	}
	w.mu.Unlock()
}

// release forgets p's sends and frees its place.
func (w *Window) release(p *Pub) {
	w.mu.Lock()
	delete(w.tokens, p.token)
	for _, t := range p.older {
		delete(w.tokens, t)
	}
	p.older = nil
	if w.waiting == p {
		w.waiting = nil
	}
	if w.openHead < len(w.open) && w.open[w.openHead] == p {
		w.open[w.openHead] = nil
		w.openHead++
	} else if i := slices.Index(w.open[w.openHead:], p); i >= 0 {
		w.open = slices.Delete(w.open, w.openHead+i, w.openHead+i+1)
	}
	switch {
	case w.openHead == len(w.open):
		w.open, w.openHead = w.open[:0], 0
	case w.openHead >= 64 && 2*w.openHead >= len(w.open):
		n := copy(w.open, w.open[w.openHead:])
		clear(w.open[n:])
		w.open, w.openHead = w.open[:n], 0
	}
	w.mu.Unlock()
	<-w.slots
}

func (w *Window) pollStatus(ctx context.Context) {
	for {
		select {
		case s, ok := <-w.status:
			if !ok {
				return
			}
			w.onStatus(ctx, s)
		default:
			return
		}
	}
}

func (w *Window) onStatus(ctx context.Context, s nats.Status) {
	switch s {
	case nats.DISCONNECTED, nats.RECONNECTING:
		if !w.down {
			w.down, w.downAt = true, time.Now()
			if w.cfg.OnConnection != nil {
				w.cfg.OnConnection(false, w.server, 0)
			}
		}
	case nats.CONNECTED:
		if w.down {
			w.down = false
			w.server = w.nc.ConnectedUrlRedacted()
			if w.cfg.OnConnection != nil {
				w.cfg.OnConnection(true, w.server, time.Since(w.downAt))
			}
			w.recover(ctx)
		}
	case nats.CLOSED:
		w.closed = fmt.Errorf("connection closed: %w", nats.ErrConnectionClosed)
	}
}

// recover runs after a reconnect: the acknowledgements of the publishes
// in flight may be lost, so Recover looks up what it can and the rest is
// sent again at once, without waiting for the timeouts.
func (w *Window) recover(ctx context.Context) {
	w.mu.Lock()
	var open []*Pub
	for _, p := range w.open[w.openHead:] {
		if !p.acked {
			open = append(open, p)
		}
	}
	w.mu.Unlock()
	if len(open) == 0 {
		return
	}
	if w.cfg.Recover != nil {
		w.cfg.Recover(ctx, open)
	}
	for _, p := range open {
		w.mu.Lock()
		again := !p.acked
		if again {
			p.maybe = true
		}
		w.mu.Unlock()
		if again {
			_ = w.send(p)
		}
	}
}

// tooLarge: the server (or the client, knowing the server's limit)
// refused the message for its size; sending it again never helps.
func tooLarge(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) ||
		(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum)
}

// TooLarge says whether err is a refusal for the message's size.
func TooLarge(err error) bool { return tooLarge(err) }

// transient: a refusal that may pass when the message is sent again:
// jetctl's one rule, retry.Transient (an election, no responders, a
// timeout, a reconnect).
func transient(err error) bool { return retry.Transient(err) }
