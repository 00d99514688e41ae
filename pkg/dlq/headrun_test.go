package dlq

import (
	"fmt"
	"strings"
	"testing"
)

// batch makes a fetched batch: a number is a dead message at that stream
// sequence, "i" an ignored advisory, "dN" a duplicate advisory of N.
func batch(s *sweeper, specs ...string) []*item {
	var items []*item
	for _, spec := range specs {
		it := &item{}
		switch {
		case spec == "i":
			it.pass = passIgnored
		case strings.HasPrefix(spec, "d"):
			it.pass = passDuplicate
			_, _ = fmt.Sscan(spec[1:], &it.adv.StreamSeq)
		default:
			_, _ = fmt.Sscan(spec, &it.adv.StreamSeq)
			if !s.claim(it) {
				it.pass = passDuplicate
			}
		}
		items = append(items, it)
	}
	return items
}

// describe prints the batch in its order: seq, then "<after" for a linked
// one and "|" where a row ends.
func describe(items []*item) string {
	var b strings.Builder
	for _, it := range items {
		switch it.pass {
		case passIgnored:
			b.WriteString("i ")
			continue
		case passDuplicate:
			fmt.Fprintf(&b, "d%d ", it.adv.StreamSeq)
			continue
		}
		fmt.Fprintf(&b, "%d", it.adv.StreamSeq)
		if it.linked {
			fmt.Fprintf(&b, "<%d", it.after)
		}
		if it.rowEnd {
			b.WriteString("|")
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

func TestArrange(t *testing.T) {
	s := &sweeper{seen: map[uint64]*outcome{}, linking: true}
	s.headRun.Store(true)

	// Sorted by sequence, ignored first, a duplicate after the advisory it
	// repeats; linked in order from the stream's start; rows end where the
	// next sequence is not one more.
	b1 := batch(s, "5", "i", "3", "4", "d4", "1", "9")
	s.arrange(b1)
	if got, want := describe(b1), "i 1<0| 3<1 4<3 d4 5<4| 9<5|"; got != want {
		t.Errorf("batch 1: %q, want %q", got, want)
	}

	// The next batch goes on from the last one linked.
	b2 := batch(s, "11", "10")
	s.arrange(b2)
	if got, want := describe(b2), "10<9 11<10|"; got != want {
		t.Errorf("batch 2: %q, want %q", got, want)
	}

	// A dead message not after the last one linked ends the chain, for
	// this batch and every later one.
	b3 := batch(s, "12", "7", "13")
	s.arrange(b3)
	if got, want := describe(b3), "7 12 13"; got != want {
		t.Errorf("batch 3: %q, want %q", got, want)
	}
	b4 := batch(s, "14")
	s.arrange(b4)
	if got, want := describe(b4), "14"; got != want {
		t.Errorf("batch 4: %q, want %q", got, want)
	}

	// So does the end the pipeline found (chainEnded), and a sweep whose
	// head run is off (a dry run, deny_purge, limits without
	// --delete-source) links nothing.
	for _, off := range []func(*sweeper){
		func(s *sweeper) { s.chainEnded.Store(true) },
		func(s *sweeper) { s.headRun.Store(false) },
	} {
		s := &sweeper{seen: map[uint64]*outcome{}, linking: true}
		s.headRun.Store(true)
		off(s)
		b := batch(s, "1", "2")
		s.arrange(b)
		if got, want := describe(b), "1 2"; got != want {
			t.Errorf("head run off: %q, want %q", got, want)
		}
	}
}
