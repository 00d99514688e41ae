package dlq

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/retry"
)

// transientAttempts bounds how often one request of a sweep is tried when
// the server does not answer: enough to ride out a server restart or a
// leader election, few enough that a server that is really gone ends the
// sweep with the message reported failed (and retried by the next run).
const transientAttempts = 4

// retryTransient runs request until it gets an answer, an error that is
// not transient (retry.Transient), or transientAttempts tries; between
// tries it pauses (a growing pause) and waits for the connection to be
// back (at most timeout), both ending with ctx.
func retryTransient(ctx context.Context, nc *nats.Conn, timeout time.Duration, request func() error) error {
	return retryTransientAfter(ctx, nc, timeout, nil, request)
}

// retryTransientAfter is retryTransient for a request whose first try,
// made elsewhere (a jsapi.Pipe), failed with first, a transient error: it
// makes the other tries, the first of them once the connection is back.
func retryTransientAfter(ctx context.Context, nc *nats.Conn, timeout time.Duration, first error, request func() error) error {
	attempts, last := transientAttempts, first
	if first != nil {
		attempts--
	}
	return retry.Do(ctx, retry.Policy{Attempts: attempts, Pause: 100 * time.Millisecond, Retryable: retry.Transient},
		func(ctx context.Context) error {
			if last != nil {
				// Not again once ctx has ended: the sweep is stopping.
				if waitConnected(ctx, nc, timeout); ctx.Err() != nil {
					return last
				}
			}
			last = request()
			return last
		})
}

// waitConnected waits until nc is connected, for at most timeout.
func waitConnected(ctx context.Context, nc *nats.Conn, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for nc != nil && !nc.IsConnected() && time.Now().Before(deadline) {
		if retry.Sleep(ctx, 50*time.Millisecond) != nil {
			return
		}
	}
}
