package jsonvalue

// validFast reports true only for data that is exactly one JSON document
// (what encoding/json's Valid says), scanning it once without allocating,
// several times faster than json.Valid: replay and stream tail check every
// JSON-looking payload. false means "not sure": Valid then asks
// encoding/json, so the answer is always encoding/json's.
func validFast(data []byte) bool {
	v := validator{data: data}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.pos == len(v.data)
}

type validator struct {
	data []byte
	pos  int
}

func (v *validator) space() {
	for v.pos < len(v.data) {
		switch v.data[v.pos] {
		case ' ', '\t', '\n', '\r':
			v.pos++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.pos >= len(v.data) || depth > fastMaxDepth {
		return false
	}
	switch c := v.data[v.pos]; {
	case c == '{':
		return v.object(depth)
	case c == '[':
		return v.array(depth)
	case c == '"':
		return v.string()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	}
	return false
}

func (v *validator) literal(word string) bool {
	if len(v.data)-v.pos < len(word) || string(v.data[v.pos:v.pos+len(word)]) != word {
		return false
	}
	v.pos += len(word)
	return true
}

func (v *validator) object(depth int) bool {
	v.pos++ // {
	v.space()
	if v.pos < len(v.data) && v.data[v.pos] == '}' {
		v.pos++
		return true
	}
	for {
		if v.pos >= len(v.data) || v.data[v.pos] != '"' || !v.string() {
			return false
		}
		v.space()
		if v.pos >= len(v.data) || v.data[v.pos] != ':' {
			return false
		}
		v.pos++
		v.space()
		if !v.value(depth + 1) {
			return false
		}
		if more, ok := v.next('}'); !more {
			return ok
		}
	}
}

// next reads what follows an element of an object or array: a comma
// (more to come), or close (the end, ok); anything else is not ok.
func (v *validator) next(close byte) (more, ok bool) {
	v.space()
	if v.pos >= len(v.data) {
		return false, false
	}
	switch v.data[v.pos] {
	case ',':
		v.pos++
		v.space()
		return true, true
	case close:
		v.pos++
		return false, true
	}
	return false, false
}

func (v *validator) array(depth int) bool {
	v.pos++ // [
	v.space()
	if v.pos < len(v.data) && v.data[v.pos] == ']' {
		v.pos++
		return true
	}
	for {
		if !v.value(depth + 1) {
			return false
		}
		if more, ok := v.next(']'); !more {
			return ok
		}
	}
}

// string takes a string whose bytes are printable ASCII, UTF-8 sequences
// (not checked here: callers check UTF-8 as encoding/json does not) and
// the escapes JSON defines.
func (v *validator) string() bool {
	v.pos++ // "
	for v.pos < len(v.data) {
		c := v.data[v.pos]
		switch {
		case c == '"':
			v.pos++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if v.pos+1 >= len(v.data) {
				return false
			}
			switch v.data[v.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.pos += 2
			case 'u':
				if v.pos+6 > len(v.data) {
					return false
				}
				for _, h := range v.data[v.pos+2 : v.pos+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				v.pos += 6
			default:
				return false
			}
		default:
			v.pos++
		}
	}
	return false
}

// number takes JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) number() bool {
	if v.data[v.pos] == '-' {
		v.pos++
	}
	switch {
	case v.pos >= len(v.data):
		return false
	case v.data[v.pos] == '0':
		v.pos++
	case v.data[v.pos] >= '1' && v.data[v.pos] <= '9':
		v.digits()
	default:
		return false
	}
	if v.pos < len(v.data) && v.data[v.pos] == '.' {
		v.pos++
		if !v.digits() {
			return false
		}
	}
	if v.pos < len(v.data) && (v.data[v.pos] == 'e' || v.data[v.pos] == 'E') {
		v.pos++
		if v.pos < len(v.data) && (v.data[v.pos] == '+' || v.data[v.pos] == '-') {
			v.pos++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

// digits takes one or more digits.
func (v *validator) digits() bool {
	start := v.pos
	for v.pos < len(v.data) && v.data[v.pos] >= '0' && v.data[v.pos] <= '9' {
		v.pos++
	}
	return v.pos > start
}
