// Package jqpred evaluates the jq predicates people write most often as
// --filter, such as `.value.state == "ready"`, `.size > 0` or
// `.op == "DEL" or (.key | not)`, directly on an item's fields: without
// building the item's whole JSON document and without running gojq.
//
// It covers paths of constant keys and array indexes from the input
// (`.a.b`, `."a-b"`, `.["a"]`, `.a[0]`), literals (null, true, false,
// numbers, strings), the comparisons == != < <= > >=, and, or, `| not`,
// parentheses, and select(...) around the whole program. Comparisons use
// gojq.Compare, so their results are gojq's. Every other program compiles
// to nil. An input the fast path cannot decide (a path into a value that is
// neither an object, an array nor null; a field that fails to build) makes
// Eval say so: the caller then runs gojq on the whole document, which gives
// the answer, or the error, it would have given anyway.
package jqpred

import (
	"github.com/itchyny/gojq"
)

// Object is an item whose top-level fields are built on demand. Field
// returns nil for a field the item does not have, and an error when the
// field cannot be built (the caller's full path then reports it).
type Object interface {
	Field(name string) (any, error)
}

// maxFields bounds the distinct top-level fields a fast program reads, so
// that an evaluation's memo lives on the stack.
const maxFields = 8

// Predicate is a compiled fast program. It is safe for concurrent use.
type Predicate struct {
	root   *node
	fields []string
}

type nodeKind int

const (
	kindConst nodeKind = iota
	kindPath
	kindCompare
	kindAnd
	kindOr
	kindNot
)

type node struct {
	kind nodeKind
	// value is a constant's value.
	value any
	// field indexes Predicate.fields; path is the rest of a path: string
	// keys and non-negative int indexes.
	field int
	path  []any
	op    gojq.Operator
	l, r  *node
}

// Compile returns a Predicate for q when q is inside the fast subset, else
// nil.
func Compile(q *gojq.Query) *Predicate {
	p := &Predicate{}
	// select(c) yields its input, an object, when c is true and nothing
	// otherwise: as the whole filter (not inside one), the same as c.
	for q != nil && q.Term != nil && q.Meta == nil && len(q.Imports) == 0 && len(q.FuncDefs) == 0 && isCall(q.Term, "select", 1) {
		q = q.Term.Func.Args[0]
	}
	root, ok := p.query(q)
	if !ok || len(p.fields) > maxFields {
		return nil
	}
	p.root = root
	return p
}

// Parse parses and compiles a program; nil when it does not parse or is
// outside the fast subset.
func Parse(expr string) *Predicate {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil
	}
	return Compile(q)
}

func (p *Predicate) query(q *gojq.Query) (*node, bool) {
	if q == nil || q.Meta != nil || len(q.Imports) > 0 || len(q.FuncDefs) > 0 || len(q.Patterns) > 0 {
		return nil, false
	}
	if q.Term != nil {
		return p.term(q.Term)
	}
	switch q.Op {
	case gojq.OpEq, gojq.OpNe, gojq.OpLt, gojq.OpLe, gojq.OpGt, gojq.OpGe:
		return p.binary(kindCompare, q)
	case gojq.OpAnd:
		return p.binary(kindAnd, q)
	case gojq.OpOr:
		return p.binary(kindOr, q)
	case gojq.OpPipe:
		// X | not
		if r := q.Right; r != nil && r.Term != nil && isCall(r.Term, "not", 0) {
			x, ok := p.query(q.Left)
			return &node{kind: kindNot, l: x}, ok
		}
	}
	return nil, false
}

func (p *Predicate) binary(kind nodeKind, q *gojq.Query) (*node, bool) {
	l, ok := p.query(q.Left)
	if !ok {
		return nil, false
	}
	r, ok := p.query(q.Right)
	if !ok {
		return nil, false
	}
	return &node{kind: kind, op: q.Op, l: l, r: r}, true
}

func isCall(t *gojq.Term, name string, args int) bool {
	return t.Type == gojq.TermTypeFunc && len(t.SuffixList) == 0 && t.Func.Name == name && len(t.Func.Args) == args
}

func (p *Predicate) term(t *gojq.Term) (*node, bool) {
	switch t.Type {
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber:
		return constant(t)
	case gojq.TermTypeString:
		if t.Str.Queries != nil {
			return nil, false // interpolation reads the input
		}
		return constant(t)
	case gojq.TermTypeUnary:
		if t.Unary.Op != gojq.OpSub || t.Unary.Term.Type != gojq.TermTypeNumber {
			return nil, false
		}
		return constant(t)
	case gojq.TermTypeQuery:
		if len(t.SuffixList) > 0 {
			return nil, false
		}
		return p.query(t.Query)
	case gojq.TermTypeIndex:
		return p.path(t)
	}
	return nil, false
}

