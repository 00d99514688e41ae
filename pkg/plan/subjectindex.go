package plan

import "strings"

// subjectIndex holds subject filters in a tree of their tokens, so that
// the filters that may overlap a given one are found without comparing
// it with every other: a literal token leads to one child, * and > to
// their own. It returns candidates; streamread.SubjectsOverlap confirms
// them.
type subjectIndex struct {
	root subjectNode
}

// subjectRef names a filter: subject j of stream i.
type subjectRef struct{ stream, subject int }

type subjectNode struct {
	literal map[string]*subjectNode
	star    *subjectNode
	// full are the filters that end with > here; end those that end
	// here with a literal or *.
	full, end []subjectRef
}

// add indexes a valid filter.
func (x *subjectIndex) add(subject string, ref subjectRef) {
	n := &x.root
	for subject != "" {
		tok, rest, more := strings.Cut(subject, ".")
		switch {
		case tok == ">":
			n.full = append(n.full, ref)
			return
		case tok == "*":
			if n.star == nil {
				n.star = &subjectNode{}
			}
			n = n.star
		default:
			c := n.literal[tok]
			if c == nil {
				if n.literal == nil {
					n.literal = map[string]*subjectNode{}
				}
				c = &subjectNode{}
				n.literal[tok] = c
			}
			n = c
		}
		if !more {
			break
		}
		subject = rest
	}
	n.end = append(n.end, ref)
}

// overlapping calls f with every indexed filter that may overlap the
// valid filter subject (each once), and perhaps a few that do not.
func (x *subjectIndex) overlapping(subject string, f func(subjectRef)) {
	x.root.overlapping(subject, f)
}

func (n *subjectNode) overlapping(subject string, f func(subjectRef)) {
	tok, rest, more := strings.Cut(subject, ".")
	if tok == ">" {
		// Everything below, which has at least one more token.
		n.below(f)
		return
	}
	// Our token, and maybe more, against a >.
	for _, r := range n.full {
		f(r)
	}
	next := func(c *subjectNode) {
		if more {
			c.overlapping(rest, f)
		} else {
			for _, r := range c.end {
				f(r)
			}
		}
	}
	if tok == "*" {
		for _, c := range n.literal {
			next(c)
		}
	} else if c := n.literal[tok]; c != nil {
		next(c)
	}
	if n.star != nil {
		next(n.star)
	}
}

// below calls f with every filter with at least one token below n.
func (n *subjectNode) below(f func(subjectRef)) {
	for _, r := range n.full {
		f(r)
	}
	visit := func(c *subjectNode) {
		for _, r := range c.end {
			f(r)
		}
		c.below(f)
	}
	for _, c := range n.literal {
		visit(c)
	}
	if n.star != nil {
		visit(n.star)
	}
}
