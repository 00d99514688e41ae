// Package suggest finds the name a user probably meant: plan's loader for
// a misspelt field or value (Closest), the commands for a stream that is
// not found (Name).
// It is a leaf: it imports nothing of jetctl's.
package suggest

import "strings"

// Closest returns the name in names closest to s, if it is close enough
// to be a likely typo (fewer edits than half of s, plus two), comparing
// without case; or the name s spells without its separators ("maxage" for
// max_age). "" when none is.
func Closest(s string, names []string) string {
	lower := strings.ToLower(s)
	best, bestDist := "", len(s)/2+2
	for _, n := range names {
		if d := levenshtein(lower, strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best == "" {
		flat := strings.NewReplacer("_", "", "-", "").Replace(lower)
		for _, n := range names {
			if strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(n)) == flat {
				return n
			}
		}
	}
	return best
}

// Name returns the name in names that s probably misspells: a stream's,
// a consumer's. Names are short and often alike (JOBS, NOPE), so it is
// stricter than Closest: at most a third of s's letters edited (at least
// one), a swap of two neighbours counting as one edit, case ignored. ""
// when none is that close.
func Name(s string, names []string) string {
	lower := strings.ToLower(s)
	best, bestDist := "", max(1, len(s)/3)+1
	for _, n := range names {
		if d := osa(lower, strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// osa is the optimal string alignment distance: Levenshtein's, with the
// swap of two neighbouring letters as one edit.
func osa(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
