package kv

import (
	"context"
	"fmt"
	"strings"
)

// unifiedContext is the number of unchanged lines around each hunk.
const unifiedContext = 3

// unified is the unified diff, line by line with three lines of context,
// of two texts, in the format of diff -u. Its cost is linear in the size
// of the texts plus the Myers O(ND) search over the lines found on both
// sides; ctx stops it.
func unified(ctx context.Context, before, after, beforeName, afterName string) (string, error) {
	a, b := lines(before), lines(after)
	matches, err := matchLines(ctx, a, b)
	if err != nil {
		return "", err
	}
	text := formatUnified(a, b, matches, beforeName, afterName)
	if text == "" {
		// Only trailing newlines differ: the lines are equal.
		return fmt.Sprintf("--- %s\n+++ %s\n@@ trailing newline differs @@\n", beforeName, afterName), nil
	}
	return text, nil
}

// match pairs line A[a] with the equal line B[b].
type match struct{ a, b int }

// matchLines finds a longest common subsequence of the lines of a and b,
// as the pairs of equal lines, in order. As GNU diff and git do, lines
// found on one side only are set aside first: no common subsequence can
// use them, so the result is still a longest one, and a text with every
// line changed costs no search at all. The remaining lines go to Myers'
// linear-space diff (lcs). Its cost grows with the edit distance among
// them: lines moved around rather than edited cost the most (a 1 MiB
// text reversed takes seconds), and ctx stops it.
func matchLines(ctx context.Context, a, b []string) ([]match, error) {
	var matches []match
	// Common prefix and suffix: most edits touch a few lines.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		matches = append(matches, match{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	middle, err := matchMiddle(ctx, a[pre:len(a)-suf], b[pre:len(b)-suf])
	if err != nil {
		return nil, err
	}
	for _, m := range middle {
		matches = append(matches, match{pre + m.a, pre + m.b})
	}
	for i := suf; i > 0; i-- {
		matches = append(matches, match{len(a) - i, len(b) - i})
	}
	return matches, nil
}

func matchMiddle(ctx context.Context, a, b []string) ([]match, error) {
	s := newLCS(ctx, a, b)
	if len(s.a) == 0 || len(s.b) == 0 {
		return nil, nil
	}
	if err := s.compare(0, len(s.a), 0, len(s.b)); err != nil {
		return nil, err
	}
	return s.matches, nil
}

// newLCS sets up the search over the lines found on both sides.
func newLCS(ctx context.Context, a, b []string) *lcs {
	s := &lcs{ctx: ctx}
	inB := make(map[string]struct{}, len(b))
	for _, l := range b {
		inB[l] = struct{}{}
	}
	ids := make(map[string]int, len(a))
	for i, l := range a {
		if _, ok := inB[l]; !ok {
			continue
		}
		id, ok := ids[l]
		if !ok {
			id = len(ids)
			ids[l] = id
		}
		s.keptA = append(s.keptA, i)
		s.a = append(s.a, id)
	}
	for i, l := range b {
		if id, ok := ids[l]; ok {
			s.keptB = append(s.keptB, i)
			s.b = append(s.b, id)
		}
	}
	size := len(s.a) + len(s.b) + 4
	s.vf, s.vb = make([]int, size), make([]int, size)
	s.offset = size / 2
	s.tooExpensive = tooExpensive(len(s.a) + len(s.b))
	return s
}

// tooExpensive is GNU diff's bound on a middle snake search over n
// lines: about the square root of n, and at least 4096 steps, so that
// only texts whose lines were moved around far more than edited get a
// diff that is not minimal.
func tooExpensive(n int) int {
	c := 1
	for ; n != 0; n >>= 2 {
		c <<= 1
	}
	return max(c, 4096)
}

// lcs is Myers' linear-space O(ND) longest common subsequence ("An O(ND)
// Difference Algorithm and Its Variations", 1986, section 4b) over line
// numbers: find the middle snake of the shortest edit path, recurse on
// both sides of it. It is written here because the diff libraries at hand
// do not fit: go-difflib is Python's SequenceMatcher (quadratic, the
// cause of the issue), and sergi/go-diff cannot be stopped by a context,
// only by a wall-clock deadline that makes its output depend on the
// machine's load, and with a deadline its half-match speed-up gives
// diffs that are not minimal. A test holds this to the quadratic
// reference on random inputs.
type lcs struct {
	ctx          context.Context
	a, b         []int // line numbers of the lines kept
	keptA, keptB []int // their indexes in the texts
	vf, vb       []int // furthest x on each diagonal, forward and backward
	offset       int   // index of diagonal 0 in vf and vb
	// tooExpensive is the number of steps after which a middle snake
	// search settles for a good split instead of the best.
	tooExpensive int
	matches      []match
}

