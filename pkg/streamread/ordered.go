package streamread

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
)

// ReadOrdered reads with a plain ephemeral pull consumer (no acks, in
// memory) rather than nats.go's ordered consumer: the library's per-message
// bookkeeping (a heartbeat timer reset and a metadata split per message, a
// channel hand-off) costs more than the rest of a read of 500,000
// messages. Order is kept the way an ordered consumer keeps it: a gap in
// the consumer sequence, a reconnect, a consumer that goes away or a
// server that falls silent recreates the consumer after the last stream
// sequence seen.
const (
	// maxPullBatch is the size of one pull request of small messages; two
	// are outstanding. Streams of large messages pull fewer at a time (see
	// batchFor and OrderedRead.Buffer).
	maxPullBatch = 4096
	minPullBatch = 16
	// pullRestarts bounds how often a bounded read recreates its consumer
	// after a gap, a reconnect or a transient error (retry.Transient); a
	// following one keeps trying. Both pause between attempts, from
	// followRetryMin doubling up to followRetryMax.
	pullRestarts   = 5
	followRetryMin = 100 * time.Millisecond
	followRetryMax = 5 * time.Second
)

// The defaults of OrderedRead's Buffer, Heartbeat and CleanupTimeout.
const (
	defaultPullBuffer             uint64 = 8 << 20
	defaultPullHeartbeat                 = 5 * time.Second
	defaultConsumerCleanupTimeout        = 2 * time.Second
)

var (
	// ErrStop, returned by a ReadOrdered callback, ends the read without
	// an error.
	ErrStop = errors.New("stop reading")
	// errGap is a gap in a read's consumer sequence.
	errGap = errors.New("messages missed")
	// errRestart asks a read to recreate its consumer.
	errRestart = errors.New("consumer lost")
	// restartGrace is how long a lost consumer waits for the disconnect
	// that would make it a server restart.
	restartGrace = 200 * time.Millisecond
	// errReconnected is a reconnect, after which pulls may be lost.
	errReconnected = errors.New("reconnected")
)

// OrderedRead is one in-order read of a stream.
type OrderedRead struct {
	// Label names what is read in errors: `stream "ORDERS"`, `bucket "cfg"`.
	Label string
	// Consumer holds the filters and where to start; ReadOrdered sets the
	// rest (no acks, in memory, one replica, instant replay).
	Consumer jetstream.ConsumerConfig
	// EndSeq is the last stream sequence a bounded read reads.
	EndSeq uint64
	// Follow keeps reading new messages until ctx ends or the callback
	// stops it.
	Follow bool
	// Match, if set, filters subjects in the client.
	Match func(subject string) bool
	// Buffer bounds the bytes a pull request asks for (default 8 MiB).
	Buffer uint64
	// Heartbeat is the idle heartbeat asked of the server; a read that
	// hears nothing for three of them while it waits for the server starts
	// over (following) or fails (bounded). Default 5s.
	Heartbeat time.Duration
	// CleanupTimeout bounds the removal of a read's consumer (default 2s).
	CleanupTimeout time.Duration
}

func (p *OrderedRead) buffer() uint64 { return cmp.Or(p.Buffer, defaultPullBuffer) }

func (p *OrderedRead) heartbeat() time.Duration { return cmp.Or(p.Heartbeat, defaultPullHeartbeat) }

func (p *OrderedRead) cleanupTimeout() time.Duration {
	return cmp.Or(p.CleanupTimeout, defaultConsumerCleanupTimeout)
}

// StoredMsg is a message as the stream stores it. The callback must not
// keep the *StoredMsg; Header and Data are the received message's own and
// may be kept.
type StoredMsg struct {
	Subject string
	Seq     uint64
	Time    time.Time
	Header  nats.Header
	Data    []byte
}

