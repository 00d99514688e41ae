package migrate

import "testing"

func TestCompareHashes(t *testing.T) {
	hs := func(pairs ...uint64) []msgHash {
		var out []msgHash
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, msgHash{Seq: pairs[i], Hash: pairs[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		src, dst []msgHash
		exact    bool
		seq      uint64
		what     string
	}{
		{"same", hs(1, 10, 2, 20), hs(1, 10, 2, 20), true, 0, ""},
		{"missing", hs(1, 10, 2, 20), hs(1, 10), false, 2, "seq 2 is missing"},
		{"missing exact", hs(1, 10, 2, 20), hs(2, 20), true, 1, "seq 1 is missing"},
		{"changed", hs(1, 10, 2, 20), hs(1, 10, 2, 21), false, 2, "seq 2 has another subject, header, payload or timestamp"},
		// Live: a message only in the target was deleted from the source
		// since it was copied; frozen, it is a difference.
		{"deleted since copied", hs(1, 10, 3, 30), hs(1, 10, 2, 20, 3, 30), false, 0, ""},
		{"target only, exact", hs(1, 10, 3, 30), hs(1, 10, 2, 20, 3, 30), true, 2, "seq 2 is not in the source"},
		{"target longer, exact", hs(1, 10), hs(1, 10, 2, 20), true, 2, "seq 2 is not in the source"},
		{"target longer, live", hs(1, 10), hs(1, 10, 2, 20), false, 0, ""},
	} {
		seq, what, ok := compareHashes(c.src, c.dst, c.exact)
		if ok != (c.what == "") || seq != c.seq || what != c.what {
			t.Errorf("%s: got %d %q %v, want %d %q", c.name, seq, what, ok, c.seq, c.what)
		}
	}
}
