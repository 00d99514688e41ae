package dlq

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
)

// The sweep, redrive and purge run as streaming pipelines: stages connected
// by bounded queues, each stage working on many messages at once, so that
// the server always has requests to answer (a batch-at-a-time loop leaves
// it idle between its phases). Each message still goes through its steps
// strictly in order, and leaves the last stage in the order it entered
// the first: acknowledgements, records and counts come out in that order.

// Pipeline sizes: how many messages a stage's queue holds, and how many
// requests the request stages (gets, deletes) keep in flight. Together
// they bound the messages in flight (seven queues, the sweep's rows of
// direct gets and a fetched batch: about 2,500, well under the sweep
// durable's MaxAckPending of 20,000; only the queue between publishing and
// settling (256) has publishes pending, well under nats.go's 4,000
// pending async publishes). With leader gets, bench/dlq.sh found no
// difference between 8 and 256 requests in flight; with batched direct
// gets the deletes set the pace, and 128 to 256 deletes in flight swept
// about 15% faster than 32 (the server answers more of them per system
// call). Queues of 512 made no difference and raised the peak RSS. The
// sweep reads directWorkers rows of at most directRow dead messages at a
// time with batched direct gets (where the source allows them): more rows
// in flight only raised the peak RSS of a 100,000-message sweep.
const (
	pipeDepth     = 256
	getWorkers    = 128
	directWorkers = 4
	directRow     = 64
	deleteWorkers = 256
)

// ordered is a pipeline stage: start begins the work on a value of in
// and arranges for done to be called once it is over (on any goroutine:
// a request's reply, or a goroutine of start's own). At most depth values
// are in the works; each is passed on, once done, in the order it came.
// The output is closed after in is closed and every value is passed on.
func ordered[T any](in <-chan T, depth int, start func(v T, done func())) <-chan T {
	type slot struct {
		v    T
		done chan struct{}
	}
	out := make(chan T, depth)
	queue := make(chan slot, depth)
	go func() {
		defer close(queue)
		for v := range in {
			s := slot{v: v, done: make(chan struct{})}
			queue <- s
			start(v, func() { close(s.done) })
		}
	}()
	go func() {
		defer close(out)
		for s := range queue {
			<-s.done
			out <- s.v
		}
	}()
	return out
}

// piped makes the gets and deletes of a pipeline stage through one
// jsapi.Pipe: no goroutine waits on each request (with that, a sweep's
// CPU per message fell from about 35-40 µs to 25 µs). A request the
// server did not answer (a restart, an election) is tried again with
// retryTransient's tries, ended by ctx.
type piped struct {
	ctx  context.Context
	api  *jsapi.Client
	js   jetstream.JetStream
	pipe *jsapi.Pipe
}

// newPiped opens the pipe; close it when the stage is over.
func newPiped(ctx context.Context, js jetstream.JetStream, api *jsapi.Client) (*piped, error) {
	pipe, err := api.NewPipe()
	if err != nil {
		return nil, err
	}
	return &piped{ctx: ctx, api: api, js: js, pipe: pipe}, nil
}

// get reads a message from the stream leader and calls done with it.
func (p *piped) get(stream string, req jsapi.MsgGetRequest, done func(*envelope.Message, error)) {
	p.pipe.MsgGet(stream, req, func(m *envelope.Message, err error) {
		p.again(err, func(work context.Context) (err error) {
			m, err = p.api.MsgGet(work, stream, req)
			return err
		}, func(err error) { done(m, err) })
	})
}

// delete removes the message at seq of stream (one already gone is no
// error) and calls done with the outcome.
func (p *piped) delete(stream string, seq uint64, done func(error)) {
	p.pipe.MsgDelete(stream, seq, func(err error) {
		p.again(err, func(work context.Context) error { return p.api.MsgDelete(work, stream, seq) }, done)
	})
}

// again calls done with err, the outcome of a request's try on the pipe,
// unless it is transient: then, on a goroutine of its own, it makes the
// other tries of retryTransient with request (and a context that nothing
// cancels), and calls done with their outcome.
func (p *piped) again(err error, request func(work context.Context) error, done func(error)) {
	if err == nil || !retry.Transient(err) {
		done(err)
		return
	}
	go func() {
		work := context.WithoutCancel(p.ctx)
		done(retryTransientAfter(p.ctx, p.js.Conn(), p.api.Timeout, err, func() error { return request(work) }))
	}()
}

func (p *piped) close() { p.pipe.Close() }

// serial runs fn on each value of in, one at a time, and passes it on.
func serial[T any](in <-chan T, depth int, fn func(T)) <-chan T {
	out := make(chan T, depth)
	go func() {
		defer close(out)
		for v := range in {
			fn(v)
			out <- v
		}
	}()
	return out
}
