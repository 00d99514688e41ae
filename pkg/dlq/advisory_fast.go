package dlq

import "strconv"

// parseAdvisoryFast decodes an advisory as encoding/json decodes it into
// an Advisory, without reflection, for the flat object the server sends:
// a sweep decodes one per dead message, and encoding/json was about 8% of
// its CPU (docs/dlq.md, Speed). It handles keys that are exactly
// Advisory's JSON names, strings of printable ASCII without escapes and
// numbers of plain digits; for anything else (escapes, other keys, other
// case, null, nested values, bad syntax) it returns false and ParseAdvisory
// uses encoding/json, so that the result is always the same.
// TestParseAdvisoryFastMatchesEncodingJSON holds it to that.
func parseAdvisoryFast(data []byte) (a Advisory, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return a, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return a, skipSpace(data, i+1) == len(data)
	}
	for {
		keyStart, keyEnd, next, ok := plainString(data, i)
		if !ok {
			return a, false
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return a, false
		}
		i = skipSpace(data, i+1)
		key := data[keyStart:keyEnd]
		switch string(key) {
		case "type", "id", "stream", "consumer", "reason", "domain", "timestamp":
			start, end, next, ok := plainString(data, i)
			if !ok {
				return a, false
			}
			switch string(key) {
			case "type":
				a.Type = string(data[start:end])
			case "id":
				a.ID = string(data[start:end])
			case "stream":
				a.Stream = string(data[start:end])
			case "consumer":
				a.Consumer = string(data[start:end])
			case "reason":
				a.Reason = string(data[start:end])
			case "domain":
				a.Domain = string(data[start:end])
			case "timestamp":
				// The quoted value, through time.Time's own decoder, as
				// encoding/json does.
				if a.Time.UnmarshalJSON(data[start-1:end+1]) != nil {
					return a, false
				}
			}
			i = next
		case "stream_seq", "consumer_seq", "deliveries":
			n, next, ok := plainUint(data, i)
			if !ok {
				return a, false
			}
			switch string(key) {
			case "stream_seq":
				a.StreamSeq = n
			case "consumer_seq":
				a.ConsumerSeq = n
			case "deliveries":
				a.Deliveries = n
			}
			i = next
		default:
			return a, false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return a, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return a, skipSpace(data, i+1) == len(data)
		default:
			return a, false
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// plainString finds the string at data[i]: its contents are
// data[start:end], and next is after its closing quote. ok is false for
// anything but a string of printable ASCII without escapes.
func plainString(data []byte, i int) (start, end, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, 0, 0, false
	}
	start = i + 1
	for end = start; end < len(data); end++ {
		switch c := data[end]; {
		case c == '"':
			return start, end, end + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return 0, 0, 0, false
		}
	}
	return 0, 0, 0, false
}

// plainUint reads the number at data[i]: 0 or digits without a leading
// zero, that fit a uint64, ending where JSON lets a number end.
func plainUint(data []byte, i int) (n uint64, next int, ok bool) {
	end := i
	for end < len(data) && data[end] >= '0' && data[end] <= '9' {
		end++
	}
	if end == i || (data[i] == '0' && end > i+1) {
		return 0, 0, false
	}
	if end < len(data) {
		switch data[end] {
		case ' ', '\t', '\n', '\r', ',', '}':
		default:
			return 0, 0, false
		}
	}
	n, err := strconv.ParseUint(string(data[i:end]), 10, 64)
	return n, end, err == nil
}