// compare appends the matches of a longest common subsequence of
// a[a0:a1] and b[b0:b1].
func (s *lcs) compare(a0, a1, b0, b1 int) error {
	for a0 < a1 && b0 < b1 && s.a[a0] == s.b[b0] {
		s.matches = append(s.matches, match{s.keptA[a0], s.keptB[b0]})
		a0, b0 = a0+1, b0+1
	}
	suffix := 0
	for a1 > a0 && b1 > b0 && s.a[a1-1] == s.b[b1-1] {
		a1, b1, suffix = a1-1, b1-1, suffix+1
	}
	// Without a common prefix or suffix, two non-empty sides are at
	// least two edits apart, so each half of the split is smaller.
	if a0 < a1 && b0 < b1 {
		x, y, u, v, found, err := s.middleSnake(a0, a1, b0, b1)
		if err != nil {
			return err
		}
		// A split at either end without a snake would not shrink the
		// problem: it cannot happen, and this keeps the recursion finite.
		if u == x && ((x == a0 && y == b0) || (x == a1 && y == b1)) {
			found = false
		}
		if !found {
			for i := 0; i < suffix; i++ {
				s.matches = append(s.matches, match{s.keptA[a1+i], s.keptB[b1+i]})
			}
			return nil
		}
		if err := s.compare(a0, x, b0, y); err != nil {
			return err
		}
		for ; x < u; x, y = x+1, y+1 {
			s.matches = append(s.matches, match{s.keptA[x], s.keptB[y]})
		}
		if err := s.compare(u, a1, v, b1); err != nil {
			return err
		}
	}
	for i := 0; i < suffix; i++ {
		s.matches = append(s.matches, match{s.keptA[a1+i], s.keptB[b1+i]})
	}
	return nil
}

// middleSnake finds the snake in the middle of a shortest edit path
// from (a0, b0) to (a1, b1): it runs from (x, y) to (u, v). found is
// false when the two sides have no line in common. Past tooExpensive
// steps it gives up on the shortest path, as GNU diff does, and returns
// the point furthest along either search, with no snake: the diff stays
// correct, no longer minimal.
func (s *lcs) middleSnake(a0, a1, b0, b1 int) (x, y, u, v int, found bool, err error) {
	n, m := a1-a0, b1-b0
	delta := n - m
	odd := delta&1 != 0
	maxD := (n + m + 1) / 2
	vf, vb, off := s.vf, s.vb, s.offset
	for k := -maxD - 1; k <= maxD+1; k++ {
		vf[off+k], vb[off+k] = -1, -1
	}
	vf[off+1], vb[off+1] = 0, 0
	inRange := func(k int) bool { return k >= -maxD-1 && k <= maxD+1 }
	// Diagonals that ran off the grid are not walked again.
	fStart, fEnd, bStart, bEnd := 0, 0, 0, 0
	for d := 0; d < maxD; d++ {
		if err := s.ctx.Err(); err != nil {
			return 0, 0, 0, 0, false, err
		}
		// Forward: the furthest reaching d-path on each diagonal k = x-y.
		for k := -d + fStart; k <= d-fEnd; k += 2 {
			px := pathStart(vf, off, k, d)
			py := px - k
			sx, sy := px, py
			for px < n && py < m && s.a[a0+px] == s.b[b0+py] {
				px, py = px+1, py+1
			}
			vf[off+k] = px
			switch {
			case px > n:
				fEnd += 2
			case py > m:
				fStart += 2
			case odd:
				// Has the backward search come past px on this diagonal?
				if kb := delta - k; inRange(kb) && vb[off+kb] != -1 && px >= n-vb[off+kb] {
					return a0 + sx, b0 + sy, a0 + px, b0 + py, true, nil
				}
			}
		}
		// Backward from the end, in reversed coordinates: diagonal k here
		// is diagonal delta-k forward.
		for k := -d + bStart; k <= d-bEnd; k += 2 {
			px := pathStart(vb, off, k, d)
			py := px - k
			sx, sy := px, py
			for px < n && py < m && s.a[a1-1-px] == s.b[b1-1-py] {
				px, py = px+1, py+1
			}
			vb[off+k] = px
			switch {
			case px > n:
				bEnd += 2
			case py > m:
				bStart += 2
			case !odd:
				if kf := delta - k; inRange(kf) && vf[off+kf] != -1 && vf[off+kf] >= n-px {
					return a1 - px, b1 - py, a1 - sx, b1 - sy, true, nil
				}
			}
		}
		if d > 0 && d >= s.tooExpensive {
			x, y := s.furthest(n, m, d, fStart, fEnd, bStart, bEnd)
			return a0 + x, b0 + y, a0 + x, b0 + y, true, nil
		}
	}
	return 0, 0, 0, 0, false, nil
}