// ReadOrdered delivers the messages of r's consumer in stream order to fn:
// up to r.EndSeq or the stream's end, or, following, until ctx ends or fn
// returns ErrStop or an error.
func ReadOrdered(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, r OrderedRead, fn func(*StoredMsg) error) error {
	p := &r
	p.Consumer.AckPolicy = jetstream.AckNonePolicy
	p.Consumer.MemoryStorage = true
	p.Consumer.Replicas = 1
	p.Consumer.InactiveThreshold = time.Minute
	p.Consumer.ReplayPolicy = jetstream.ReplayInstantPolicy
	// A bounded read of each subject's last message cannot resume: the
	// subjects written since would show their new last messages, not the
	// ones of the state it started to read. A following one resumes with
	// the last messages it has not handed over yet (see cursor), then, once
	// it has them all, from the sequence after the last one.
	lastPerSubject := p.Consumer.DeliverPolicy == jetstream.DeliverLastPerSubjectPolicy
	restarts := pullRestarts
	if lastPerSubject && !p.Follow {
		restarts = 0
	}
	var cur cursor
	backoff := retry.Policy{Pause: followRetryMin, MaxPause: followRetryMax}.Backoff()
	for i := 0; ; i++ {
		switch {
		case lastPerSubject && !cur.caughtUp:
			cur.skipThrough = cur.last
		case cur.last > 0:
			p.Consumer.DeliverPolicy, p.Consumer.OptStartSeq, p.Consumer.OptStartTime = jetstream.DeliverByStartSequencePolicy, cur.last+1, nil
		}
		before := cur.last
		err := pullOnce(ctx, js, stream, p, fn, &cur)
		last := cur.last
		again := errors.Is(err, errGap) || errors.Is(err, errRestart) || errors.Is(err, errReconnected) || retry.Transient(err)
		switch {
		case errors.Is(err, ErrStop):
			return nil
		case again && ctx.Err() == nil && (p.Follow || i < restarts):
			if last != before {
				backoff.Reset()
			}
			logctx.From(ctx).Debug("reading: starting a new consumer", "of", p.Label, "after_seq", last, "in", backoff.Next(), "because", err)
			if err := backoff.Wait(ctx); err != nil {
				return err
			}
			continue
		case errors.Is(err, errGap):
			return fmt.Errorf("%s: reading: the server skipped messages; try again", p.Label)
		case errors.Is(err, errRestart), errors.Is(err, errReconnected):
			return fmt.Errorf("%s: reading: the consumer went away; try again", p.Label)
		}
		return err
	}
}

// batchFor sizes pull requests by the stream's average message size, so
// that what is pulled but not yet handled stays near 2 × buffer bytes
// rather than 8,192 large messages.
func batchFor(info *jetstream.StreamInfo, buffer uint64) int {
	if info == nil || info.State.Msgs == 0 {
		return maxPullBatch
	}
	avg := max(info.State.Bytes/info.State.Msgs, 1)
	return int(min(max(buffer/avg, minPullBatch), maxPullBatch))
}

// cursor is where a read is, across the consumers it creates.
type cursor struct {
	// last is the last stream sequence handed over (or filtered out).
	last uint64
	// caughtUp is set once a read of each subject's last message has had
	// them all; until then a new consumer starts over with the last
	// messages and skips those up to skipThrough, handed over before.
	caughtUp    bool
	skipThrough uint64
}

