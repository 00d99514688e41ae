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

// A bounded pass (history, diffs) reads with a plain ephemeral pull
// consumer (no acks, in memory) rather than nats.go's ordered consumer: the
// library's per-message bookkeeping (a heartbeat timer reset and a metadata
// split per message, a channel hand-off) costs more than twice the CPU of
// the pass itself on a 500,000-revision bucket. Order is checked the way an
// ordered consumer does it: a gap in the consumer sequence recreates the
// consumer after the last stream sequence seen.
const (
	// pullScanBatch is the size of one pull request; two are outstanding.
	pullScanBatch = 4096
	// pullScanHeartbeat is the idle heartbeat asked of the server; a pass
	// that hears nothing for three of them fails.
	pullScanHeartbeat = 5 * time.Second
	// pullScanRestarts bounds how often a pass recreates its consumer.
	pullScanRestarts = 5
)

// errGap is a gap in a pass's consumer sequence.
var errGap = errors.New("messages missed")

// pullScan delivers the revisions of cfg's consumer in stream order to fn,
// up to endSeq or the stream's end, whichever comes first.
func (b *bucket) pullScan(ctx context.Context, js jetstream.JetStream, cfg jetstream.ConsumerConfig, endSeq uint64, match func(string) bool, fn func(Entry) error) error {
	cfg.AckPolicy = jetstream.AckNonePolicy
	cfg.MemoryStorage = true
	cfg.Replicas = 1
	cfg.InactiveThreshold = time.Minute
	cfg.ReplayPolicy = jetstream.ReplayInstantPolicy
	// A pass over each key's last revision cannot resume from a sequence
	// (it would read older revisions of keys not yet seen): a gap there
	// fails the pass.
	restarts := pullScanRestarts
	if cfg.DeliverPolicy == jetstream.DeliverLastPerSubjectPolicy {
		restarts = 0
	}
	var last uint64
	for i := 0; ; i++ {
		if last > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverByStartSequencePolicy, last+1, nil
		}
		err := b.pullOnce(ctx, js, cfg, endSeq, match, fn, &last)
		switch {
		case errors.Is(err, errStop):
			return nil
		case errors.Is(err, errGap) && i < restarts:
			continue
		case errors.Is(err, errGap):
			return fmt.Errorf("bucket %q: reading: the server skipped messages; try again", b.name)
		}
		return err
	}
}

// pullOnce is one consumer's part of a pass. last is the last stream
// sequence handed to fn so far.
func (b *bucket) pullOnce(ctx context.Context, js jetstream.JetStream, cfg jetstream.ConsumerConfig, endSeq uint64, match func(string) bool, fn func(Entry) error, last *uint64) error {
	cons, err := b.stream.CreateConsumer(ctx, cfg)
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
	if info.NumPending == 0 {
		return nil
	}

	nc := js.Conn()
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
			// only when revisions were removed under it.
			switch code := statusCode(m); code {
			case "100":
			case "404", "408":
				finish(nil)
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
		if md.sseq > endSeq {
			finish(nil)
			return
		}
		*last = md.sseq
		if match == nil || match(m.Subject) {
			if err := fn(b.entry(m.Subject, md.sseq, time.Unix(0, md.ts), m.Header, m.Data)); err != nil {
				finish(err)
				return
			}
		}
		if md.sseq >= endSeq || md.pending == 0 {
			finish(nil)
			return
		}
		if received++; received%pullScanBatch == 0 {
			if err := nc.PublishRequest(next, inbox, request); err != nil {
				finish(fmt.Errorf("bucket %q: %w", b.name, err))
			}
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
	for range 2 {
		if err := nc.PublishRequest(next, inbox, request); err != nil {
			return abort(fmt.Errorf("bucket %q: %w", b.name, err))
		}
	}
	tick := time.NewTicker(pullScanHeartbeat)
	defer tick.Stop()
	seen, quiet := heard.Load(), 0
	for {
		select {
		case err := <-result:
			return err
		case <-ctx.Done():
			return abort(ctx.Err())
		case <-tick.C:
			if n := heard.Load(); n != seen {
				seen, quiet = n, 0
				continue
			}
			if quiet++; quiet >= 3 {
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
