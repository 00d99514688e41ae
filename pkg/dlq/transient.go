package dlq

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// transientAttempts bounds how often one request of a sweep is tried when
// the server does not answer: enough to ride out a server restart or a
// leader election, few enough that a server that is really gone ends the
// sweep with the message reported failed (and retried by the next run).
const transientAttempts = 4

// transient says whether err is the server not answering (a restart, a
// reconnect, an election), as opposed to an answer.
func transient(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrDisconnected)
}

// retryTransient runs request until it gets an answer, an error that is
// not transient, or transientAttempts tries; between tries it waits for
// the connection to be back (at most timeout) and a growing pause.
func retryTransient(ctx context.Context, nc *nats.Conn, timeout time.Duration, request func() error) error {
	pause := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := request()
		if err == nil || !transient(err) || attempt == transientAttempts || ctx.Err() != nil {
			return err
		}
		deadline := time.Now().Add(timeout)
		for nc != nil && !nc.IsConnected() && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}
