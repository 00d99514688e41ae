package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

func mustDiff(t *testing.T, before, after []byte, beforeName, afterName string) []Change {
	t.Helper()
	changes, err := Diff(context.Background(), before, after, beforeName, afterName)
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

// randomLines makes n lines from a small alphabet, so that lines repeat
// and many alignments are possible.
func randomLines(r *rand.Rand, n, alphabet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("l%d\n", r.IntN(alphabet))
	}
	return out
}

// lcsLength is the textbook quadratic reference.
func lcsLength(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// matchLines pairs equal lines, in order, and finds as many as the
// quadratic longest-common-subsequence reference: the diff is minimal.
func TestMatchLinesIsALongestCommonSubsequence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 2000; trial++ {
		a := randomLines(r, r.IntN(40), 1+r.IntN(8))
		b := randomLines(r, r.IntN(40), 1+r.IntN(8))
		if trial%3 == 0 {
			// Mostly equal texts with a few edits, the usual case.
			b = append([]string(nil), a...)
			for k := r.IntN(4); k >= 0 && len(b) > 0; k-- {
				b[r.IntN(len(b))] = fmt.Sprintf("new%d\n", r.IntN(3))
			}
		}
		matches, err := matchLines(context.Background(), a, b)
		if err != nil {
			t.Fatal(err)
		}
		prevA, prevB := -1, -1
		for _, m := range matches {
			if m.a <= prevA || m.b <= prevB || a[m.a] != b[m.b] {
				t.Fatalf("a=%q b=%q: bad match %+v in %+v", a, b, m, matches)
			}
			prevA, prevB = m.a, m.b
		}
		if want := lcsLength(a, b); len(matches) != want {
			t.Fatalf("a=%q b=%q: %d matches, longest common subsequence has %d", a, b, len(matches), want)
		}
	}
}

// Past the cost bound the search settles for a correct, coarser diff.
func TestMatchLinesPastTheCostBound(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 2000; trial++ {
		a := randomLines(r, r.IntN(60), 1+r.IntN(8))
		b := randomLines(r, r.IntN(60), 1+r.IntN(8))
		s := newLCS(context.Background(), a, b)
		s.tooExpensive = 1 + r.IntN(4)
		if len(s.a) > 0 && len(s.b) > 0 {
			if err := s.compare(0, len(s.a), 0, len(s.b)); err != nil {
				t.Fatal(err)
			}
		}
		prevA, prevB := -1, -1
		for _, m := range s.matches {
			if m.a <= prevA || m.b <= prevB || a[m.a] != b[m.b] {
				t.Fatalf("a=%q b=%q: bad match %+v in %+v", a, b, m, s.matches)
			}
			prevA, prevB = m.a, m.b
		}
		if lcs := lcsLength(a, b); lcs > 0 && len(s.matches) == 0 {
			t.Fatalf("a=%q b=%q: no match, longest common subsequence has %d", a, b, lcs)
		}
	}
}

// formatUnified writes hunks exactly as difflib does for the same
// alignment: the alignment is taken from difflib's own matcher.
func TestFormatUnifiedMatchesDifflib(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 2000; trial++ {
		a := randomLines(r, r.IntN(60), 1+r.IntN(30))
		b := randomLines(r, r.IntN(60), 1+r.IntN(30))
		if trial%2 == 0 {
			b = append([]string(nil), a...)
			for k := r.IntN(5); k >= 0 && len(b) > 0; k-- {
				i := r.IntN(len(b))
				switch r.IntN(3) {
				case 0:
					b[i] = "changed\n"
				case 1:
					b = append(b[:i], b[i+1:]...)
				default:
					b = append(b[:i], append([]string{"inserted\n"}, b[i:]...)...)
				}
			}
		}
		var matches []match
		for _, op := range difflib.NewMatcher(a, b).GetOpCodes() {
			if op.Tag == 'e' {
				for k := 0; k < op.I2-op.I1; k++ {
					matches = append(matches, match{op.I1 + k, op.J1 + k})
				}
			}
		}
		want, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a, B: b, FromFile: "x", ToFile: "y", Context: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := formatUnified(a, b, matches, "x", "y"); got != want {
			t.Fatalf("a=%q b=%q:\ngot:\n%s\nwant:\n%s", a, b, got, want)
		}
	}
}

// A diff stops when its context ends.
func TestUnifiedStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := strings.Repeat("a\nb\n", 100)
	after := strings.Repeat("b\na\n", 100)
	if _, err := unified(ctx, before, after, "x", "y"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := Diff(ctx, []byte(before), []byte(after), "x", "y"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Diff: err = %v, want context.Canceled", err)
	}
}

// bigText is a ~1 MiB config-like text of n lines; change picks the lines
// that read differently.
func bigText(n int, change func(i int) bool) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if change(i) {
			fmt.Fprintf(&b, "setting.%06d = changed value %d\n", i, i*7)
		} else {
			fmt.Fprintf(&b, "setting.%06d = value %d\n", i, i)
		}
	}
	return b.String()
}

// Big texts diff in linear time: the case (every other line
// changed) and every line changed are not quadratic.
func TestUnifiedBigTexts(t *testing.T) {
	const n = 40000 // ~1 MiB
	before := bigText(n, func(int) bool { return false })
	for _, tc := range []struct {
		name    string
		change  func(int) bool
		changed int
	}{
		{"every line", func(int) bool { return true }, n},
		{"every other line", func(i int) bool { return i%2 == 1 }, n / 2},
		{"one line", func(i int) bool { return i == n/2 }, 1},
	} {
		text, err := unified(context.Background(), before, bigText(n, tc.change), "x", "y")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(text, "\n+setting"); got != tc.changed {
			t.Errorf("%s: %d lines added, want %d", tc.name, got, tc.changed)
		}
	}
}

// BenchmarkUnified diffs a 1 MiB text (40,000 lines) reversed, and with
// every line, every other line and one line changed; "old-difflib" is the implementation this
// replaced (go-difflib's SequenceMatcher), on a 64 KiB text because it is
// quadratic, next to the new one on the same text.
func BenchmarkUnified(b *testing.B) {
	const n = 40000
	before := bigText(n, func(int) bool { return false })
	cases := []struct {
		name   string
		change func(int) bool
	}{
		{"1MiB-every-line", func(int) bool { return true }},
		{"1MiB-every-other-line", func(i int) bool { return i%2 == 1 }},
		{"1MiB-one-line", func(i int) bool { return i == n/2 }},
	}
	reversed := lines(before)
	slices.Reverse(reversed)
	b.Run("1MiB-reversed", func(b *testing.B) {
		// The worst case: lines moved, not edited.
		after := strings.Join(reversed, "")
		for i := 0; i < b.N; i++ {
			if _, err := unified(context.Background(), before, after, "x", "y"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range cases {
		after := bigText(n, c.change)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(before) + len(after)))
			for i := 0; i < b.N; i++ {
				if _, err := unified(context.Background(), before, after, "x", "y"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	const small = 2500 // 64 KiB
	smallBefore := bigText(small, func(int) bool { return false })
	smallAfter := bigText(small, func(i int) bool { return i%2 == 1 })
	b.Run("64KiB-every-other-line/new", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := unified(context.Background(), smallBefore, smallAfter, "x", "y"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("64KiB-every-other-line/old-difflib", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: lines(smallBefore), B: lines(smallAfter), FromFile: "x", ToFile: "y", Context: 3,
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
