package kv

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jetctl/jetctl/pkg/jsonvalue"
)

// AppendJSON appends e's JSON line (MarshalJSON's bytes and a newline) to
// buf. It is written out by hand because a tail prints hundreds of
// thousands of revisions a second; a test holds it to MarshalJSON.
func (e Entry) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"bucket":`...)
	buf = strconv.AppendQuote(buf, e.Bucket)
	buf = append(buf, `,"key":`...)
	buf = strconv.AppendQuote(buf, e.Key)
	buf = append(buf, `,"revision":`...)
	buf = strconv.AppendUint(buf, e.Revision, 10)
	buf = append(buf, `,"op":"`...)
	buf = append(buf, e.Op...)
	if e.Reason != "" {
		buf = append(buf, `","reason":`...)
		buf = strconv.AppendQuote(buf, e.Reason)
		buf = append(buf, `,"time":"`...)
	} else {
		buf = append(buf, `","time":"`...)
	}
	buf = e.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","size":`...)
	buf = strconv.AppendInt(buf, int64(len(e.Value)), 10)
	if e.Op == OpPut {
		// Compacting is also the JSON check (as KindOf's): one scan, not two.
		if jsonvalue.MayBe(e.Value) {
			mark := len(buf)
			w := bytes.NewBuffer(append(buf, `,"value":`...))
			if json.Compact(w, e.Value) == nil {
				return append(w.Bytes(), "}\n"...), nil
			}
			buf = w.Bytes()[:mark]
		}
		switch KindOf(e.Value) {
		case KindText:
			s, err := textJSON(e.Value)
			if err != nil {
				return nil, err
			}
			buf = append(append(buf, `,"value":`...), s...)
		default:
			buf = append(buf, `,"value_b64":"`...)
			buf = base64.StdEncoding.AppendEncode(buf, e.Value)
			buf = append(buf, '"')
		}
	}
	return append(buf, "}\n"...), nil
}

// textJSON is a text value as a JSON string, with <, > and & as they are,
// as -o json and replay's lines write them.
func textJSON(value []byte) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(value)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
