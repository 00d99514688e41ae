// Package envelope is jetctl's representation of a stored stream message:
// its JSON-lines form (shared by replay dumps, stream tail and dlq), and the
// headers jetctl adds or moves aside when it copies a message.
package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/jsonvalue"
)

// Message is a message as stored in a stream.
type Message struct {
	Stream  string
	Seq     uint64
	Subject string
	Time    time.Time
	Header  nats.Header
	Data    []byte
}

// Provenance headers that a copy carries. jetctl never stores Nats-*
// provenance in a copy: direct get appends headers of those names and
// clients read the first one.
const (
	SourceStream  = "Jetctl-Source-Stream"
	SourceSeq     = "Jetctl-Source-Seq"
	SourceSubject = "Jetctl-Source-Subject"
	SourceTime    = "Jetctl-Source-Time"
	// OrigPrefix is put before the name of a header the server acts on
	// when a copy keeps it.
	OrigPrefix = "Jetctl-Orig-"
)

// Renames reports whether command cmd's copy keeps header name (exact
// case, as the server matches it) aside, as Jetctl-Orig-<Name>, where the
// server does not act on it and a reader still finds it: its fate in
// cmd's column of the header table is rename, own (the command then sets
// its own value), ttl (the command then sets what --ttl gives) or refuse
// (a command refuses such a message before sending anything; were one to
// reach a copy, it would still not act).
func Renames(cmd Command, name string) bool {
	if len(name) < 5 || name[:5] != "Nats-" {
		return false
	}
	switch FateOf(cmd, name) {
	case Rename, Own, TTL, Refuse:
		return true
	}
	return false
}

// CopyHeader returns the copy of h that command cmd publishes, as its
// column of the header table says (CopyHeaderInto). The copy has room for
// extra more headers (the caller's provenance) without growing.
func CopyHeader(cmd Command, h nats.Header, extra int) nats.Header {
	out := make(nats.Header, len(h)+extra)
	CopyHeaderInto(cmd, out, h)
	return out
}

// CopyHeaderInto adds to out the headers of h as command cmd's column of
// the header table says (docs/headers.md): those it renames (Renames) go
// to Jetctl-Orig-<Name>, those it drops are left out, and every other
// header (keep, markers, read, and those the table does not name) goes
// under its own name. A publisher that reuses its header maps (replay
// --to) copies without allocating a map. A renamed header whose
// Jetctl-Orig-<Name> h holds already (a copy of a copy: a redriven dead
// letter carries the redrive's own Nats-Msg-Id and the application's set
// aside) is left out: the earlier original's stays, whatever the map's
// order.
func CopyHeaderInto(cmd Command, out, h nats.Header) {
	for k, vs := range h {
		name := k
		if len(k) >= 5 && k[:5] == "Nats-" {
			switch FateOf(cmd, k) {
			case Rename, Own, TTL, Refuse:
				name = OrigPrefix + k
				if _, earlier := h[name]; earlier {
					continue
				}
			case Drop:
				continue
			}
		}
		out[name] = append([]string(nil), vs...)
	}
}

// RestoreHeader undoes CopyHeader and drops the given provenance headers:
// Jetctl-Orig-<Name> become <Name> again.
func RestoreHeader(h nats.Header, drop ...string) nats.Header {
	dropSet := make(map[string]bool, len(drop))
	for _, d := range drop {
		dropSet[d] = true
	}
	out := make(nats.Header, len(h))
	for k, vs := range h {
		if dropSet[k] {
			continue
		}
		name := k
		if len(k) > len(OrigPrefix) && k[:len(OrigPrefix)] == OrigPrefix {
			name = k[len(OrigPrefix):]
		}
		out[name] = append([]string(nil), vs...)
	}
	return out
}

// SetProvenance records where m came from in h.
func SetProvenance(h nats.Header, m *Message) {
	h.Set(SourceStream, m.Stream)
	h.Set(SourceSeq, strconv.FormatUint(m.Seq, 10))
	h.Set(SourceSubject, m.Subject)
	h.Set(SourceTime, m.Time.UTC().Format(time.RFC3339Nano))
}

// Line is the JSON-lines form of a message.
type Line struct {
	Stream  string              `json:"stream"`
	Seq     uint64              `json:"seq"`
	Subject string              `json:"subject"`
	Time    string              `json:"time"`
	Headers map[string][]string `json:"headers,omitempty"`
	// HeadersB64 holds the headers exactly when a name or value is not
	// valid UTF-8 (Headers then shows such bytes as U+FFFD): the base64 of
	// the NATS header block, "NATS/1.0\r\nName: value\r\n...\r\n".
	HeadersB64 *string `json:"headers_b64,omitempty"`
	// Data is the payload's JSON document, or its text as a JSON string
	// (see appendData); DataB64 its exact bytes, which win when both are
	// there.
	Data    json.RawMessage `json:"data,omitempty"`
	DataB64 *string         `json:"data_b64,omitempty"`
	Size    int             `json:"size"`
}