// pathStart is the x where the d-path on diagonal k starts, v holding
// the furthest x of each diagonal (from off): one step down from diagonal
// k+1 or right from diagonal k-1, whichever reached further. Forward and
// backward searches step alike; only their snakes and overlap tests
// mirror each other.
func pathStart(v []int, off, k, d int) int {
	if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
		return v[off+k+1]
	}
	return v[off+k-1] + 1
}

// furthest is the point that the forward or the backward search, after
// d steps, has taken furthest from its start (in x+y), in forward
// coordinates.
func (s *lcs) furthest(n, m, d, fStart, fEnd, bStart, bEnd int) (int, int) {
	best := func(v []int, kStart, kEnd int) (sum, x int) {
		sum = -1
		for k := -d + kStart; k <= d-kEnd; k += 2 {
			px := min(v[s.offset+k], n)
			py := px - k
			if py > m {
				px, py = m+k, m
			}
			if px+py > sum {
				sum, x = px+py, px
			}
		}
		return sum, x
	}
	fSum, fx := best(s.vf, fStart, fEnd)
	bSum, bx := best(s.vb, bStart, bEnd)
	if fSum >= bSum {
		return fx, fSum - fx
	}
	return n - bx, m - (bSum - bx)
}

// formatUnified writes the hunks of a diff given by its matched lines,
// as diff -u and Python's difflib do: hunks with up to three lines of
// context, joined when fewer than seven unchanged lines separate them,
// deletions before insertions. It is "" when every line matches.
func formatUnified(a, b []string, matches []match, beforeName, afterName string) string {
	if len(matches) == len(a) && len(matches) == len(b) {
		return ""
	}
	// Sentinel: the end of both texts matches.
	matches = append(matches, match{len(a), len(b)})
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", beforeName, afterName)

	// Walk the changes (gaps between runs of matches), grouping those
	// close enough to share a hunk.
	type change struct{ a0, a1, b0, b1 int } // A[a0:a1] replaced by B[b0:b1]
	var hunk []change
	flush := func() {
		if len(hunk) == 0 {
			return
		}
		first, last := hunk[0], hunk[len(hunk)-1]
		ctxBefore := min(unifiedContext, first.a0)
		ctxAfter := min(unifiedContext, len(a)-last.a1, len(b)-last.b1)
		a0, b0 := first.a0-ctxBefore, first.b0-ctxBefore
		a1, b1 := last.a1+ctxAfter, last.b1+ctxAfter
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", unifiedRange(a0, a1), unifiedRange(b0, b1))
		ai := a0
		for _, c := range hunk {
			for ; ai < c.a0; ai++ {
				out.WriteString(" " + a[ai])
			}
			for _, l := range a[c.a0:c.a1] {
				out.WriteString("-" + l)
			}
			for _, l := range b[c.b0:c.b1] {
				out.WriteString("+" + l)
			}
			ai = c.a1
		}
		for ; ai < a1; ai++ {
			out.WriteString(" " + a[ai])
		}
		hunk = hunk[:0]
	}
	prevA, prevB := 0, 0 // the next line after the last match
	for _, m := range matches {
		if m.a > prevA || m.b > prevB {
			c := change{prevA, m.a, prevB, m.b}
			if len(hunk) > 0 && c.a0-hunk[len(hunk)-1].a1 > 2*unifiedContext {
				flush()
			}
			hunk = append(hunk, c)
		}
		prevA, prevB = m.a+1, m.b+1
	}
	flush()
	return out.String()
}

// unifiedRange is a hunk's line range as diff -u writes it: 1-based
// start, and the length unless it is 1; an empty range names the line
// before it.
func unifiedRange(start, stop int) string {
	switch n := stop - start; n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	default:
		return fmt.Sprintf("%d,%d", start+1, n)
	}
}
