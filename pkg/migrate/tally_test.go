package migrate

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// seqSet keeps sequences in pages, counts a range of them, and forgets
// those from a sequence on; the tally rolls back to a mark.
func TestSeqSetAndTally(t *testing.T) {
	var s seqSet
	for _, seq := range []uint64{1, 2, 63, 64, 65535, 65536, 65537, 1 << 40} {
		s.add(seq)
	}
	for _, c := range []struct{ first, last, want uint64 }{
		{1, 1 << 41, 8}, {2, 64, 3}, {64, 64, 1}, {3, 62, 0}, {65535, 65536, 2}, {65537, 1<<40 - 1, 1}, {1 << 40, 1 << 40, 1},
	} {
		if got := s.count(c.first, c.last); got != c.want {
			t.Errorf("count(%d, %d) = %d, want %d", c.first, c.last, got, c.want)
		}
	}
	s.dropFrom(64)
	if !s.has(63) || s.has(64) || s.has(65536) || s.has(1<<40) || s.count(1, 1<<41) != 3 {
		t.Fatalf("after dropFrom(64): count %d", s.count(1, 1<<41))
	}

	a, b := newTally(), newTally()
	for seq := uint64(1); seq <= 100; seq++ {
		a.add(msgHash{Seq: seq, Hash: seq * 7})
		b.add(msgHash{Seq: seq, Hash: seq * 7})
	}
	mk := a.mark(101)
	for seq := uint64(101); seq <= 200; seq++ {
		a.add(msgHash{Seq: seq, Hash: 1})
	}
	a.rollback(mk)
	if a.digest() != b.digest() || a.n != 100 || a.seen.has(101) || !a.seen.has(100) {
		t.Fatalf("rolled back: %s %d, want %s 100", a.digest(), a.n, b.digest())
	}
	// Held: the compared messages a stream holds now.
	if n := a.held(97, 2, 100, map[uint64]bool{5: true, 6: true}); n != 97 {
		t.Errorf("held = %d, want 97", n)
	}
}

// firstDifference names the first sequence one stream holds and the other
// does not.
func TestFirstDifference(t *testing.T) {
	st := func(msgs, first, last uint64) jetstream.StreamState {
		return jetstream.StreamState{Msgs: msgs, FirstSeq: first, LastSeq: last}
	}
	del := func(seqs ...uint64) map[uint64]bool {
		m := map[uint64]bool{}
		for _, s := range seqs {
			m[s] = true
		}
		return m
	}
	for _, c := range []struct {
		name       string
		s          jetstream.StreamState
		sdel       map[uint64]bool
		t          jetstream.StreamState
		tdel       map[uint64]bool
		want       string
		wantDiffer bool
	}{
		{"same", st(3, 1, 4), del(2), st(3, 1, 4), del(2), "", false},
		{"deleted from the target", st(50, 1, 50), nil, st(49, 1, 50), del(10), "seq 10 is missing", true},
		{"only in the target", st(3, 1, 4), del(2), st(4, 1, 4), nil, "seq 2 is not in the source", true},
		{"target shorter", st(5, 1, 5), nil, st(3, 1, 3), nil, "seq 4 is missing", true},
		{"target longer past a gap", st(3, 1, 3), nil, st(4, 1, 5), del(4), "seq 5 is not in the source", true},
		{"target starts later", st(5, 1, 5), nil, st(3, 3, 5), nil, "seq 1 is missing", true},
		{"target empty", st(2, 7, 8), nil, st(0, 9, 8), nil, "seq 7 is missing", true},
	} {
		_, what, ok := firstDifference(c.s, c.sdel, c.t, c.tdel)
		if ok != c.wantDiffer || what != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, what, ok, c.want)
		}
	}
}