// pullOnce is one consumer's part of a read: it creates the consumer,
// pulls from it until the read ends or has to start over, and removes it.
func pullOnce(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, p *OrderedRead, fn func(*StoredMsg) error, cur *cursor) error {
	nc := js.Conn()
	api := jsapi.New(js)
	// Listen for reconnects before creating the consumer, so that none is
	// missed: after one, pull requests may be lost and the consumer gone.
	reconnected := nc.StatusChanged(nats.CONNECTED)
	defer nc.RemoveStatusListener(reconnected)
	disconnected := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING)
	defer nc.RemoveStatusListener(disconnected)
	reconnects := nc.Stats().Reconnects
	cons, err := stream.CreateConsumer(ctx, p.Consumer)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Label, err)
	}
	info := cons.CachedInfo()
	defer removeConsumer(ctx, js, api, info, p.cleanupTimeout())
	if cur.last == 0 && p.Consumer.DeliverPolicy != jetstream.DeliverLastPerSubjectPolicy {
		// What the consumer starts after counts as seen: a following read
		// from now (or from a time) that loses its consumer before its
		// first message resumes from here, not from a later "now".
		cur.last = info.Delivered.Stream
	}
	if info.NumPending == 0 {
		cur.caughtUp = true
	}
	if info.NumPending == 0 && !p.Follow {
		return nil
	}

	pl := &puller{p: p, fn: fn, cur: cur, nc: nc, api: api, batch: batchFor(stream.CachedInfo(), p.buffer()),
		result: make(chan error, 1), idle: make(chan struct{}, 1)}
	logctx.From(ctx).Debug("reading with a pull consumer", "of", p.Label, "consumer", info.Name,
		"after_seq", cur.last, "pending", info.NumPending, "batch", pl.batch, "follow", p.Follow)
	pl.next = api.Prefix + "CONSUMER.MSG.NEXT." + info.Stream + "." + info.Name
	pl.request = fmt.Appendf(nil, `{"batch":%d,"expires":%d,"idle_heartbeat":%d}`,
		pl.batch, int64(time.Hour), int64(p.heartbeat()))
	// A plain inbox: one under the connection's response prefix would also
	// reach the request multiplexer with every message.
	pl.inbox = nc.NewInbox()
	sub, err := nc.Subscribe(pl.inbox, pl.receive)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Label, err)
	}
	defer func() {
		_ = sub.Unsubscribe()
	}()
	pl.mu.Lock()
	for range 2 {
		if !pl.stopped {
			pl.pull()
		}
	}
	pl.mu.Unlock()
	return pl.wait(ctx, cons, sub, reconnected, disconnected, reconnects)
}

// removeConsumer removes a read's consumer now rather than at its inactive
// threshold, so that it does not linger in listings; not while
// disconnected, where the request would only hold up an interrupted read.
func removeConsumer(ctx context.Context, js jetstream.JetStream, api *jsapi.Client, info *jetstream.ConsumerInfo, timeout time.Duration) {
	nc := js.Conn()
	if !nc.IsConnected() {
		return
	}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		// The caller's time is up (a --wait that expired): ask for the
		// removal without waiting for an answer that a hung server may
		// never send. Closing the connection flushes the request; the
		// inactive threshold removes the consumer if it is lost.
		subject := api.Prefix + "CONSUMER.DELETE." + info.Stream + "." + info.Name
		api.TraceRequest(subject, nil)
		_ = nc.PublishRequest(subject, nc.NewInbox(), nil)
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	_ = js.DeleteConsumer(dctx, info.Stream, info.Name)
	cancel()
}

// idleCheckTimeout bounds the consumer info request of an idle check.
const idleCheckTimeout = 5 * time.Second

// puller is one consumer's pulls: receive handles what the server sends
// to the inbox, in the subscription's callback; wait, on the reading
// goroutine, watches over the read and has the requests made that would
// hold up the callback.
type puller struct {
	p     *OrderedRead
	fn    func(*StoredMsg) error
	cur   *cursor
	nc    *nats.Conn
	api   *jsapi.Client
	batch int
	// next, request and inbox make a pull request.
	next    string
	request []byte
	inbox   string

	// mu is held while a message is handled, never while waiting for the
	// server; stopped, once set under it, means fn is never called again.
	mu      sync.Mutex
	stopped bool
	// cseq is the consumer sequence of the last message handled.
	cseq     uint64
	received int
	// result takes the read's outcome, sent once by finish.
	result chan error
	// heard counts what the server sent; busy is set while a message is
	// handled: a callback that takes long (a stalled pipe downstream) is
	// not a silent server.
	heard atomic.Uint64
	busy  atomic.Bool
	// idle is signalled by an idle heartbeat of a bounded read: wait asks
	// the server whether anything is left (see endIfDrained).
	idle chan struct{}
}

