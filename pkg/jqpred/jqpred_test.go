package jqpred

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
)

// doc is an Object over a decoded document; it counts the fields read and
// fails on the fields in broken.
type doc struct {
	m      map[string]any
	broken map[string]bool
	reads  map[string]int
}

func (d *doc) Field(name string) (any, error) {
	if d.reads != nil {
		d.reads[name]++
	}
	if d.broken[name] {
		return nil, errors.New("cannot build " + name)
	}
	return d.m[name], nil
}

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// gojqFilter is what the fast path stands in for: the first result of the
// program, true when neither false nor null.
func gojqFilter(t testing.TB, expr string, input any) (bool, error) {
	t.Helper()
	q, err := gojq.Parse(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	v, ok := q.Run(input).Next()
	if !ok {
		return false, nil
	}
	if err, isErr := v.(error); isErr {
		return false, err
	}
	return truthy(v), nil
}

func TestCompileSubset(t *testing.T) {
	for _, expr := range []string{
		`.size > 0`, `.value.state == "ready"`, `.a.b.c != null`, `."a-b" == 1`,
		`.["a"]["b"] < 2`, `.a[0].b >= -1.5`, `.a and .b or (.c | not)`,
		`select(.op == "DEL")`, `true`, `null`, `"x" == .key`, `(.a)`, `.a == .b`,
		`.n == 1e3`, `.n == 100000000000000000000000`,
	} {
		if Parse(expr) == nil {
			t.Errorf("%s: not compiled, want the fast path", expr)
		}
	}
	for _, expr := range []string{
		`.`, `..`, `.a?`, `.a[]`, `.a[-1]`, `.a[1:2]`, `.[0]`, `.a + 1 > 2`,
		`.a | .b`, `not`, `.a | length`, `"\(.a)" == "x"`, `.a == (1, 2)`,
		`.a as $x | $x`, `def f: .; f`, `test("x")`, `.a | not | not | length`,
		`.a.b1.b2.b3 and .c1 and .c2 and .c3 and .c4 and .c5 and .c6 and .c7 and .c8`,
		`.a == [1]`, `.a == {}`, `select(.a; .b)`, `select(.a) | not`, `select(.a) and .b`, `if .a then 1 else 2 end`,
		`try .a`, `.a // 1`, `$__loc__`, `.a[.b]`, `(.a).b`,
		`def select(f): true; select(.a == 1)`, `def not: true; .a | not`,
	} {
		if Parse(expr) != nil {
			t.Errorf("%s: compiled, want gojq", expr)
		}
	}
}

func TestEvalExamples(t *testing.T) {
	m := decode(t, `{"key":"deploy.status","size":17,"op":"PUT",
		"value":{"state":"ready","replicas":5,"tags":["a","b"],"ratio":0.5,"big":123456789012345678901234567890,"none":null},
		"text":"plain"}`)
	for _, tt := range []struct {
		expr          string
		match, decide bool
	}{
		{`.value.state == "ready"`, true, true},
		{`.value.state == "pending"`, false, true},
		{`.size > 0`, true, true},
		{`.value.replicas >= 5 and .value.replicas < 6`, true, true},
		{`.value.replicas == 5.0`, true, true},
		{`.value.ratio > 0.25`, true, true},
		{`.value.big > 123456789012345678901234567889`, true, true},
		{`.value.tags[1] == "b"`, true, true},
		{`.value.tags[2]`, false, true},
		{`.value.none`, false, true},
		{`.value.missing.deeper == null`, true, true},
		{`.value.state != null`, true, true},
		{`.value | not`, false, true},
		{`.nothing | not`, true, true},
		{`select(.op == "PUT")`, true, true},
		{`select(select(.op == "DEL"))`, false, true},
		{`.value.tags > "z"`, true, true}, // arrays sort after strings
		{`.value.state.x`, false, false},  // jq: cannot index string
		{`.text.state == "x"`, false, false},
		{`.value.tags.x`, false, false},
		{`.value.tags["x"]`, false, false},
		{`.value[0]`, false, false},
		{`false and .text.x`, false, true}, // the right side is never run
		{`true or .text.x`, true, true},
		{`true and .text.x`, false, false},
	} {
		p := Parse(tt.expr)
		if p == nil {
			t.Errorf("%s: not compiled", tt.expr)
			continue
		}
		match, decided := p.Eval(&doc{m: m})
		if match != tt.match || decided != tt.decide {
			t.Errorf("%s: got match %v decided %v, want %v %v", tt.expr, match, decided, tt.match, tt.decide)
		}
		if !decided {
			continue
		}
		want, err := gojqFilter(t, tt.expr, m)
		if err != nil || want != match {
			t.Errorf("%s: gojq says %v, %v; fast path %v", tt.expr, want, err, match)
		}
	}
}

// TestEvalReadsOnlyWhatItNeeds: the point of the fast path is that a
// program on .size never builds .value.
func TestEvalReadsOnlyWhatItNeeds(t *testing.T) {
	d := &doc{m: map[string]any{"size": 3, "value": "x"}, broken: map[string]bool{"value": true}, reads: map[string]int{}}
	p := Parse(`.size > 0 and .size < 10 or .value == 1`)
	if match, decided := p.Eval(d); !match || !decided {
		t.Fatalf("got %v %v, want a decided match", match, decided)
	}
	if d.reads["value"] != 0 || d.reads["size"] != 1 {
		t.Errorf("fields read: %v, want size once and value never", d.reads)
	}
	// A field that fails to build leaves the decision to gojq.
	if _, decided := Parse(`.value == 1`).Eval(d); decided {
		t.Error("a broken field was decided")
	}
}

// TestAgreesWithGojq runs random programs of the subset on random
// documents: whenever the fast path decides, gojq gives the same answer
// without an error.
func TestAgreesWithGojq(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 29))
	decided, total := 0, 0
	for i := 0; i < 20000; i++ {
		expr := genPredicate(rng, 0)
		if i%5 == 0 {
			expr = "select(" + expr + ")"
		}
		p := Parse(expr)
		if p == nil {
			t.Fatalf("%s: generated outside the subset", expr)
		}
		m := genDoc(rng)
		total++
		match, ok := p.Eval(&doc{m: m})
		want, err := gojqFilter(t, expr, m)
		if !ok {
			continue
		}
		decided++
		if err != nil || want != match {
			b, _ := json.Marshal(m)
			t.Fatalf("%s on %s: fast path %v, gojq %v (%v)", expr, b, match, want, err)
		}
	}
	// Most random programs must be decided, or this test checks little.
	t.Logf("%d of %d decided", decided, total)
	if decided < total/2 {
		t.Errorf("only %d of %d decided", decided, total)
	}
}

