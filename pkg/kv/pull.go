package kv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Every pass over a bucket, bounded (history, diffs) or following (tail),
// reads with a plain ephemeral pull consumer (no acks, in memory) rather
// than nats.go's ordered consumer: the library's per-message bookkeeping (a
// heartbeat timer reset and a metadata split per message, a channel
// hand-off) costs more than the rest of a tail's reading on a
// 500,000-revision bucket. Order is kept the way an ordered consumer keeps
// it: a gap in the consumer sequence, a reconnect, a consumer that goes
// away or a server that falls silent recreates the consumer after the last
// stream sequence seen.
const (
	// pullScanBatch is the size of one pull request; two are outstanding.
	pullScanBatch = 4096
	// pullScanHeartbeat is the idle heartbeat asked of the server; a pass
	// that hears nothing for three of them starts over (following) or
	// fails (bounded).
	pullScanHeartbeat = 5 * time.Second
	// pullScanRestarts bounds how often a bounded pass recreates its
	// consumer; a following one keeps trying, pausing between attempts
	// from followRetryMin up to followRetryMax.
	pullScanRestarts = 5
	followRetryMin   = 100 * time.Millisecond
	followRetryMax   = 5 * time.Second
)

var (
	// errGap is a gap in a pass's consumer sequence.
	errGap = errors.New("messages missed")
	// errRestart asks a following pass to recreate its consumer.
	errRestart = errors.New("consumer lost")
)

// pass is one read of a bucket's stream.
type pass struct {
	cfg jetstream.ConsumerConfig
	// endSeq is the last stream sequence a bounded pass reads.
	endSeq uint64
	// follow keeps reading new revisions until ctx ends or fn stops it.
	follow bool
	// match, if set, filters subjects in the client.
	match func(string) bool
}

// pullScan delivers the revisions of p's consumer in stream order to fn: up
// to p.endSeq or the stream's end, or, following, until ctx ends or fn
// returns errStop or an error.
func (b *bucket) pullScan(ctx context.Context, js jetstream.JetStream, p pass, fn func(Entry) error) error {
	p.cfg.AckPolicy = jetstream.AckNonePolicy
	p.cfg.MemoryStorage = true
	p.cfg.Replicas = 1
	p.cfg.InactiveThreshold = time.Minute
	p.cfg.ReplayPolicy = jetstream.ReplayInstantPolicy
	// A bounded pass over each key's last revision cannot resume from a
	// sequence (it would read older revisions of keys not yet seen): a gap
	// there fails the pass. A following one resumes anyway, as nats.go's
	// ordered consumer does: it then also shows those older revisions.
	restarts := pullScanRestarts
	if p.cfg.DeliverPolicy == jetstream.DeliverLastPerSubjectPolicy && !p.follow {
		restarts = 0
	}
	var last uint64
	pause := followRetryMin
	for i := 0; ; i++ {
		if last > 0 {
			p.cfg.DeliverPolicy, p.cfg.OptStartSeq, p.cfg.OptStartTime = jetstream.DeliverByStartSequencePolicy, last+1, nil
		}
		before := last
		err := b.pullOnce(ctx, js, p, fn, &last)
		switch {
		case errors.Is(err, errStop):
			return nil
		case p.follow && ctx.Err() == nil && (errors.Is(err, errGap) || errors.Is(err, errRestart) || isTransient(err)):
			if last != before {
				pause = followRetryMin
			}
			if err := sleepCtx(ctx, pause); err != nil {
				return err
			}
			pause = min(2*pause, followRetryMax)
			continue
		case errors.Is(err, errGap) && i < restarts:
			continue
		case errors.Is(err, errGap):
			return fmt.Errorf("bucket %q: reading: the server skipped messages; try again", b.name)
		}
		return err
	}
}