// finish ends the read with err; mu is held.
func (pl *puller) finish(err error) {
	pl.stopped = true
	pl.result <- err
}

// pull asks for the next batch; mu is held.
func (pl *puller) pull() {
	pl.api.TraceRequest(pl.next, pl.request)
	if err := pl.nc.PublishRequest(pl.next, pl.inbox, pl.request); err != nil {
		pl.finish(fmt.Errorf("%s: %w", pl.p.Label, err))
	}
}

// receive is the subscription's callback: a message or a status.
func (pl *puller) receive(m *nats.Msg) {
	pl.heard.Add(1)
	pl.busy.Store(true)
	defer pl.busy.Store(false)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.stopped {
		return
	}
	if m.Reply == "" {
		pl.status(m)
		return
	}
	pl.message(m)
}

// status handles a status; mu is held. 100 is an idle heartbeat; 404 and
// 408 end a pull with nothing more to give, which a bounded read reaches
// only when messages were removed under it, and a following one when its
// hour-long pull expires.
func (pl *puller) status(m *nats.Msg) {
	p := pl.p
	switch code := statusCode(m); {
	case code == "100" && !p.Follow:
		// The server had nothing to send for a heartbeat: a bounded read
		// whose last messages were removed (expired, purged) under it is
		// done, rather than waiting an hour for its pull to expire.
		// Asking the server is for wait to arrange: a request here would
		// hold up every message behind it.
		select {
		case pl.idle <- struct{}{}:
		default:
		}
	case code == "100":
	case (code == "404" || code == "408") && p.Follow:
		pl.pull()
	case code == "404" || code == "408":
		pl.finish(nil)
	case code == "409" || code == "503" || p.Follow:
		// 409 Consumer Deleted or Leadership Change, 503 no responders
		// after a restart: start over.
		pl.finish(errRestart)
	default:
		pl.finish(fmt.Errorf("%s: reading: %s %s", p.Label, code, m.Header.Get("Description")))
	}
}

// message hands a message over to fn, in order; mu is held.
func (pl *puller) message(m *nats.Msg) {
	p, cur := pl.p, pl.cur
	md, ok := parseAckReply(m.Reply)
	if !ok {
		pl.finish(fmt.Errorf("%s: reading: unexpected reply subject %q", p.Label, m.Reply))
		return
	}
	if md.cseq != pl.cseq+1 {
		pl.finish(errGap)
		return
	}
	pl.cseq = md.cseq
	if !p.Follow && md.sseq > p.EndSeq {
		pl.finish(nil)
		return
	}
	if md.pending == 0 {
		cur.caughtUp = true
	}
	// A message up to skipThrough was handed over by an earlier consumer
	// of this read.
	skip := md.sseq <= cur.skipThrough
	if !skip {
		cur.last = md.sseq
	}
	if !skip && (p.Match == nil || p.Match(m.Subject)) {
		sm := StoredMsg{Subject: m.Subject, Seq: md.sseq, Time: time.Unix(0, md.ts), Header: m.Header, Data: m.Data}
		if err := pl.fn(&sm); err != nil {
			pl.finish(err)
			return
		}
	}
	if !p.Follow && (md.sseq >= p.EndSeq || md.pending == 0) {
		pl.finish(nil)
		return
	}
	if pl.received++; pl.received%pl.batch == 0 {
		pl.pull()
	}
}

// abort ends the read with err, unless it ended in the meantime: then its
// result wins.
func (pl *puller) abort(err error) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.stopped {
		return <-pl.result
	}
	pl.stopped = true
	return err
}