// AppendJSON appends m's JSON line (with a trailing newline) to buf. It is
// hand-written because replay writes hundreds of thousands of lines a
// second: fields in a fixed order, header names sorted.
func (m *Message) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"stream":`...)
	buf = AppendJSONString(buf, m.Stream)
	buf = append(buf, `,"seq":`...)
	buf = strconv.AppendUint(buf, m.Seq, 10)
	buf = append(buf, `,"subject":`...)
	buf = AppendJSONString(buf, m.Subject)
	buf = append(buf, `,"time":"`...)
	buf = m.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, '"')
	if len(m.Header) > 0 {
		buf = append(buf, `,"headers":{`...)
		names := m.headerNames()
		exact := headersValidUTF8(m.Header)
		for i, k := range names {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendJSONString(buf, validUTF8(k, exact))
			buf = append(buf, ":["...)
			for j, v := range m.Header[k] {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = AppendJSONString(buf, validUTF8(v, exact))
			}
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
		if !exact {
			buf = append(buf, `,"headers_b64":"`...)
			buf = base64.StdEncoding.AppendEncode(buf, headerBlock(m.Header, names))
			buf = append(buf, '"')
		}
	}
	buf = appendData(buf, m.Data)
	buf = append(buf, `,"size":`...)
	buf = strconv.AppendInt(buf, int64(len(m.Data)), 10)
	buf = append(buf, "}\n"...)
	return buf
}

// appendData appends the payload's fields by the rule every command's JSON
// follows (docs/output.md):
//   - a payload that is one JSON document is "data": that document, as it
//     is stored (key order, number formatting, escapes, white space all
//     kept), the value jq, dlq show and kv tail see;
//   - other UTF-8 is "data": the text, as a JSON string;
//   - anything else is "data_b64": the bytes in base64.
//
// A JSON document that a line cannot hold as it is, or that would read
// back as something else, is written compact, and "data_b64" follows with
// the exact bytes, which is what --from-file loads: white space before or
// after it (a trailing newline), a line break in it (pretty-printed), or a
// JSON string (whose "data" would read back as the text without quotes).
func appendData(buf, data []byte) []byte {
	if !utf8.Valid(data) {
		return appendB64(buf, data)
	}
	buf = append(buf, `,"data":`...)
	if !jsonvalue.Valid(data) {
		return AppendJSONString(buf, data)
	}
	if verbatim(data) {
		return append(buf, data...)
	}
	w := bytes.NewBuffer(buf)
	_ = json.Compact(w, data) // data is valid JSON: it cannot fail
	return appendB64(w.Bytes(), data)
}

func appendB64(buf, data []byte) []byte {
	buf = append(buf, `,"data_b64":"`...)
	buf = base64.StdEncoding.AppendEncode(buf, data)
	return append(buf, '"')
}

// verbatim reports whether a JSON document can stand in a JSON line as it
// is and read back as the same bytes: no white space around it, no line
// break in it (JSON strings hold none, so any is white space), and not a
// JSON string (read back as the text it holds).
func verbatim(doc []byte) bool {
	switch doc[0] {
	case '"', ' ', '\t', '\n', '\r':
		return false
	}
	switch doc[len(doc)-1] {
	case ' ', '\t', '\n', '\r':
		return false
	}
	return bytes.IndexByte(doc, '\n') < 0 && bytes.IndexByte(doc, '\r') < 0
}

// Generic is the message as jq sees it: the JSON line's object, with data
// decoded as JSON when the payload is JSON. Numbers are ints, the only
// integer type gojq takes.
func (m *Message) Generic() map[string]any {
	obj := map[string]any{
		"stream":  m.Stream,
		"seq":     int(m.Seq),
		"subject": m.Subject,
		"time":    m.Time.UTC().Format(time.RFC3339Nano),
		"size":    len(m.Data),
	}
	if len(m.Header) > 0 {
		obj["headers"] = m.genericHeaders()
		if !headersValidUTF8(m.Header) {
			obj["headers_b64"] = base64.StdEncoding.EncodeToString(headerBlock(m.Header, m.headerNames()))
		}
	}
	name, v := m.genericData()
	obj[name] = v
	return obj
}

