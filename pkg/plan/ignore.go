package plan

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// ignoreDirective starts a `# jetctl:ignore RULE reason` comment.
const ignoreDirective = "jetctl:ignore"

// parseIgnore reads one comment line: ok is false when it is not a
// jetctl:ignore comment. The rule is the first word after the directive,
// the reason the rest of the line (either may be empty: lint reports it).
func parseIgnore(comment string) (rule, reason string, ok bool) {
	s := strings.TrimSpace(comment)
	if !strings.HasPrefix(s, "#") {
		return "", "", false
	}
	rest, found := strings.CutPrefix(strings.TrimSpace(strings.TrimLeft(s, "#")), ignoreDirective)
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", "", false
	}
	rest = strings.TrimSpace(rest)
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		return rest[:i], strings.TrimSpace(rest[i:]), true
	}
	return rest, "", true
}

// ignoreScan gives the jetctl:ignore comments of one file to the
// resources they are on. yaml.v3 keeps comments on nodes but not where
// they are, so each comment line is found again in the source: a head
// comment ends on the line above its node, a line comment is on its
// node's line (or a later one, for a flow list spanning lines), a foot
// comment follows its node's last line.
type ignoreScan struct {
	file    string
	lines   []string
	owners  map[*yaml.Node]*Resource
	claimed map[int]bool
	// feet are the foot comments, placed once every head and line
	// comment has claimed its line.
	feet []footComment
	// stray are the comments on no resource.
	stray *[]Ignore
}

type footComment struct {
	text  string
	after int
	stack []*Resource
}

// scanIgnores fills the Ignores of the resources declared in one file
// (owners maps each resource's mapping node to it): a comment is a
// resource's when it is above its list item, on one of its lines, or
// above one of its keys; a nested consumer's comments are the consumer's,
// not its stream's. Aliases are not followed, so an anchored value's
// comments count once, where it is written. Comments on no resource go
// to stray.
func scanIgnores(file string, data []byte, doc *yaml.Node, owners map[*yaml.Node]*Resource, stray *[]Ignore) {
	if !bytes.Contains(data, []byte(ignoreDirective)) {
		return
	}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " \t\r")
	}
	s := &ignoreScan{file: file, lines: lines, owners: owners, claimed: map[int]bool{}, stray: stray}
	before := len(*stray)
	s.walk(doc, nil, 0)
	for _, f := range s.feet {
		s.foot(f)
	}
	// In line order, as they are written (foot comments come last).
	sortIgnores((*stray)[before:])
	for _, r := range owners {
		sortIgnores(r.Ignores)
	}
}

func sortIgnores(igs []Ignore) {
	sort.SliceStable(igs, func(i, j int) bool {
		a, b := igs[i].Pos, igs[j].Pos
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
}

func (s *ignoreScan) walk(n *yaml.Node, stack []*Resource, after int) {
	if r := s.owners[n]; r != nil {
		stack = append(stack[:len(stack):len(stack)], r)
	}
	// yaml.v3 keeps the comment above a list's first item on the item,
	// whatever the layout (TestIgnoreAboveTheFirstItem).
	s.head(n, top(stack))
	s.line(n, top(stack))
	if n.FootComment != "" {
		if after == 0 {
			after = maxLine(n)
		}
		s.feet = append(s.feet, footComment{n.FootComment, after, stack})
	}
	if n.Kind == yaml.AliasNode {
		return
	}
	for i, c := range n.Content {
		keyAfter := 0
		if n.Kind == yaml.MappingNode && i%2 == 0 && c.FootComment != "" && i+1 < len(n.Content) {
			keyAfter = maxLine(n.Content[i+1])
		}
		s.walk(c, stack, keyAfter)
	}
}

func top(stack []*Resource) *Resource {
	if len(stack) == 0 {
		return nil
	}
	return stack[len(stack)-1]
}

// maxLine is the last line of a node, aliases not followed.
func maxLine(n *yaml.Node) int {
	m := n.Line
	if n.Kind != yaml.AliasNode {
		for _, c := range n.Content {
			m = max(m, maxLine(c))
		}
	}
	return m
}

func (s *ignoreScan) head(n *yaml.Node, r *Resource) {
	if n.HeadComment == "" {
		return
	}
	texts := strings.Split(n.HeadComment, "\n")
	for i, text := range texts {
		rule, reason, ok := parseIgnore(text)
		if !ok {
			continue
		}
		// The comment's lines, blank ones included, end above the node.
		pos := s.find(text, n.Line-len(texts)+i, n.Line, -1)
		s.add(r, Ignore{Rule: rule, Reason: reason, Pos: pos})
	}
}

func (s *ignoreScan) line(n *yaml.Node, r *Resource) {
	if rule, reason, ok := parseIgnore(n.LineComment); ok {
		s.add(r, Ignore{Rule: rule, Reason: reason, Pos: s.find(n.LineComment, n.Line, n.Line, 1)})
	}
}

// foot places a comment that follows a node's last line on the innermost
// resource it is indented into: a comment at a stream's keys' column after
// the stream's last consumer is the stream's.
func (s *ignoreScan) foot(f footComment) {
	for _, text := range strings.Split(f.text, "\n") {
		rule, reason, ok := parseIgnore(text)
		if !ok {
			continue
		}
		pos := s.find(text, f.after+1, f.after+1, 1)
		var owner *Resource
		for i := len(f.stack) - 1; i >= 0; i-- {
			if f.stack[i].Pos.Column <= pos.Column {
				owner = f.stack[i]
				break
			}
		}
		s.add(owner, Ignore{Rule: rule, Reason: reason, Pos: pos})
	}
}

// find returns where comment text is: on line want when it is there,
// else on the nearest unclaimed line from line from in direction dir
// (1 down, -1 up) that ends with it.
func (s *ignoreScan) find(text string, want, from, dir int) Pos {
	text = strings.TrimRight(strings.TrimSpace(text), "\r")
	at := func(line int) (Pos, bool) {
		if line < 1 || line > len(s.lines) || s.claimed[line] || !strings.HasSuffix(s.lines[line-1], text) {
			return Pos{}, false
		}
		l := s.lines[line-1]
		s.claimed[line] = true
		return Pos{File: s.file, Line: line, Column: utf8.RuneCountInString(l[:len(l)-len(text)]) + 1}, true
	}
	if p, ok := at(want); ok {
		return p
	}
	for line := from; line >= 1 && line <= len(s.lines); line += dir {
		if p, ok := at(line); ok {
			return p
		}
	}
	return Pos{File: s.file, Line: max(want, 1), Column: 1}
}

func (s *ignoreScan) add(r *Resource, ig Ignore) {
	if r == nil {
		*s.stray = append(*s.stray, ig)
		return
	}
	r.Ignores = append(r.Ignores, ig)
}
