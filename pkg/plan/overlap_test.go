package plan

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// validateOverlapsPairwise is validateOverlaps as it was before the
// subject index: every stream against every earlier one. It is the
// reference the index must agree with, problem for problem.
func (l *loader) validateOverlapsPairwise() {
	var streams []*Resource
	for _, r := range l.desired.Resources {
		if r.Kind != KindConsumer {
			streams = append(streams, r)
		}
	}
	for i, b := range streams {
		for _, a := range streams[:i] {
			if a.StreamName() == b.StreamName() {
				continue
			}
			bs := streamSubjects(b)
			for bi, bsub := range bs {
				for _, asub := range streamSubjects(a) {
					if validSubject(asub) && validSubject(bsub) && subjectsCollide(asub, bsub) {
						l.problemAt(b.at(fmt.Sprintf("subjects[%d]", bi)), "%s: subject %q overlaps %q of %s (%s)", b.Label(), bsub, asub, a.Label(), a.Pos)
					}
				}
			}
		}
	}
}

// randomSubject is a subject or filter over a small alphabet, so that
// overlaps are frequent; now and then an invalid one.
func randomSubject(r *rand.Rand) string {
	switch r.Intn(40) {
	case 0:
		return pick(r, "", "a..b", "a.>.b", "a b", "a*", ".a", "a.")
	case 1:
		return ">"
	}
	n := 1 + r.Intn(4)
	toks := make([]string, n)
	for i := range toks {
		toks[i] = pick(r, "a", "b", "c", "*", "a", "b")
	}
	if r.Intn(4) == 0 {
		toks[n-1] = ">"
	}
	return strings.Join(toks, ".")
}

// randomOverlapDesired declares streams (some without subjects, mirrors,
// some sharing a name), KV buckets and object stores (whose subjects are
// $KV.x.> and $O.x.*.>), with or without the positions of their subjects.
func randomOverlapDesired(r *rand.Rand) *Desired {
	d := &Desired{}
	n := r.Intn(30)
	for i := 0; i < n; i++ {
		res := &Resource{Pos: Pos{File: "p.yaml", Line: i + 1, Column: 3}, FieldPos: map[string]Pos{}}
		name := pick(r, "a", "b", "c", "S1", "S2", "S3", "S4", "S5", "S6")
		switch r.Intn(10) {
		case 0:
			res.Kind, res.Name = KindKV, name
			res.KeyValueConfig = &jetstream.KeyValueConfig{Bucket: name}
		case 1:
			res.Kind, res.Name = KindObjectStore, name
			res.ObjectStoreConfig = &jetstream.ObjectStoreConfig{Bucket: name}
		case 2:
			res.Kind, res.Name, res.Stream = KindConsumer, name, "S1"
			res.ConsumerConfig = &jetstream.ConsumerConfig{Name: name, FilterSubject: randomSubject(r)}
		default:
			res.Kind, res.Name = KindStream, name
			c := &jetstream.StreamConfig{Name: name}
			switch r.Intn(8) {
			case 0: // no subjects: the name is the subject
			case 1:
				c.Mirror = &jetstream.StreamSource{Name: "S9"}
			default:
				for j := 0; j < 1+r.Intn(4); j++ {
					c.Subjects = append(c.Subjects, randomSubject(r))
				}
			}
			res.StreamConfig = c
			for j := range c.Subjects {
				if r.Intn(5) != 0 {
					res.FieldPos[fmt.Sprintf("subjects[%d]", j)] = Pos{File: "p.yaml", Line: i + 1, Column: 10 + j}
				}
			}
		}
		d.Resources = append(d.Resources, res)
	}
	return d
}

func TestValidateOverlapsMatchesPairwise(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	found := 0
	for round := 0; round < 3000; round++ {
		d := randomOverlapDesired(r)
		want := &loader{desired: d}
		want.validateOverlapsPairwise()
		got := &loader{desired: d}
		got.validateOverlaps()
		if !slices.Equal(got.problems, want.problems) {
			var decl []string
			for _, res := range d.Resources {
				decl = append(decl, fmt.Sprintf("%s %v", res.Label(), streamSubjects(res)))
			}
			t.Fatalf("round %d: resources\n  %s\nindex:\n  %v\npairwise:\n  %v", round, strings.Join(decl, "\n  "), got.problems, want.problems)
		}
		found += len(want.problems)
	}
	if found < 3000 {
		t.Errorf("only %d overlaps in all rounds: the subjects overlap too rarely to test the index", found)
	}
}

// TestSubjectIndexCandidates checks the index alone: every indexed filter
// that overlaps the one asked about is a candidate, exactly once.
func TestSubjectIndexCandidates(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for round := 0; round < 5000; round++ {
		var x subjectIndex
		var subjects []string
		for len(subjects) < 1+r.Intn(40) {
			if s := randomSubject(r); validSubject(s) {
				x.add(s, subjectRef{len(subjects), 0})
				subjects = append(subjects, s)
			}
		}
		q := randomSubject(r)
		if !validSubject(q) {
			continue
		}
		seen := map[int]int{}
		x.overlapping(q, func(ref subjectRef) { seen[ref.stream]++ })
		for i, s := range subjects {
			if n := seen[i]; n > 1 || (n == 0 && subjectsCollide(q, s)) {
				t.Fatalf("%q against %q: %d candidates, want 1", q, s, n)
			}
		}
	}
}