// Field is one top-level field of Generic's object, nil when it has none,
// built alone: a --filter on .subject or .headers never decodes the data
// (see pkg/jqpred).
func (m *Message) Field(name string) (any, error) {
	switch name {
	case "stream":
		return m.Stream, nil
	case "seq":
		return int(m.Seq), nil
	case "subject":
		return m.Subject, nil
	case "time":
		return m.Time.UTC().Format(time.RFC3339Nano), nil
	case "size":
		return len(m.Data), nil
	case "headers":
		if len(m.Header) == 0 {
			return nil, nil
		}
		return m.genericHeaders(), nil
	case "headers_b64":
		if len(m.Header) == 0 || headersValidUTF8(m.Header) {
			return nil, nil
		}
		return base64.StdEncoding.EncodeToString(headerBlock(m.Header, m.headerNames())), nil
	case "data", "data_b64":
		if got, v := m.genericData(); got == name {
			return v, nil
		}
	}
	return nil, nil
}

func (m *Message) genericHeaders() map[string]any {
	exact := headersValidUTF8(m.Header)
	hdr := make(map[string]any, len(m.Header))
	for k, vs := range m.Header {
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = validUTF8(v, exact)
		}
		hdr[validUTF8(k, exact)] = list
	}
	return hdr
}

// headerNames are m's header names, sorted.
func (m *Message) headerNames() []string {
	names := make([]string, 0, len(m.Header))
	for k := range m.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// headersValidUTF8 reports whether every header name and value is valid
// UTF-8, so that the JSON "headers" object holds them exactly.
func headersValidUTF8(h nats.Header) bool {
	for k, vs := range h {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

// validUTF8 is s, with invalid bytes as U+FFFD unless exact says there are
// none (the common case, without a copy).
func validUTF8(s string, exact bool) string {
	if exact {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// headerBlock encodes h as NATS does on the wire, names in the given order.
func headerBlock(h nats.Header, names []string) []byte {
	block := []byte("NATS/1.0\r\n")
	for _, k := range names {
		for _, v := range h[k] {
			block = append(append(append(append(block, k...), ": "...), v...), "\r\n"...)
		}
	}
	return append(block, "\r\n"...)
}

// genericData is the payload's field in Generic's object: "data" with the
// decoded JSON document or the text, or "data_b64".
func (m *Message) genericData() (string, any) {
	// gojq takes json.Number as it is: big integers stay exact.
	if v, ok := jsonvalue.Decode(m.Data); ok {
		return "data", v
	}
	if utf8.Valid(m.Data) {
		return "data", string(m.Data)
	}
	return "data_b64", base64.StdEncoding.EncodeToString(m.Data)
}

// ParseLine reads a JSON line written by AppendJSON back into a message.
func ParseLine(line []byte) (*Message, error) {
	var l Line
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, fmt.Errorf("not a jetctl JSON line: %w", err)
	}
	m := &Message{Stream: l.Stream, Seq: l.Seq, Subject: l.Subject}
	if l.Subject == "" {
		return nil, fmt.Errorf("JSON line has no subject")
	}
	if l.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil {
			return nil, fmt.Errorf("JSON line time %q: %w", l.Time, err)
		}
		m.Time = t
	}
	if len(l.Headers) > 0 {
		m.Header = nats.Header(l.Headers)
	}
	if l.HeadersB64 != nil {
		block, err := base64.StdEncoding.DecodeString(*l.HeadersB64)
		if err != nil {
			return nil, fmt.Errorf("JSON line headers_b64: %w", err)
		}
		hdr, err := nats.DecodeHeadersMsg(block)
		if err != nil {
			return nil, fmt.Errorf("JSON line headers_b64: %w", err)
		}
		m.Header = hdr
	}
	switch {
	case l.DataB64 != nil:
		data, err := base64.StdEncoding.DecodeString(*l.DataB64)
		if err != nil {
			return nil, fmt.Errorf("JSON line data_b64: %w", err)
		}
		m.Data = data
	case len(l.Data) > 0 && l.Data[0] == '"':
		// Text (and, in dumps written before data held JSON documents,
		// every payload).
		var text string
		if err := json.Unmarshal(l.Data, &text); err != nil {
			return nil, fmt.Errorf("JSON line data: %w", err)
		}
		m.Data = []byte(text)
	case len(l.Data) > 0:
		m.Data = []byte(l.Data)
	}
	return m, nil
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s to buf as a JSON string, byte for byte as
// encoding/json writes it with HTML escaping off (the rule of every JSON
// output, cmd/output): \" \\ \b \f \n \r \t, other control characters
// as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd. It is jetctl's one JSON string escaper, for the
// lines written by hand because they are written by the hundred thousand
// (replay, dlq, the events timeline), and held to encoding/json by
// TestAppendJSONStringMatchesEncodingJSON.
func AppendJSONString[T string | []byte](buf []byte, s T) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// At most utf8.UTFMax bytes: a []byte's copy stays on the stack.
		end := min(i+utf8.UTFMax, len(s))
		r, size := utf8.DecodeRuneInString(string(s[i:end]))
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
