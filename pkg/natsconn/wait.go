package natsconn

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/retry"
)

// WaitConnected waits until nc is connected, for at most timeout or until
// ctx ends: a request made while the connection is coming back (a server
// restarting) is sent once it is.
func WaitConnected(ctx context.Context, nc *nats.Conn, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !nc.IsConnected() && time.Now().Before(deadline) {
		if retry.Sleep(ctx, 50*time.Millisecond) != nil {
			return
		}
	}
}
