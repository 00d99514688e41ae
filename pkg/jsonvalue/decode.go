package jsonvalue

import (
	"encoding/json"
	"errors"
)

// errSlowPath sends a document to encoding/json.
var errSlowPath = errors.New("not on the fast path")

// decodeFast decodes one JSON document into what encoding/json gives with
// UseNumber (map[string]any, []any, string, json.Number, bool, nil), about
// three times faster: a bucket diff decodes two documents per changed key,
// a filtered replay one per message. It returns errSlowPath for what it
// does not handle itself (strings with escapes or bytes outside printable
// ASCII, malformed input); Decode then uses encoding/json, so that the
// result is always the same.
func decodeFast(data []byte) (any, error) {
	d := fastDecoder{data: data}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.pos != len(d.data) {
		return nil, errSlowPath
	}
	return v, nil
}

// fastMaxDepth bounds nesting; deeper documents take the slow path.
const fastMaxDepth = 1000

type fastDecoder struct {
	data []byte
	pos  int
}

func (d *fastDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *fastDecoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) || depth > fastMaxDepth {
		return nil, errSlowPath
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, errSlowPath
}

func (d *fastDecoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return errSlowPath
	}
	d.pos += len(word)
	return nil
}

func (d *fastDecoder) object(depth int) (any, error) {
	d.pos++ // {
	m := map[string]any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, errSlowPath
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, errSlowPath
		}
		d.pos++
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.pos >= len(d.data) {
			return nil, errSlowPath
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, errSlowPath
		}
	}
}

func (d *fastDecoder) array(depth int) (any, error) {
	d.pos++ // [
	a := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return a, nil
	}
	for {
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.pos >= len(d.data) {
			return nil, errSlowPath
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, nil
		default:
			return nil, errSlowPath
		}
	}
}

// string reads a string of printable ASCII without escapes; anything else
// (escapes, UTF-8 that encoding/json might repair) is the slow path.
func (d *fastDecoder) string() (string, error) {
	start := d.pos + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.pos = i + 1
			return string(d.data[start:i]), nil
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", errSlowPath
		}
	}
	return "", errSlowPath
}

// number reads a number as JSON's grammar has it, kept as its literal.
func (d *fastDecoder) number() (any, error) {
	start := d.pos
	i := d.pos
	digits := func() int {
		n := 0
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if d.data[i] == '-' {
		i++
	}
	if i < len(d.data) && d.data[i] == '0' {
		i++
	} else if digits() == 0 {
		return nil, errSlowPath
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if digits() == 0 {
			return nil, errSlowPath
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, errSlowPath
		}
	}
	d.pos = i
	return json.Number(d.data[start:i]), nil
}
