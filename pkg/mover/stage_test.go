package mover

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Ordered keeps exactly depth values in its works when the work is slower
// than the feed, and passes them on in the order they came, whatever the
// order the work ends in. (Its predecessor in pkg/dlq held depth+1: the
// sweep ran 2 rows of direct gets where it meant 1, 5 where it meant 4.)
func TestOrderedDepth(t *testing.T) {
	for _, depth := range []int{1, 2, 4, 16} {
		const total = 100
		in := make(chan int)
		var inWorks, peak atomic.Int32
		starts := make(chan func(), total)
		out := Ordered(in, depth, func(v int, done func()) {
			n := inWorks.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			starts <- func() { inWorks.Add(-1); done() }
		})
		go func() {
			for i := range total {
				in <- i
			}
			close(in)
		}()
		next := 0
		for next < total {
			// The work ends only when the test says so, once the stage
			// has started as many as it may; newest first, to mix the
			// order of the dones.
			batch := make([]func(), min(depth, total-next))
			for i := range batch {
				batch[i] = <-starts
			}
			for range 100 {
				runtime.Gosched() // a stage that takes one more has the time to
			}
			for i := len(batch) - 1; i >= 0; i-- {
				batch[i]()
			}
			for range batch {
				if v := <-out; v != next {
					t.Fatalf("depth %d: got %d, want %d (out of order)", depth, v, next)
				}
				next++
			}
		}
		if _, ok := <-out; ok {
			t.Fatalf("depth %d: output not closed", depth)
		}
		if got := int(peak.Load()); got != depth {
			t.Errorf("depth %d: peak of %d values in the works", depth, got)
		}
	}
}

// Serial passes every value on, in order, after fn.
func TestSerialOrder(t *testing.T) {
	in := make(chan int, 10)
	for i := range 10 {
		in <- i
	}
	close(in)
	sum := 0
	out := Serial(in, 2, func(v int) { sum += v })
	want := 0
	for v := range out {
		if v != want {
			t.Fatalf("got %d, want %d", v, want)
		}
		want++
	}
	if want != 10 || sum != 45 {
		t.Fatalf("passed %d values, sum %d", want, sum)
	}
}

// Ordered costs no allocation per value: its slots and their dones are
// made once, when the stage starts.
func TestOrderedAllocatesNothingPerValue(t *testing.T) {
	const total = 20000
	run := func(n int) uint64 {
		in := make(chan int, 64)
		out := Ordered(in, 8, func(v int, done func()) { done() })
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		go func() {
			for i := range n {
				in <- i
			}
			close(in)
		}()
		next := 0
		for v := range out {
			if v != next {
				t.Fatalf("got %d, want %d", v, next)
			}
			next++
		}
		runtime.ReadMemStats(&after)
		if next != n {
			t.Fatalf("passed %d values, want %d", next, n)
		}
		return after.Mallocs - before.Mallocs
	}
	run(100) // warm up
	if got := run(total); got > total/100 {
		t.Errorf("%d allocations for %d values through Ordered", got, total)
	}
}
