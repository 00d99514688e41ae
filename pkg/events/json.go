package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jetctl/jetctl/pkg/envelope"
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
	buf = envelope.AppendJSONString(buf, e.Type)
	if e.Stream != "" {
		buf = append(buf, `,"stream":`...)
		buf = envelope.AppendJSONString(buf, e.Stream)
	}
	if e.Consumer != "" {
		buf = append(buf, `,"consumer":`...)
		buf = envelope.AppendJSONString(buf, e.Consumer)
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
			buf = envelope.AppendJSONString(buf, f.value)
		}
	}
	buf = append(buf, `,"text":`...)
	buf = envelope.AppendJSONString(buf, e.Text)
	buf = append(buf, `,"subject":`...)
	buf = envelope.AppendJSONString(buf, e.Subject)
	buf = append(buf, `,"from":`...)
	buf = envelope.AppendJSONString(buf, e.From)
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