// constant evaluates a literal with gojq once, so that its value is the one
// gojq compares with (int, float64 or *big.Int for numbers).
func constant(t *gojq.Term) (*node, bool) {
	if len(t.SuffixList) > 0 {
		return nil, false
	}
	v, ok := (&gojq.Query{Term: t}).Run(nil).Next()
	if !ok {
		return nil, false
	}
	if _, isErr := v.(error); isErr {
		return nil, false
	}
	return &node{kind: kindConst, value: v}, true
}

// path compiles .k1.k2[i]... into the index of k1 and the rest.
func (p *Predicate) path(t *gojq.Term) (*node, bool) {
	first, ok := indexKey(t.Index)
	name, isName := first.(string)
	if !ok || !isName {
		return nil, false
	}
	n := &node{kind: kindPath, field: p.fieldIndex(name)}
	for _, s := range t.SuffixList {
		if s.Iter || s.Optional || s.Index == nil {
			return nil, false
		}
		k, ok := indexKey(s.Index)
		if !ok {
			return nil, false
		}
		n.path = append(n.path, k)
	}
	return n, true
}

// indexKey is the constant key of .name, ."name", .["name"] or .[N]: a
// string, or an int N >= 0.
func indexKey(ix *gojq.Index) (any, bool) {
	switch {
	case ix == nil || ix.IsSlice || ix.End != nil:
		return nil, false
	case ix.Name != "":
		return ix.Name, true
	case ix.Str != nil:
		if ix.Str.Queries != nil {
			return nil, false
		}
		return ix.Str.Str, true
	case ix.Start != nil && ix.Start.Term != nil:
		c, ok := (&Predicate{}).term(ix.Start.Term)
		if !ok || c.kind != kindConst {
			return nil, false
		}
		switch k := c.value.(type) {
		case string:
			return k, true
		case int:
			return k, k >= 0
		}
	}
	return nil, false
}

func (p *Predicate) fieldIndex(name string) int {
	for i, f := range p.fields {
		if f == name {
			return i
		}
	}
	p.fields = append(p.fields, name)
	return len(p.fields) - 1
}

// evaluation is one run: the object and the fields read so far.
type evaluation struct {
	obj   Object
	names []string
	vals  [maxFields]any
	have  [maxFields]bool
}

// Eval runs the program on obj. decided is false when the fast path cannot
// tell (see the package comment), or p is nil; match is then meaningless.
func (p *Predicate) Eval(obj Object) (match, decided bool) {
	if p == nil {
		return false, false
	}
	ev := evaluation{obj: obj, names: p.fields}
	v, ok := p.root.eval(&ev)
	if !ok {
		return false, false
	}
	return truthy(v), true
}

func truthy(v any) bool { return v != nil && v != false }

func (n *node) eval(ev *evaluation) (any, bool) {
	switch n.kind {
	case kindConst:
		return n.value, true
	case kindPath:
		if !ev.have[n.field] {
			v, err := ev.obj.Field(ev.names[n.field])
			if err != nil {
				return nil, false
			}
			ev.vals[n.field], ev.have[n.field] = v, true
		}
		return walk(ev.vals[n.field], n.path)
	case kindCompare:
		l, ok := n.l.eval(ev)
		if !ok {
			return nil, false
		}
		r, ok := n.r.eval(ev)
		if !ok {
			return nil, false
		}
		c := gojq.Compare(l, r)
		switch n.op {
		case gojq.OpEq:
			return c == 0, true
		case gojq.OpNe:
			return c != 0, true
		case gojq.OpLt:
			return c < 0, true
		case gojq.OpLe:
			return c <= 0, true
		case gojq.OpGt:
			return c > 0, true
		default: // OpGe
			return c >= 0, true
		}
	case kindAnd, kindOr:
		l, ok := n.l.eval(ev)
		if !ok {
			return nil, false
		}
		// jq does not evaluate the right side when the left decides.
		if truthy(l) == (n.kind == kindOr) {
			return n.kind == kindOr, true
		}
		r, ok := n.r.eval(ev)
		if !ok {
			return nil, false
		}
		return truthy(r), true
	default: // kindNot
		v, ok := n.l.eval(ev)
		if !ok {
			return nil, false
		}
		return !truthy(v), true
	}
}

// walk follows path from v as jq's .k and .[i] do, except that it does not
// decide (false) where jq would fail: indexing anything but an object, an
// array or null.
func walk(v any, path []any) (any, bool) {
	for _, k := range path {
		switch x := v.(type) {
		case nil:
		case map[string]any:
			key, ok := k.(string)
			if !ok {
				return nil, false
			}
			v = x[key]
		case []any:
			i, ok := k.(int)
			if !ok {
				return nil, false
			}
			if i < len(x) {
				v = x[i]
			} else {
				v = nil
			}
		default:
			return nil, false
		}
	}
	return v, true
}
