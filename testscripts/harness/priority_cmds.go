package harness

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// priorityClient is a client pulling from a consumer in a priority group,
// on a connection of its own, until it is stopped (it goes away).
type priorityClient struct {
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan struct{}
	got    atomic.Int64
	pin    atomic.Value // string: the last Nats-Pin-Id received
	err    atomic.Value // string: why it stopped early
}

// The clients of each running script, by name.
var (
	priorityMu      sync.Mutex
	priorityClients = map[*testscript.TestScript]map[string]*priorityClient{}
)

// priorityClientMax bounds a client that is never stopped; the script's
// end stops it before that.
const priorityClientMax = 5 * time.Minute

// priority-client start NAME STREAM CONSUMER GROUP [--pull D] [--min-pending N] [--until pinned|waiting]
// priority-client wait NAME N
// priority-client stop NAME
//
// start connects a client that pulls from CONSUMER in priority group
// GROUP, one message at a time, each pull waiting up to D (default
// 200ms), acknowledging what it gets, for as long as it runs: a client
// that stays pinned (each pull keeps its pin). With --until pinned (the
// default) it waits (at most 10 s) until the server has pinned it, which
// it does on the first delivery, and prints "priority-client NAME: pinned
// PIN-ID"; with --until waiting, until the consumer reports a pull
// waiting (num_waiting at least 1). --min-pending makes its pulls those
// of an overflow client: served only while the consumer has at least N
// unprocessed messages. wait waits (at most 10 s) until
// NAME has received at least N messages and prints "priority-client NAME:
// got N, pinned PIN-ID". stop makes it go away: it stops pulling and
// closes its connection; the server keeps its pin until priority_timeout.
// Every client stops when the script ends.
func cmdPriorityClient(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: priority-client start NAME STREAM CONSUMER GROUP [--pull D] [--min-pending N] [--until pinned|waiting] | wait NAME N | stop NAME")
	}
	priorityMu.Lock()
	clients, ok := priorityClients[ts]
	if !ok {
		clients = map[string]*priorityClient{}
		priorityClients[ts] = clients
		ts.Defer(func() {
			priorityMu.Lock()
			all := priorityClients[ts]
			delete(priorityClients, ts)
			priorityMu.Unlock()
			for _, c := range all {
				c.stop()
			}
		})
	}
	c := clients[args[1]]
	priorityMu.Unlock()
	name := args[1]
	switch args[0] {
	case "start":
		if len(args) < 5 {
			ts.Fatalf("usage: priority-client start NAME STREAM CONSUMER GROUP [--pull D] [--min-pending N] [--until pinned|waiting]")
		}
		pull, until := 200*time.Millisecond, "pinned"
		opts := []jetstream.FetchOpt{jetstream.FetchPriorityGroup(args[4])}
		for i := 5; i < len(args); i++ {
			switch args[i] {
			case "--pull":
				d, err := time.ParseDuration(flagArg(ts, args, &i))
				ts.Check(err)
				pull = d
			case "--min-pending":
				n, err := strconv.ParseInt(flagArg(ts, args, &i), 10, 64)
				ts.Check(err)
				opts = append(opts, jetstream.FetchMinPending(n))
			case "--until":
				until = flagArg(ts, args, &i)
			default:
				ts.Fatalf("priority-client start: unknown flag %s", args[i])
			}
		}
		if c != nil {
			ts.Fatalf("priority-client: %s already started", name)
		}
		c = startPriorityClient(ts, args[2], args[3], opts, pull)
		priorityMu.Lock()
		clients[name] = c
		priorityMu.Unlock()
		switch until {
		case "pinned":
			c.waitFor(ts, name, 1)
			fmt.Fprintf(ts.Stdout(), "priority-client %s: pinned %s\n", name, c.pinID())
		case "waiting":
			waitPullWaiting(ts, args[2], args[3])
		default:
			ts.Fatalf("priority-client start: --until pinned or waiting, not %q", until)
		}
	case "wait":
		if len(args) != 3 || c == nil {
			ts.Fatalf("usage: priority-client wait NAME N (of a started client)")
		}
		var n int64
		_, err := fmt.Sscan(args[2], &n)
		ts.Check(err)
		c.waitFor(ts, name, n)
		fmt.Fprintf(ts.Stdout(), "priority-client %s: got %d, pinned %s\n", name, c.got.Load(), c.pinID())
	case "stop":
		if len(args) != 2 || c == nil {
			ts.Fatalf("usage: priority-client stop NAME (of a started client)")
		}
		c.stop()
	default:
		ts.Fatalf("priority-client: unknown action %q", args[0])
	}
}

func startPriorityClient(ts *testscript.TestScript, stream, consumer string, opts []jetstream.FetchOpt, pull time.Duration) *priorityClient {
	nc, err := nats.Connect(ts.Getenv("NATS_URL"), nats.Timeout(5*time.Second))
	ts.Check(err)
	js, err := jetstream.New(nc)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), priorityClientMax)
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		cancel()
		nc.Close()
		ts.Fatalf("priority-client: %v", err)
	}
	c := &priorityClient{nc: nc, cancel: cancel, done: make(chan struct{})}
	c.pin.Store("")
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fctx, fcancel := context.WithTimeout(ctx, pull)
			b, err := cons.Fetch(1, append([]jetstream.FetchOpt{jetstream.FetchContext(fctx)}, opts...)...)
			if err != nil {
				fcancel()
				if ctx.Err() == nil {
					c.err.Store(err.Error())
				}
				return
			}
			for m := range b.Messages() {
				if pin := m.Headers().Get("Nats-Pin-Id"); pin != "" {
					c.pin.Store(pin)
				}
				if m.DoubleAck(ctx) == nil {
					c.got.Add(1)
				}
			}
			fcancel()
		}
	}()
	return c
}

func (c *priorityClient) pinID() string { return c.pin.Load().(string) }

// waitPullWaiting waits (at most 10 s) until the consumer reports a pull
// waiting.
func waitPullWaiting(ts *testscript.TestScript, stream, consumer string) {
	_, js := jsFor(ts)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, cancel := ctx()
		cons, err := js.Consumer(c, stream, consumer)
		cancel()
		ts.Check(err)
		if cons.CachedInfo().NumWaiting >= 1 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("priority-client: no pull waiting on %s > %s after 10s", stream, consumer)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor waits until the client has received n messages (at most 10 s).
func (c *priorityClient) waitFor(ts *testscript.TestScript, name string, n int64) {
	for deadline := time.Now().Add(10 * time.Second); c.got.Load() < n; {
		if e, ok := c.err.Load().(string); ok {
			ts.Fatalf("priority-client %s stopped: %s", name, e)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("priority-client %s: got %d messages in 10s, want %d", name, c.got.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the pulls and closes the connection; it waits for the
// client's goroutine.
func (c *priorityClient) stop() {
	c.cancel()
	<-c.done
	c.nc.Close()
}
