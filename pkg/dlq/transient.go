package dlq

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/natsconn"
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
// back (at most timeout), both ending with ctx. Each try's ctx ends after
// timeout: a request lost with the connection (sent to a server that
// restarted) is never answered, and must not wait for the end of the
// caller's ctx, which a caller may set far away (nats.go's requests
// take a ctx with a deadline as their only bound).
func retryTransient(ctx context.Context, nc *nats.Conn, timeout time.Duration, request func(ctx context.Context) error) error {
	return retryTransientAfter(ctx, nc, timeout, nil, request)
}

// retryTransientAfter is retryTransient for a request whose first try,
// made elsewhere (a jsapi.Pipe), failed with first, a transient error: it
// makes the other tries, the first of them once the connection is back.
func retryTransientAfter(ctx context.Context, nc *nats.Conn, timeout time.Duration, first error, request func(ctx context.Context) error) error {
	attempts, last := transientAttempts, first
	if first != nil {
		attempts--
	}
	return retry.Do(ctx, retry.Policy{Attempts: attempts, Pause: 100 * time.Millisecond, Retryable: retry.Transient},
		func(ctx context.Context) error {
			if last != nil {
				// Not again once ctx has ended: the sweep is stopping.
				if nc != nil {
					natsconn.WaitConnected(ctx, nc, timeout)
				}
				if ctx.Err() != nil {
					return last
				}
			}
			try, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			last = request(try)
			return last
		})
}
