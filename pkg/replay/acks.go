package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// acks sends publishes with reply subjects of its own and records each
// acknowledgement's outcome. It does what nats.go's async publish does,
// without a future, a map entry and a full JSON decode per message: at
// hundreds of thousands of copies, the client's CPU is the server's too.
type acks struct {
	nc      *nats.Conn
	prefix  string
	sub     *nats.Subscription
	mu      sync.Mutex
	results map[uint64]error
	notify  chan struct{}
	next    uint64
}

func newAcks(nc *nats.Conn) (*acks, error) {
	a := &acks{nc: nc, prefix: nats.NewInbox() + ".", results: make(map[uint64]error), notify: make(chan struct{}, 1)}
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

// publish sends msg and returns the token its acknowledgement will carry.
func (a *acks) publish(msg *nats.Msg) (uint64, error) {
	a.next++
	msg.Reply = a.prefix + strconv.FormatUint(a.next, 10)
	return a.next, a.nc.PublishMsg(msg)
}

func (a *acks) handle(m *nats.Msg) {
	token, err := strconv.ParseUint(strings.TrimPrefix(m.Subject, a.prefix), 10, 64)
	if err != nil {
		return
	}
	outcome := ackError(m)
	a.mu.Lock()
	a.results[token] = outcome
	a.mu.Unlock()
	select {
	case a.notify <- struct{}{}:
	default:
	}
}

// ackError reads a publish acknowledgement: nil when the message is stored
// (a duplicate counts: it is stored already).
func ackError(m *nats.Msg) error {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return jetstream.ErrNoStreamResponse
	}
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		return nil
	}
	var resp struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return fmt.Errorf("bad acknowledgement: %w", err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	return nil
}

// poll returns the outcome for token if it has arrived.
func (a *acks) poll(token uint64) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	err, ok := a.results[token]
	if ok {
		delete(a.results, token)
	}
	return ok, err
}

// wait blocks until token's outcome arrives, timeout passes, or ctx ends.
func (a *acks) wait(ctx context.Context, token uint64, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		if done, err := a.poll(token); done {
			return err
		}
		select {
		case <-a.notify:
		case <-timer.C:
			return fmt.Errorf("no acknowledgement within %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (a *acks) close() {
	if a.sub != nil {
		a.sub.Unsubscribe()
	}
}
