package kv

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
)

// maxLCSCells bounds the work of aligning two arrays; longer arrays are
// compared element by element.
const maxLCSCells = 1 << 20

// DiffJSON compares two decoded JSON documents (as decoded with UseNumber)
// and returns the changes by path, objects' keys in sorted order. Arrays are
// aligned on their longest common subsequence, so that inserting an element
// reports one add rather than a change to every element after it.
func DiffJSON(before, after any) []Change {
	var out []Change
	diffValue("", before, after, &out)
	return out
}

func diffValue(path string, before, after any, out *[]Change) {
	switch b := before.(type) {
	case map[string]any:
		if a, ok := after.(map[string]any); ok {
			diffObjects(path, b, a, out)
			return
		}
	case []any:
		if a, ok := after.([]any); ok {
			diffArrays(path, b, a, out)
			return
		}
	}
	if !equalJSON(before, after) {
		*out = append(*out, Change{Path: displayPath(path), Op: ChangeUpdate, Before: before, After: after})
	}
}

func diffObjects(path string, before, after map[string]any, out *[]Change) {
	keys := make([]string, 0, len(before)+len(after))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := keyPath(path, k)
		bv, inBefore := before[k]
		av, inAfter := after[k]
		switch {
		case !inBefore:
			*out = append(*out, Change{Path: displayPath(p), Op: ChangeAdd, After: av})
		case !inAfter:
			*out = append(*out, Change{Path: displayPath(p), Op: ChangeRemove, Before: bv})
		default:
			diffValue(p, bv, av, out)
		}
	}
}

func diffArrays(path string, before, after []any, out *[]Change) {
	if len(before) == len(after) || len(before)*len(after) > maxLCSCells {
		n := min(len(before), len(after))
		for i := 0; i < n; i++ {
			diffValue(indexPath(path, i), before[i], after[i], out)
		}
		for i := n; i < len(before); i++ {
			*out = append(*out, Change{Path: displayPath(indexPath(path, i)), Op: ChangeRemove, Before: before[i]})
		}
		for i := n; i < len(after); i++ {
			*out = append(*out, Change{Path: displayPath(indexPath(path, i)), Op: ChangeAdd, After: after[i]})
		}
		return
	}
	bk, ak := canonicalAll(before), canonicalAll(after)
	// lcs[i][j] is the length of the LCS of bk[i:] and ak[j:].
	lcs := make([][]int, len(bk)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(ak)+1)
	}
	for i := len(bk) - 1; i >= 0; i-- {
		for j := len(ak) - 1; j >= 0; j-- {
			if bk[i] == ak[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	// Walk the alignment; between two matches, removed and added elements
	// pair up as changes (so an edited element shows its inner diff) and
	// the rest are plain removes or adds.
	var removed, added []int
	flush := func() {
		n := min(len(removed), len(added))
		for k := 0; k < n; k++ {
			diffValue(indexPath(path, added[k]), before[removed[k]], after[added[k]], out)
		}
		for _, i := range removed[n:] {
			*out = append(*out, Change{Path: displayPath(indexPath(path, i)), Op: ChangeRemove, Before: before[i]})
		}
		for _, j := range added[n:] {
			*out = append(*out, Change{Path: displayPath(indexPath(path, j)), Op: ChangeAdd, After: after[j]})
		}
		removed, added = removed[:0], added[:0]
	}
	i, j := 0, 0
	for i < len(bk) || j < len(ak) {
		switch {
		case i < len(bk) && j < len(ak) && bk[i] == ak[j]:
			flush()
			i++
			j++
		case j >= len(ak) || i < len(bk) && lcs[i+1][j] >= lcs[i][j+1]:
			removed = append(removed, i)
			i++
		default:
			added = append(added, j)
			j++
		}
	}
	flush()
}

// canonicalAll encodes each element canonically (encoding/json sorts
// object keys) so that equal elements compare equal as strings.
func canonicalAll(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		data, err := json.Marshal(normaliseForCompare(v))
		if err != nil {
			out[i] = "\x00" + strconv.Itoa(i) // never equal to anything else
			continue
		}
		out[i] = string(data)
	}
	return out
}

// normaliseForCompare rewrites numbers to one spelling per value (1.0 and 1
// are the same number).
func normaliseForCompare(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normaliseForCompare(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normaliseForCompare(e)
		}
		return s
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok {
			return json.Number(r.RatString())
		}
	}
	return v
}

// equalJSON compares decoded JSON values; numbers compare by value.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		// Most numbers are integers: compare them without big.Rat.
		if ix, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			if iy, err := strconv.ParseInt(string(y), 10, 64); err == nil {
				return ix == iy
			}
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	case nil:
		return b == nil
	}
	return a == b
}

// isIdentifier reports whether a key can follow a dot in a jq path as is.
func isIdentifier(key string) bool {
	if key == "" {
		return false
	}
	for i, c := range key {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// keyPath and indexPath build jq paths: .spec.replicas, .items[2],
// ."content-type"; the root is the empty string until displayed.
func keyPath(path, key string) string {
	if isIdentifier(key) {
		return path + "." + key
	}
	quoted, _ := json.Marshal(key)
	return path + "." + string(quoted)
}

func indexPath(path string, i int) string {
	if path == "" {
		return ".[" + strconv.Itoa(i) + "]"
	}
	return path + "[" + strconv.Itoa(i) + "]"
}

func displayPath(path string) string {
	if path == "" {
		return "."
	}
	return path
}
