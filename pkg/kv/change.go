package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jetctl/jetctl/pkg/jsonvalue"
)

// ChangeOp says what happened at a path.
type ChangeOp string

// The change operations.
const (
	ChangeAdd    ChangeOp = "add"
	ChangeRemove ChangeOp = "remove"
	ChangeUpdate ChangeOp = "change"
)

// Change is one difference between two values. Path is a jq path ("." is
// the whole value); it names the element in the after value for add and
// change and in the before value for remove. Before and After are decoded
// JSON, a string for text, or a BinaryInfo; Unified is the unified diff of
// two text values.
type Change struct {
	Path    string
	Op      ChangeOp
	Before  any
	After   any
	Unified string
}

// MarshalJSON writes {path, op, before, after}: before is left out of an
// add and after out of a remove, because null is a legitimate JSON value.
func (c Change) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"path":`)
	writeJSONValue(&b, c.Path)
	b.WriteString(`,"op":`)
	writeJSONValue(&b, c.Op)
	if c.Op != ChangeAdd {
		b.WriteString(`,"before":`)
		if err := writeJSONValue(&b, c.Before); err != nil {
			return nil, err
		}
	}
	if c.Op != ChangeRemove {
		b.WriteString(`,"after":`)
		if err := writeJSONValue(&b, c.After); err != nil {
			return nil, err
		}
	}
	if c.Unified != "" {
		b.WriteString(`,"unified":`)
		writeJSONValue(&b, c.Unified)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSONValue(b *bytes.Buffer, v any) error {
	// The scalars of decoded documents, written as the encoder below
	// would: a bucket diff writes a few for each of many keys.
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case bool:
		b.WriteString(strconv.FormatBool(x))
		return nil
	case json.Number:
		if isPlainNumber(string(x)) {
			b.WriteString(string(x))
			return nil
		}
	case string:
		if isPlainString(x) {
			b.WriteByte('"')
			b.WriteString(x)
			b.WriteByte('"')
			return nil
		}
	case ChangeOp:
		if isPlainString(string(x)) {
			b.WriteByte('"')
			b.WriteString(string(x))
			b.WriteByte('"')
			return nil
		}
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

// String renders the change for people: `~ .spec.replicas: 3 → 5`,
// `+ .labels.team: "core"`, `- .debug: true`, or a unified diff for text.
func (c Change) String() string {
	if c.Unified != "" {
		return strings.TrimRight(c.Unified, "\n")
	}
	switch c.Op {
	case ChangeAdd:
		return fmt.Sprintf("+ %s: %s", c.Path, Compact(c.After))
	case ChangeRemove:
		return fmt.Sprintf("- %s: %s", c.Path, Compact(c.Before))
	}
	return fmt.Sprintf("~ %s: %s → %s", c.Path, Compact(c.Before), Compact(c.After))
}

// Compact renders a decoded value on one line: JSON, or "binary, N bytes,
// sha256:…" for binary values.
func Compact(v any) string {
	if bi, ok := v.(BinaryInfo); ok {
		return fmt.Sprintf("binary, %s, sha256:%s", plural(bi.Size, "byte", "bytes"), bi.SHA256[:16])
	}
	var b bytes.Buffer
	if err := writeJSONValue(&b, v); err != nil {
		return fmt.Sprint(v)
	}
	return b.String()
}

// Diff compares two values of a key; nil means no value (the key did not
// exist, or that revision is a delete or purge). Both JSON: a structural
// diff by path. Both text: one change at "." with a unified diff. Otherwise
// (a binary value on either side): one change with sizes and hashes. JSON
// documents that are equal as JSON (key order, spacing) have no changes.
// beforeName and afterName label the unified diff. ctx stops a long text
// diff.
func Diff(ctx context.Context, before, after []byte, beforeName, afterName string) ([]Change, error) {
	return diffLabelled(ctx, before, after, func() (string, string) { return beforeName, afterName })
}

// diffLabelled is Diff with the labels made only when a unified diff needs
// them: a bucket diff compares many JSON values and labels few texts.
func diffLabelled(ctx context.Context, before, after []byte, names func() (string, string)) ([]Change, error) {
	switch {
	case before == nil && after == nil:
		return nil, nil
	case before == nil:
		return []Change{{Path: ".", Op: ChangeAdd, After: Decoded(after)}}, nil
	case after == nil:
		return []Change{{Path: ".", Op: ChangeRemove, Before: Decoded(before)}}, nil
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	if bv, ok := jsonvalue.Decode(before); ok {
		if av, ok := jsonvalue.Decode(after); ok {
			return DiffJSON(bv, av), nil
		}
	}
	if KindOf(before) != KindBinary && KindOf(after) != KindBinary {
		beforeName, afterName := names()
		text, err := unified(ctx, string(before), string(after), beforeName, afterName)
		if err != nil {
			return nil, err
		}
		return []Change{{
			Path: ".", Op: ChangeUpdate, Before: string(before), After: string(after),
			Unified: text,
		}}, nil
	}
	return []Change{{Path: ".", Op: ChangeUpdate, Before: Decoded(before), After: Decoded(after)}}, nil
}

// lines splits text into lines that each end with a newline, so that a
// last line without one diffs like the others.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	} else {
		out[len(out)-1] += "\n"
	}
	return out
}

// plural is "1 byte", "2 bytes".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// isPlainString reports whether JSON writes s between quotes unchanged:
// printable ASCII without quotes or backslashes.
func isPlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// isPlainNumber reports whether s is a JSON number literal, which the
// encoder writes as it is: an optional minus, digits without a leading
// zero, an optional fraction and exponent.
func isPlainNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