// isTransient reports whether a following pass should try again after err:
// the connection is coming back, or the server or cluster is not ready yet
// (timeouts, no responders, API errors of the 5xx kind). A missing bucket
// and a closed connection are not.
func isTransient(err error) bool {
	var jsErr jetstream.JetStreamError
	if errors.As(err, &jsErr) && jsErr.APIError() != nil {
		return jsErr.APIError().Code >= 500
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pullOnce is one consumer's part of a pass. last is the last stream
// sequence handed to fn so far.
func (b *bucket) pullOnce(ctx context.Context, js jetstream.JetStream, p pass, fn func(Entry) error, last *uint64) error {
	nc := js.Conn()
	// Listen for reconnects before creating the consumer, so that none is
	// missed: after one, pull requests may be lost and the consumer gone.
	reconnected := nc.StatusChanged(nats.CONNECTED)
	defer nc.RemoveStatusListener(reconnected)
	cons, err := b.stream.CreateConsumer(ctx, p.cfg)
	if err != nil {
		return fmt.Errorf("bucket %q: %w", b.name, err)
	}
	info := cons.CachedInfo()
	defer func() {
		// Remove the consumer now rather than at its inactive threshold,
		// so that it does not linger in listings.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = js.DeleteConsumer(dctx, info.Stream, info.Name)
		cancel()
	}()
	if *last == 0 && p.cfg.DeliverPolicy != jetstream.DeliverLastPerSubjectPolicy {
		// What the consumer starts after counts as seen: a following pass
		// from now (or from a time) that loses its consumer before its
		// first revision resumes from here, not from a later "now".
		*last = info.Delivered.Stream
	}
	if info.NumPending == 0 && !p.follow {
		return nil
	}

	next := apiPrefix(js.Options()) + "CONSUMER.MSG.NEXT." + info.Stream + "." + info.Name
	request := fmt.Appendf(nil, `{"batch":%d,"expires":%d,"idle_heartbeat":%d}`,
		pullScanBatch, int64(time.Hour), int64(pullScanHeartbeat))
	// A plain inbox: one under the connection's response prefix would also
	// reach the request multiplexer with every message.
	inbox := nc.NewInbox()

	var (
		// mu is held while a message is handled; stopped, once set under
		// it, means fn is never called again.
		mu       sync.Mutex
		stopped  bool
		result   = make(chan error, 1)
		heard    atomic.Uint64
		cseq     uint64
		received int
	)
	finish := func(err error) {
		stopped = true
		result <- err
	}
	pull := func() {
		if err := nc.PublishRequest(next, inbox, request); err != nil {
			finish(fmt.Errorf("bucket %q: %w", b.name, err))
		}
	}
	sub, err := nc.Subscribe(inbox, func(m *nats.Msg) {
		heard.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if m.Reply == "" {
			// A status: 100 is an idle heartbeat; 404 and 408 end a pull
			// with nothing more to give, which a bounded pass reaches
			// only when revisions were removed under it, and a following
			// one when its hour-long pull expires.
			switch code := statusCode(m); {
			case code == "100":
			case (code == "404" || code == "408") && p.follow:
				pull()
			case code == "404" || code == "408":
				finish(nil)
			case p.follow:
				// 409 Consumer Deleted or Leadership Change, 503 no
				// responders after a restart: start over.
				finish(errRestart)
			default:
				finish(fmt.Errorf("bucket %q: reading: %s %s", b.name, code, m.Header.Get("Description")))
			}
			return
		}
		md, ok := parseAckReply(m.Reply)
		if !ok {
			finish(fmt.Errorf("bucket %q: reading: unexpected reply subject %q", b.name, m.Reply))
			return
		}
		if md.cseq != cseq+1 {
			finish(errGap)
			return
		}
		cseq = md.cseq
		if !p.follow && md.sseq > p.endSeq {
			finish(nil)
			return
		}
		*last = md.sseq
		if p.match == nil || p.match(m.Subject) {
			if err := fn(b.entry(m.Subject, md.sseq, time.Unix(0, md.ts), m.Header, m.Data)); err != nil {
				finish(err)
				return
			}
		}
		if !p.follow && (md.sseq >= p.endSeq || md.pending == 0) {
			finish(nil)
			return
		}
		if received++; received%pullScanBatch == 0 {
			pull()
		}
	})
	if err != nil {
		return fmt.Errorf("bucket %q: %w", b.name, err)
	}
	defer func() {
		_ = sub.Unsubscribe()
	}()
	abort := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			// The pass ended in the meantime: its result wins.
			return <-result
		}
		stopped = true
		return err
	}
	mu.Lock()
	for range 2 {
		if !stopped {
			pull()
		}
	}
	mu.Unlock()
	tick := time.NewTicker(pullScanHeartbeat)
	defer tick.Stop()
	seen, quiet := heard.Load(), 0
	for {
		select {
		case err := <-result:
			return err
		case <-ctx.Done():
			return abort(ctx.Err())
		case <-reconnected:
			return abort(errGap)
		case <-tick.C:
			if n := heard.Load(); n != seen {
				seen, quiet = n, 0
				continue
			}
			if quiet++; quiet >= 3 {
				if p.follow {
					return abort(errRestart)
				}
				return abort(fmt.Errorf("bucket %q: reading: no message from the server in %s", b.name, 3*pullScanHeartbeat))
			}
		}
	}
}

// apiPrefix is the subject prefix of the JetStream API for js: its domain's,
// its API prefix, or $JS.API.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		if strings.HasSuffix(o.APIPrefix, ".") {
			return o.APIPrefix
		}
		return o.APIPrefix + "."
	}
	return jetstream.DefaultAPIPrefix
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
