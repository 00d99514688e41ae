// Package mover is how jetctl moves messages: the dlq sweep and redrive,
// migrate's client copy and replay --to are built on it.
//
// A move runs as a pipeline of stages connected by bounded queues, each
// stage working on many messages at once, so that the server always has
// requests to answer (a batch-at-a-time loop leaves it idle between its
// phases). Each message still goes through its steps strictly in order,
// and leaves the last stage in the order it entered the first:
// acknowledgements, checkpoints, records and counts come out in that
// order.
//
//   - Ordered is a stage whose work on a message ends later (a request's
//     reply): at most depth messages are in its works at once.
//   - Serial is a stage that works on one message at a time.
//   - Window publishes copies asynchronously, at most MaxPending waiting
//     for their acknowledgement, and settles each one: acknowledged,
//     refused, or not acknowledged in time and then tried once more,
//     synchronously. A publish stage calls Publish, a settle stage after
//     it calls Settle.
//
// What to move, what to delete, what to checkpoint and how to count is
// each command's policy, not this package's.
package mover

// Ordered is a pipeline stage: start begins the work on a value of in and
// arranges for done to be called exactly once when it is over (on any
// goroutine: a request's reply, or a goroutine of start's own). At most depth values
// are in the stage at once, from the call of start until the value is
// passed on (depth < 1 counts as 1); each is passed on, once done, in the
// order it came. The output holds depth values more, and is closed after
// in is closed and every value is passed on.
func Ordered[T any](in <-chan T, depth int, start func(v T, done func())) <-chan T {
	depth = max(depth, 1)
	// A ring of depth slots, each with its done made once: value k takes
	// slot k%depth, free again once value k-depth is passed on (slots
	// says so), so that no value costs an allocation (a sweep sends
	// hundreds of thousands through three of these stages).
	type slot struct {
		v    T
		done chan struct{} // one token once the work is over
		end  func()
	}
	ring := make([]slot, depth)
	for i := range ring {
		s := &ring[i]
		s.done = make(chan struct{}, 1)
		s.end = func() { s.done <- struct{}{} }
	}
	out := make(chan T, depth)
	// The queue never blocks: slots bounds what it holds.
	queue := make(chan *slot, depth)
	slots := make(chan struct{}, depth)
	go func() {
		defer close(queue)
		next := 0
		for v := range in {
			slots <- struct{}{}
			s := &ring[next]
			next = (next + 1) % depth
			s.v = v
			queue <- s
			start(v, s.end)
		}
	}()
	go func() {
		defer close(out)
		var zero T
		for s := range queue {
			<-s.done
			v := s.v
			s.v = zero
			out <- v
			<-slots
		}
	}()
	return out
}

// Serial runs fn on each value of in, one at a time, and passes it on;
// the output holds depth values.
func Serial[T any](in <-chan T, depth int, fn func(T)) <-chan T {
	out := make(chan T, max(depth, 0))
	go func() {
		defer close(out)
		for v := range in {
			fn(v)
			out <- v
		}
	}()
	return out
}
