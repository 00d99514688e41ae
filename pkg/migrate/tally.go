package migrate

// What a move keeps of its verification: not every message's hash (16 B a
// message on each side, 144-154 MiB at 1,000,000 messages), but a running
// digest, a count, and which sequences were compared, one bit each.

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math/bits"
	"slices"
)

// tally is the verification so far: a SHA-256 over the sequence and hash
// of each message compared equal in the source and the target, in the
// order compared (sequence order, but for the few read again from the
// leaders at the end), how many, and which sequences (seen).
type tally struct {
	sum  hash.Hash
	n    uint64
	seen seqSet
}

func newTally() *tally { return &tally{sum: sha256.New()} }

// add counts a message compared equal on both sides.
func (t *tally) add(h msgHash) {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], h.Seq)
	binary.BigEndian.PutUint64(b[8:], h.Hash)
	_, _ = t.sum.Write(b[:])
	t.n++
	t.seen.add(h.Seq)
}

// digest is the hex SHA-256 so far.
func (t *tally) digest() string { return hex.EncodeToString(t.sum.Sum(nil)) }

// tallyMark is a tally as it was, for rollback.
type tallyMark struct {
	sum  []byte
	n    uint64
	from uint64
}

// mark is the tally now, before a live round compares from seq from on.
func (t *tally) mark(from uint64) tallyMark {
	b, _ := t.sum.(encoding.BinaryMarshaler).MarshalBinary()
	return tallyMark{sum: b, n: t.n, from: from}
}

// rollback forgets what was added since mk: a live round that failed is
// run again from its start.
func (t *tally) rollback(mk tallyMark) {
	_ = t.sum.(encoding.BinaryUnmarshaler).UnmarshalBinary(mk.sum)
	t.n = mk.n
	t.seen.dropFrom(mk.from)
}

// held counts the messages compared that a stream with state first..last
// (msgs of them) and deleted sequences holds.
func (t *tally) held(msgs, first, last uint64, deleted map[uint64]bool) uint64 {
	if msgs == 0 {
		return 0
	}
	n := t.seen.count(first, last)
	for d := range deleted {
		if d >= first && d <= last && t.seen.has(d) {
			n--
		}
	}
	return n
}

// seqSet is a set of stream sequences: a bitmap in pages of 65,536
// sequences, made only where a sequence is (a stream whose messages are
// far apart costs a page each, not a bit for each sequence between).
type seqSet struct {
	pages map[uint64]*seqPage
}

const (
	pageShift = 16
	pageWords = 1 << pageShift / 64
)

type seqPage [pageWords]uint64

func (s *seqSet) add(seq uint64) {
	if s.pages == nil {
		s.pages = map[uint64]*seqPage{}
	}
	p := s.pages[seq>>pageShift]
	if p == nil {
		p = new(seqPage)
		s.pages[seq>>pageShift] = p
	}
	i := seq & (1<<pageShift - 1)
	p[i/64] |= 1 << (i % 64)
}

func (s *seqSet) has(seq uint64) bool {
	p := s.pages[seq>>pageShift]
	if p == nil {
		return false
	}
	i := seq & (1<<pageShift - 1)
	return p[i/64]&(1<<(i%64)) != 0
}

// dropFrom removes every sequence from seq on.
func (s *seqSet) dropFrom(seq uint64) {
	for k, p := range s.pages {
		lo := k << pageShift
		switch {
		case lo >= seq:
			delete(s.pages, k)
		case lo+1<<pageShift > seq:
			i := seq - lo
			p[i/64] &= 1<<(i%64) - 1
			for w := i/64 + 1; w < pageWords; w++ {
				p[w] = 0
			}
		}
	}
}

// count is how many sequences of first..last the set holds.
func (s *seqSet) count(first, last uint64) uint64 {
	if last < first {
		return 0
	}
	keys := make([]uint64, 0, len(s.pages))
	for k := range s.pages {
		if k >= first>>pageShift && k <= last>>pageShift {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var n uint64
	for _, k := range keys {
		p := s.pages[k]
		lo := k << pageShift
		a, b := max(first, lo)-lo, min(last, lo+1<<pageShift-1)-lo
		for w := a / 64; w <= b/64; w++ {
			word := p[w]
			if w == a/64 {
				word &^= 1<<(a%64) - 1
			}
			if w == b/64 && b%64 < 63 {
				word &= 1<<(b%64+1) - 1
			}
			n += uint64(bits.OnesCount64(word))
		}
	}
	return n
}
