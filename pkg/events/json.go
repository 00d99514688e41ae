package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends e's JSON line (with a trailing newline) to buf, as
// encoding/json writes it without HTML escaping (the rule of every JSON
// output, cmd/output): hand-written because the timeline writes a hundred
// thousand events a second, and held to encoding/json by
// TestAppendJSONMatchesEncodingJSON.
func (e *Event) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"time":"`...)
	buf = e.Time.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","type":`...)
	buf = appendString(buf, e.Type)
	if e.Stream != "" {
		buf = append(buf, `,"stream":`...)
		buf = appendString(buf, e.Stream)
	}
	if e.Consumer != "" {
		buf = append(buf, `,"consumer":`...)
		buf = appendString(buf, e.Consumer)
	}
	if e.Seq != 0 {
		buf = append(buf, `,"seq":`...)
		buf = strconv.AppendUint(buf, e.Seq, 10)
	}
	if e.Deliveries != 0 {
		buf = append(buf, `,"deliveries":`...)
		buf = strconv.AppendUint(buf, e.Deliveries, 10)
	}
	for _, f := range [...]struct{ name, value string }{{`,"reason":`, e.Reason}, {`,"leader":`, e.Leader}, {`,"user":`, e.User}} {
		if f.value != "" {
			buf = append(buf, f.name...)
			buf = appendString(buf, f.value)
		}
	}
	buf = append(buf, `,"text":`...)
	buf = appendString(buf, e.Text)
	buf = append(buf, `,"subject":`...)
	buf = appendString(buf, e.Subject)
	buf = append(buf, `,"from":`...)
	buf = appendString(buf, e.From)
	buf = append(buf, `,"from_seq":`...)
	buf = strconv.AppendUint(buf, e.FromSeq, 10)
	if e.Recovered {
		buf = append(buf, `,"recovered":true`...)
	}
	if e.Advisory != nil {
		buf = append(buf, `,"advisory":`...)
		buf = appendRaw(buf, e.Advisory)
	}
	if e.Audit != nil {
		buf = append(buf, `,"audit":`...)
		buf = appendRaw(buf, e.Audit)
	}
	return append(buf, "}\n"...)
}

// appendRaw appends a JSON document compact, as encoding/json writes a
// json.RawMessage.
func appendRaw(buf []byte, raw []byte) []byte {
	w := bytes.NewBuffer(buf)
	if err := json.Compact(w, raw); err != nil {
		return append(buf, "null"...)
	}
	return w.Bytes()
}

// appendString appends s as a JSON string. Valid UTF-8 without U+2028 and
// U+2029 (all but the rarest text) is escaped here; the rest goes through
// encoding/json, which replaces invalid bytes and escapes those two.
func appendString(buf []byte, s string) []byte {
	if !utf8.ValidString(s) || containsLineSeparator(s) {
		b, _ := json.Marshal(s)
		return append(buf, b...)
	}
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"':
			buf = append(buf, '\\', '"')
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

func containsLineSeparator(s string) bool {
	// U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
	for i := 0; i+2 < len(s); i++ {
		if s[i] == 0xe2 && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
			return true
		}
	}
	return false
}