// endIfDrained ends the read if the consumer has nothing pending and every
// message it delivered (up to its delivered consumer sequence) has been
// handled; a message still on its way to the callback ends the read there
// instead. It reports whether it ended the read.
func (pl *puller) endIfDrained(ci *jetstream.ConsumerInfo) bool {
	if ci == nil || ci.NumPending > 0 {
		return false
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.stopped || ci.Delivered.Consumer > pl.cseq {
		return false
	}
	pl.stopped = true
	return true
}

// wait watches over the read until it ends: its result, ctx, a reconnect,
// a server silent for three heartbeats, or, for a bounded read that heard
// an idle heartbeat, a consumer with nothing left (asked on a goroutine of
// its own, so that neither the callback nor this loop waits for it).
func (pl *puller) wait(ctx context.Context, cons jetstream.Consumer, sub *nats.Subscription, reconnected, disconnected <-chan nats.Status, reconnects uint64) error {
	p := pl.p
	checkCtx, cancelCheck := context.WithCancel(ctx)
	defer cancelCheck()
	checked := make(chan *jetstream.ConsumerInfo, 1)
	checking := false
	tick := time.NewTicker(p.heartbeat())
	defer tick.Stop()
	seen, quiet := pl.heard.Load(), 0
	for {
		select {
		case err := <-pl.result:
			// A consumer lost across a reconnect (a 503 after a server
			// restart) is the reconnect: the status listener may not
			// have been told yet, but the counter already moved.
			if errors.Is(err, errRestart) {
				if pl.nc.Stats().Reconnects > reconnects || !pl.nc.IsConnected() {
					return errReconnected
				}
				// A server shutting down says so (409) before it closes
				// the connection: a disconnect within a moment makes
				// this the restart it is.
				select {
				case <-disconnected:
					return errReconnected
				case <-time.After(restartGrace):
				}
			}
			return err
		case <-ctx.Done():
			return pl.abort(ctx.Err())
		case <-reconnected:
			return pl.abort(errReconnected)
		case <-pl.idle:
			if !checking {
				checking = true
				go func() {
					ictx, cancel := context.WithTimeout(checkCtx, idleCheckTimeout)
					defer cancel()
					ci, err := cons.Info(ictx)
					if err != nil {
						// No answer counts as "something pending".
						ci = nil
					}
					checked <- ci
				}()
			}
		case ci := <-checked:
			checking = false
			if pl.endIfDrained(ci) {
				return nil
			}
		case <-tick.C:
			// Silence counts only while nothing waits to be handled.
			pending, _, _ := sub.Pending()
			if n := pl.heard.Load(); n != seen || pl.busy.Load() || pending > 0 {
				seen, quiet = n, 0
				continue
			}
			if quiet++; quiet >= 3 {
				if p.Follow {
					return pl.abort(errRestart)
				}
				return pl.abort(fmt.Errorf("%s: reading: no message from the server in %s", p.Label, 3*p.heartbeat()))
			}
		}
	}
}

// statusCode is the status of a message without a reply, such as an idle
// heartbeat.
func statusCode(m *nats.Msg) string {
	if m.Header == nil {
		return ""
	}
	return m.Header.Get("Status")
}

// ackMeta is what a JetStream message's reply subject says of it.
type ackMeta struct {
	sseq, cseq, pending uint64
	ts                  int64
}

// parseAckReply reads a reply subject $JS.ACK.<stream>.<consumer>.<delivered>
// .<sseq>.<cseq>.<time>.<pending>, or the newer form with a domain and an
// account hash after $JS.ACK and a random token at the end, without
// allocating.
func parseAckReply(reply string) (ackMeta, bool) {
	var tok [12]string
	n := 0
	for s := reply; n < len(tok); {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			tok[n] = s
			n++
			break
		}
		tok[n], s = s[:i], s[i+1:]
		n++
	}
	if tok[0] != "$JS" || tok[1] != "ACK" {
		return ackMeta{}, false
	}
	var base int
	switch {
	case n == 9:
		base = 4
	case n >= 11:
		base = 6
	default:
		return ackMeta{}, false
	}
	var md ackMeta
	var ok1, ok2, ok3, ok4 bool
	md.sseq, ok1 = parseUint(tok[base+1])
	md.cseq, ok2 = parseUint(tok[base+2])
	ts, ok3 := parseUint(tok[base+3])
	md.pending, ok4 = parseUint(tok[base+4])
	md.ts = int64(ts)
	return md, ok1 && ok2 && ok3 && ok4
}

func parseUint(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