var (
	genFields = []string{"a", "b", "size", "value"}
	genKeys   = []any{"a", "b", "state", 0, 1}
	genConsts = []string{`null`, `true`, `false`, `0`, `1`, `-1`, `1.0`, `2.5`, `1e2`,
		`100000000000000000000000`, `""`, `"a"`, `"ready"`, `"b"`}
)

func genPath(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString("." + genFields[rng.IntN(len(genFields))])
	for range rng.IntN(3) {
		switch k := genKeys[rng.IntN(len(genKeys))].(type) {
		case string:
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, ".%s", k)
			} else {
				fmt.Fprintf(&b, "[%q]", k)
			}
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		}
	}
	return b.String()
}

func genOperand(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return genPath(rng)
	}
	return genConsts[rng.IntN(len(genConsts))]
}

func genPredicate(rng *rand.Rand, depth int) string {
	n := rng.IntN(10)
	if depth > 2 {
		n = rng.IntN(5)
	}
	ops := []string{"==", "!=", "<", "<=", ">", ">="}
	switch {
	case n < 4:
		return genOperand(rng) + " " + ops[rng.IntN(len(ops))] + " " + genOperand(rng)
	case n == 4:
		return genPath(rng)
	case n == 5:
		return "(" + genPredicate(rng, depth+1) + " | not)"
	case n < 8:
		return "(" + genPredicate(rng, depth+1) + " and " + genPredicate(rng, depth+1) + ")"
	default:
		return "(" + genPredicate(rng, depth+1) + " or " + genPredicate(rng, depth+1) + ")"
	}
}

func genValue(rng *rand.Rand, depth int) any {
	n := rng.IntN(12)
	if depth > 2 {
		n = rng.IntN(9)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return json.Number([]string{"0", "1", "-1", "1.0", "2.5", "100", "1e2", "100000000000000000000000"}[rng.IntN(8)])
	case 3:
		return rng.IntN(3) // the int of a field such as size
	case 4, 5:
		return []string{"", "a", "b", "ready", "B"}[rng.IntN(5)]
	case 6, 7, 8:
		return json.Number("1")
	case 9, 10:
		m := map[string]any{}
		for _, k := range []string{"a", "b", "state"} {
			if rng.IntN(3) > 0 {
				m[k] = genValue(rng, depth+1)
			}
		}
		return m
	default:
		a := make([]any, rng.IntN(3))
		for i := range a {
			a[i] = genValue(rng, depth+1)
		}
		return a
	}
}

func genDoc(rng *rand.Rand) map[string]any {
	m := map[string]any{}
	for _, f := range genFields {
		if rng.IntN(4) > 0 {
			m[f] = genValue(rng, 1)
		}
	}
	return m
}

func BenchmarkEval(b *testing.B) {
	m := decode(b, `{"key":"deploy.status","size":17,"value":{"state":"ready","replicas":5}}`)
	for _, expr := range []string{`.size > 0`, `.value.state == "ready"`} {
		p := Parse(expr)
		q, _ := gojq.Parse(expr)
		code, _ := gojq.Compile(q)
		b.Run("fast/"+expr, func(b *testing.B) {
			d := &doc{m: m}
			for i := 0; i < b.N; i++ {
				p.Eval(d)
			}
		})
		b.Run("gojq/"+expr, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				code.Run(m).Next()
			}
		})
	}
}
