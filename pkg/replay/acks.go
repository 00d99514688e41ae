package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// acks sends publishes with reply subjects of its own and records each
// acknowledgement's outcome on the copy it belongs to. It does what
// nats.go's async publish does, without a future and a full JSON decode
// per message: at hundreds of thousands of copies, the client's CPU is the
// server's too. A copy sent again gets a new token; the first outcome that
// says "stored" settles it, whichever send it answers.
type acks struct {
	nc     *nats.Conn
	prefix string
	sub    *nats.Subscription
	notify chan struct{}
	next   uint64

	mu     sync.Mutex
	tokens map[uint64]*copyState
	// failed holds copies whose latest outcome is an error, for the
	// publisher to retry or give up on.
	failed []*copyState
	// stored is the highest target sequence acknowledged, per stream.
	stored map[string]uint64
	// storedGen changes whenever stored does.
	storedGen uint64
}

func newAcks(nc *nats.Conn) (*acks, error) {
	a := &acks{
		nc: nc, prefix: nats.NewInbox() + ".", notify: make(chan struct{}, 1),
		tokens: make(map[uint64]*copyState), stored: make(map[string]uint64),
	}
	sub, err := nc.Subscribe(a.prefix+"*", a.handle)
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	a.sub = sub
	return a, nil
}

// publish sends c's message with a new token for its acknowledgement.
func (a *acks) publish(c *copyState) error {
	a.next++
	token := a.next
	c.msg.Reply = a.prefix + strconv.FormatUint(token, 10)
	a.mu.Lock()
	a.tokens[token] = c
	c.tokens = append(c.tokens, token)
	c.err = nil
	a.mu.Unlock()
	return a.nc.PublishMsg(c.msg)
}

// forget drops c's tokens once c is settled.
func (a *acks) forget(c *copyState) {
	a.mu.Lock()
	for _, t := range c.tokens {
		delete(a.tokens, t)
	}
	c.tokens = nil
	a.mu.Unlock()
}

func (a *acks) handle(m *nats.Msg) {
	token, err := strconv.ParseUint(strings.TrimPrefix(m.Subject, a.prefix), 10, 64)
	if err != nil {
		return
	}
	ack := parseAck(m)
	a.mu.Lock()
	if c := a.tokens[token]; c != nil && !c.stored {
		if ack.err == nil {
			c.stored, c.duplicate = true, ack.duplicate
			if ack.stream != "" && ack.seq > a.stored[ack.stream] {
				a.stored[ack.stream] = ack.seq
				a.storedGen++
			}
		} else if c.err == nil {
			c.err = ack.err
			a.failed = append(a.failed, c)
		}
	}
	a.mu.Unlock()
	select {
	case a.notify <- struct{}{}:
	default:
	}
}

// fail records err as the outcome of c's latest send.
func (a *acks) fail(c *copyState, err error) {
	a.mu.Lock()
	if !c.stored && c.err == nil {
		c.err = err
		a.failed = append(a.failed, c)
	}
	a.mu.Unlock()
}

// takeFailed returns the copies whose latest send failed, and forgets them.
func (a *acks) takeFailed() []*copyState {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.failed
	a.failed = nil
	return f
}

// positions returns a copy of the highest stored sequence per target
// stream if it changed since gen, and the current generation.
func (a *acks) positions(gen uint64) (map[string]uint64, uint64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen == a.storedGen && gen != 0 {
		return nil, gen, false
	}
	out := make(map[string]uint64, len(a.stored))
	for k, v := range a.stored {
		out[k] = v
	}
	return out, a.storedGen, true
}

// outcome reads whether c is stored, and whether as a duplicate.
func (a *acks) outcome(c *copyState) (stored, duplicate bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return c.stored, c.duplicate
}

// markStored settles c as stored without an acknowledgement (found in the
// target by a lookup).
func (a *acks) markStored(c *copyState) {
	a.mu.Lock()
	c.stored = true
	a.mu.Unlock()
}

func (a *acks) close() {
	if a.sub != nil {
		a.sub.Unsubscribe()
	}
}

// pubAck is what an acknowledgement says.
type pubAck struct {
	stream    string
	seq       uint64
	duplicate bool
	err       error
}

// parseAck reads a publish acknowledgement without decoding the usual
// {"stream":"S","seq":N} or {"stream":"S","seq":N,"duplicate":true} in
// full; anything else is decoded as JSON.
func parseAck(m *nats.Msg) pubAck {
	if len(m.Data) == 0 {
		if m.Header.Get("Status") == "503" {
			return pubAck{err: jetstream.ErrNoStreamResponse}
		}
		return pubAck{err: fmt.Errorf("empty acknowledgement (status %s %s)", m.Header.Get("Status"), m.Header.Get("Description"))}
	}
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		if ack, ok := quickAck(m.Data); ok {
			return ack
		}
	}
	var resp struct {
		Stream    string              `json:"stream"`
		Seq       uint64              `json:"seq"`
		Duplicate bool                `json:"duplicate"`
		Error     *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return pubAck{err: fmt.Errorf("bad acknowledgement: %w", err)}
	}
	if resp.Error != nil {
		return pubAck{err: resp.Error}
	}
	return pubAck{stream: resp.Stream, seq: resp.Seq, duplicate: resp.Duplicate}
}

func quickAck(data []byte) (pubAck, bool) {
	const streamKey, seqKey = `{"stream":"`, `,"seq":`
	if !bytes.HasPrefix(data, []byte(streamKey)) {
		return pubAck{}, false
	}
	rest := data[len(streamKey):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return pubAck{}, false
	}
	ack := pubAck{stream: string(rest[:end])}
	rest = rest[end+1:]
	if !bytes.HasPrefix(rest, []byte(seqKey)) {
		return pubAck{}, false
	}
	rest = rest[len(seqKey):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	seq, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return pubAck{}, false
	}
	ack.seq = seq
	rest = rest[n:]
	switch {
	case bytes.Equal(rest, []byte(`}`)):
	case bytes.HasPrefix(rest, []byte(`,"duplicate":true`)):
		ack.duplicate = true
	default:
		// Other fields (domain, batch, ...): decode them properly.
		return pubAck{}, false
	}
	return ack, true
}
