package jsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// Pipe sends API requests without a goroutine waiting on each: every reply
// comes back on one subscription (an inbox with the request's number as
// its last token) and goes to the request's callback. A sweep deletes each
// dead message; with a goroutine parked on each of hundreds of requests in
// flight, the wake-ups, channels and timers cost the client more than the
// requests themselves.
//
// A request the server does not answer within the client's timeout gets
// context.DeadlineExceeded; one without responders, nats.ErrNoResponders.
// A Pipe does not try again: its caller decides (see dlq's retryTransient).
type Pipe struct {
	c     *Client
	inbox string
	sub   *nats.Subscription
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu    sync.Mutex
	next  uint64
	calls map[uint64]*pipeCall
}

type pipeCall struct {
	subject string
	expires time.Time
	done    func(*nats.Msg, error)
}

// NewPipe subscribes the pipe's inbox. Close it when done.
func (c *Client) NewPipe() (*Pipe, error) {
	p := &Pipe{c: c, inbox: c.NC.NewRespInbox(), stop: make(chan struct{}), done: make(chan struct{}), calls: map[uint64]*pipeCall{}}
	sub, err := c.NC.Subscribe(p.inbox+".*", p.reply)
	if err != nil {
		return nil, fmt.Errorf("api pipe: %w", err)
	}
	// The callers bound what is in flight; the subscription must not drop
	// a reply for it.
	_ = sub.SetPendingLimits(-1, -1)
	p.sub = sub
	go p.expire()
	return p, nil
}

// Request sends body to the API subject; done gets the reply or the error,
// once, on another goroutine or (when the request cannot be sent) on this
// one.
func (p *Pipe) Request(subject string, body []byte, done func(reply *nats.Msg, err error)) {
	subject = p.c.Prefix + subject
	p.mu.Lock()
	p.next++
	id := p.next
	p.calls[id] = &pipeCall{subject: subject, expires: time.Now().Add(p.c.Timeout), done: done}
	p.mu.Unlock()
	p.c.TraceRequest(subject, body)
	if err := p.c.NC.PublishRequest(subject, p.inbox+"."+strconv.FormatUint(id, 10), body); err != nil {
		if call := p.take(id); call != nil {
			call.done(nil, err)
		}
	}
}

// take removes and returns the call with number id, nil if it is no
// longer waiting (answered, or timed out).
func (p *Pipe) take(id uint64) *pipeCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	call := p.calls[id]
	delete(p.calls, id)
	return call
}

func (p *Pipe) reply(m *nats.Msg) {
	id, err := strconv.ParseUint(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], 10, 64)
	if err != nil {
		return
	}
	call := p.take(id)
	if call == nil {
		return // a late reply to a request that timed out
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		call.done(nil, nats.ErrNoResponders)
		return
	}
	p.c.TraceReply(call.subject, m)
	call.done(m, nil)
}

// expire fails the requests that are not answered within the timeout.
func (p *Pipe) expire() {
	defer close(p.done)
	t := time.NewTicker(max(p.c.Timeout/8, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			var late []*pipeCall
			p.mu.Lock()
			for id, call := range p.calls {
				if now.After(call.expires) {
					late = append(late, call)
					delete(p.calls, id)
				}
			}
			p.mu.Unlock()
			for _, call := range late {
				call.done(nil, context.DeadlineExceeded)
			}
		}
	}
}

// Close unsubscribes; requests still waiting get context.Canceled. Closing
// again does nothing.
func (p *Pipe) Close() {
	p.once.Do(func() {
		_ = p.sub.Unsubscribe()
		close(p.stop)
		<-p.done
		p.mu.Lock()
		calls := p.calls
		p.calls = map[uint64]*pipeCall{}
		p.mu.Unlock()
		for _, call := range calls {
			call.done(nil, context.Canceled)
		}
	})
}

// MsgGet is Client.MsgGet through the pipe: done gets its outcome.
func (p *Pipe) MsgGet(stream string, req MsgGetRequest, done func(*envelope.Message, error)) {
	body, err := json.Marshal(req)
	if err != nil {
		done(nil, err)
		return
	}
	p.Request("STREAM.MSG.GET."+stream, body, func(reply *nats.Msg, err error) {
		if err != nil {
			done(nil, fmt.Errorf("stream %q: message get: %w", stream, err))
			return
		}
		done(msgGetResult(stream, reply.Data))
	})
}

// MsgDelete is Client.MsgDelete through the pipe: done gets its outcome.
func (p *Pipe) MsgDelete(stream string, seq uint64, done func(error)) {
	p.Request("STREAM.MSG.DELETE."+stream, msgDeleteBody(seq), func(reply *nats.Msg, err error) {
		if err != nil {
			done(fmt.Errorf("stream %q: delete seq %d: %w", stream, seq, err))
			return
		}
		done(deleteResult(stream, seq, reply.Data))
	})
}
