package dlq

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/retry"
)

// The sweep, redrive and purge run as streaming pipelines of pkg/mover's
// stages (mover.Ordered, mover.Serial, whose depth is exact: at most depth
// messages in a stage's works).

// Pipeline sizes: how many messages a stage's queue holds, and how many
// requests the request stages (gets, deletes) keep in flight. Together
// they bound the messages in flight (seven queues, the sweep's rows of
// direct gets and a fetched batch: about 2,500, well under the sweep
// durable's MaxAckPending of 20,000; the sweep's and redrive's
// mover.Window holds at most pipeDepth publishes pending, its MaxPending).
// With leader gets, bench/dlq.sh found no
// difference between 8 and 256 requests in flight; with batched direct
// gets the deletes set the pace, and 128 to 256 deletes in flight swept
// about 15% faster than 32 (the server answers more of them per system
// call). Queues of 512 made no difference and raised the peak RSS. The
// sweep reads directWorkers rows of at most directRow dead messages at a
// time with batched direct gets (where the source allows them), exactly
// that many in flight (mover.Ordered's depth; the stage before it held
// one more than its depth, and the sweep was given depth 1: it ran 2 rows
// in flight, not 4, until issue 23). bench/dlqprobe measures the direct
// ceiling with the same 4 rows in flight.
const (
	pipeDepth     = 256
	getWorkers    = 128
	directWorkers = 4
	directRow     = 64
	deleteWorkers = 256
)

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
		done(retryTransientAfter(p.ctx, p.js.Conn(), p.api.Timeout, err, func(context.Context) error { return request(work) }))
	}()
}

func (p *piped) close() { p.pipe.Close() }
