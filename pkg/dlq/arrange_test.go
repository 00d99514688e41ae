package dlq

import (
	"fmt"
	"strings"
	"testing"
)

// batch makes a fetched batch: a number is a dead message at that stream
// sequence, "i" an ignored advisory; a number seen before is a duplicate.
func batch(s *sweeper, specs ...string) []*item {
	var items []*item
	for _, spec := range specs {
		it := &item{}
		if spec == "i" {
			it.pass = passIgnored
		} else {
			_, _ = fmt.Sscan(spec, &it.adv.StreamSeq)
			if !s.claim(it) {
				it.pass = passDuplicate
			}
		}
		items = append(items, it)
	}
	return items
}

// describe prints a batch in its order: "i" for an ignored advisory, "dN"
// for a duplicate of N, N for a dead message, "|" where a row ends.
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
		if it.rowEnd {
			b.WriteString("|")
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

func TestArrange(t *testing.T) {
	s := &sweeper{seen: map[uint64]*outcome{}}
	// Ignored first, then by sequence with a duplicate after the advisory
	// it repeats; a row ends where the next sequence is not one more.
	b1 := batch(s, "5", "i", "3", "4", "4", "1", "9")
	s.arrange(b1)
	if got, want := describe(b1), "i 1| 3 4 d4 5| 9|"; got != want {
		t.Errorf("batch 1: %q, want %q", got, want)
	}
	b2 := batch(s, "11", "10", "7")
	s.arrange(b2)
	if got, want := describe(b2), "7| 10 11|"; got != want {
		t.Errorf("batch 2: %q, want %q", got, want)
	}
}
