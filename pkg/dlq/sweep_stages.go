package dlq

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/mover"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// The sweep's stages: the pipeline a dead message goes through, and the
// requests each stage makes.

// run moves the dead messages feed pushes, as a pipeline:
//
//	feed (paced by --rate)
//	     -> prefetch rows by batched direct gets (directWorkers at a time)
//	     -> get (from the stream leader, getWorkers at a time)
//	     -> publish the copy (through the mover.Window, async)
//	     -> settle the copy: its acknowledgement, in order (the window's
//	        rules: a refusal for its size stores a pointer copy, no
//	        acknowledgement in time or a transient refusal one more try)
//	     -> remove the source (deleteWorkers at a time, through one pipe)
//	     -> acknowledge the advisory, count, report: in order
//
// Each step for a message starts only after the one before it is
// confirmed for it, and advisories are acknowledged in the order they
// were fetched, so the durable's ack floor only ever passes messages that
// are done. Interrupted, feed stops, messages not yet published are left
// (unacknowledged) for the next run, and those already published are
// finished.
func (s *sweeper) run(ctx context.Context, feed func(push func(*item) bool) error) error {
	work := context.WithoutCancel(ctx)
	p, err := newPiped(ctx, s.js, s.api)
	if err != nil {
		return err
	}
	defer p.close()
	if !s.cfg.DryRun {
		if s.win, err = mover.New(s.js, mover.Config{
			MaxPending: pipeDepth,
			AckWait:    2 * s.api.Timeout,
			// Too large to copy whole (the server's max_payload, the
			// DLQ stream's max_msg_size): the DLQ keeps a pointer.
			Shrink: func(m *nats.Msg, _ error) *nats.Msg { return PointerCopy(m) },
		}); err != nil {
			return err
		}
		defer s.win.Close()
	}
	s.unacked = 0
	in := make(chan *item, pipeDepth)
	var feedErr error
	sliceLeft := 0
	go func() {
		defer close(in)
		feedErr = feed(func(it *item) bool {
			if ctx.Err() != nil {
				return false
			}
			// --rate paces the dead messages taken (a get, a copy and a
			// delete each), whatever becomes of them, a slice at a time.
			if s.limiter != nil && !s.cfg.DryRun && it.pass == passNone {
				if sliceLeft == 0 {
					if s.limiter.WaitN(ctx, s.slice) != nil {
						return false
					}
					sliceLeft = s.slice
				}
				sliceLeft--
			}
			select {
			case in <- it:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	got := mover.Ordered(s.prefetch(ctx, in), getWorkers, func(it *item, done func()) { s.get(work, p, it, done) })
	sent := mover.Serial(got, pipeDepth, func(it *item) { s.publish(ctx, it) })
	settled := mover.Serial(sent, pipeDepth, func(it *item) { s.settle(work, it) })
	removed := mover.Ordered(settled, deleteWorkers, func(it *item, done func()) { s.remove(work, p, it, done) })
	for it := range removed {
		s.finish(it)
	}
	if !s.cfg.DryRun {
		s.confirmAcks(work)
		_ = s.js.Conn().FlushWithContext(work)
	}
	s.progress()
	// in is closed once feed has returned.
	return feedErr
}

// prefetch passes the items of in on in their order. Where the source
// answers direct gets, it gets dead messages at consecutive sequences (one
// at N, the next at N+1) with one batched direct get per row of them,
// directWorkers rows at a time, instead of a get each. A stored message
// cannot differ between replicas, so whichever replica answers gives the
// same copy. A message the batch does not return (gone, or not yet on the
// replica that answered) is left to the get stage, which asks the leader.
func (s *sweeper) prefetch(ctx context.Context, in <-chan *item) <-chan *item {
	if !s.direct {
		return in
	}
	rows := make(chan []*item)
	go func() {
		defer close(rows)
		var row []*item
		send := func() {
			if len(row) > 0 {
				rows <- row
				row = nil
			}
		}
		for it := range in {
			inRow := it.pass == passNone
			if !inRow || len(row) >= directRow || (len(row) > 0 && row[len(row)-1].adv.StreamSeq+1 != it.adv.StreamSeq) {
				send()
			}
			row = append(row, it)
			// A row waits for its next message only where the feeder
			// said one follows.
			if !inRow || it.rowEnd {
				send()
			}
		}
		send()
	}()
	// directWorkers goroutines, each with a getter (one reply inbox), take
	// the rows one at a time (a goroutine per row, with more rows
	// waiting, raised the peak RSS of a 100,000-message sweep by 5 MiB).
	type job struct {
		row  []*item
		done func()
	}
	jobs := make(chan job)
	var workers sync.WaitGroup
	for range directWorkers {
		workers.Go(func() {
			g := streamread.NewDirectGetter(s.js, s.cfg.Stream)
			defer g.Close()
			for j := range jobs {
				s.getRow(ctx, g, j.row)
				j.done()
			}
		})
	}
	// At most directWorkers rows in the stage, so a worker is free for
	// each row started: directWorkers direct gets in flight.
	done := mover.Ordered(rows, directWorkers, func(row []*item, done func()) { jobs <- job{row, done} })
	out := make(chan *item, pipeDepth)
	go func() {
		defer close(out)
		for row := range done {
			for _, it := range row {
				out <- it
			}
		}
		close(jobs)
		workers.Wait()
	}()
	return out
}

// getRow gets a row of dead messages at consecutive sequences with one
// batched direct get; a row of one is left to the get stage.
func (s *sweeper) getRow(ctx context.Context, g *streamread.DirectGetter, row []*item) {
	first := row[0].adv.StreamSeq
	if len(row) < 2 || row[0].pass != passNone {
		return
	}
	_ = retryTransient(ctx, s.js.Conn(), s.api.Timeout, func(ctx context.Context) error {
		return g.Get(ctx, jsapi.MsgGetRequest{Seq: first, Batch: len(row)}, func(m *envelope.Message) error {
			if m.Seq < first || m.Seq-first >= uint64(len(row)) {
				return streamread.ErrStop
			}
			row[m.Seq-first].src = m
			return nil
		})
	})
}

// get reads the dead message from the stream leader, unless prefetch has,
// and calls done when that is over.
func (s *sweeper) get(work context.Context, p *piped, it *item, done func()) {
	if it.pass != passNone {
		done()
		return
	}
	a := it.adv
	it.rec = Record{Stream: a.Stream, StreamSeq: a.StreamSeq, Consumer: a.Consumer, Reason: a.DeadReason(),
		TermReason: a.Reason, Deliveries: a.Deliveries, FoundBy: "advisory", DLQStream: s.n.DLQ}
	if it.scanned {
		it.rec.FoundBy = "scan"
	}
	if it.src != nil {
		s.got(work, it, it.src, nil)
		done()
		return
	}
	p.get(s.cfg.Stream, jsapi.MsgGetRequest{Seq: a.StreamSeq}, func(m *envelope.Message, err error) {
		if errors.Is(err, jsapi.ErrNoMessage) {
			// got asks the DLQ: not on the pipe's goroutine.
			go func() {
				s.got(work, it, nil, err)
				done()
			}()
			return
		}
		s.got(work, it, m, err)
		done()
	})
}

// publish sends the copy to the DLQ through the window, without waiting
// for its acknowledgement. Once interrupted (or the lease lost) it sends
// nothing more: those messages stay for the next run. A dry run sends
// nothing and judges the copy's size against the server's max_payload.
func (s *sweeper) publish(ctx context.Context, it *item) {
	if it.pass != passNone || it.src == nil {
		return
	}
	sweptAt := time.Now()
	if s.cfg.DryRun {
		it.rec.Status = StatusWouldMove
		if WireSize(BuildCopy(s.n, it.src, it.adv, sweptAt)) > s.js.Conn().MaxPayload() {
			it.rec.Status, it.rec.SourceNote = StatusTooLarge, s.tooLargeNote(it)
		}
		return
	}
	if !s.stopped && ctx.Err() == nil {
		it.pub = &mover.Pub{Msg: BuildCopy(s.n, it.src, it.adv, sweptAt)}
		if s.win.Publish(ctx, it.pub) == nil {
			return
		}
	}
	s.stopped = true
	it.rec.Status = ""
	it.src, it.pub = nil, nil
}

// settle waits for the window's outcome of the copy (acknowledged,
// refused, or tried once more: the window's rules, see mover.Window.Settle)
// and records it.
func (s *sweeper) settle(work context.Context, it *item) {
	if it.pub == nil {
		return
	}
	s.win.Settle(work, it.pub)
	s.published(it, it.pub)
	it.pub = nil
}

// remove deletes the source message where the retention policy calls for
// it, once its copy is acknowledged, and calls done when that is over.
func (s *sweeper) remove(work context.Context, p *piped, it *item, done func()) {
	if !s.deletes(work, it) {
		done()
		return
	}
	p.delete(s.cfg.Stream, it.src.Seq, func(err error) {
		if err != nil {
			it.rec.Status, it.rec.Error = StatusFailed, "copied, but the source could not be deleted: "+err.Error()
		} else {
			it.rec.Source = SourceDeleted
		}
		done()
	})
}
