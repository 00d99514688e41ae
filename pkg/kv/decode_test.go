package kv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// decodeFast gives what encoding/json gives with UseNumber, or hands the
// document over to it.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `0`, `-0`, `-12.5e+3`, `1E9`, `12345678901234567890123`, `true`, `false`, `null`,
		`"plain"`, `"é"`, `"tab\tescaped"`, `"\u00e9\ud83d\ude00"`, "\"bad \xff utf8\"",
		` { "a" : [ 1 , 2.0 , { "b" : null } ] , "c" : "x" , "a" : "dup" } `,
		`{"id":1,"spec":{"replicas":3,"image":"nginx:1.25"},"labels":["a","b"],"empty":{},"none":[]}`,
		`[[[[[]]]]]`, `01`, `1.`, `-`, `.5`, `1e`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `tru`, `"open`, `{} x`, ``,
	}
	for _, doc := range docs {
		data := []byte(doc)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		wantErr := dec.Decode(&want)
		if wantErr == nil && !json.Valid(data) {
			// Trailing data: decodeJSON is only given valid documents.
			continue
		}
		got, err := decodeJSON(data)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%q: error %v, encoding/json %v", doc, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, want %#v", doc, got, want)
		}
		if fast, err := decodeFast(data); err == nil && !reflect.DeepEqual(fast, want) {
			t.Errorf("%q: fast path %#v, want %#v", doc, fast, want)
		}
	}
}

// writeJSONValue's shortcuts write what the encoder writes.
func TestWriteJSONValueShortcuts(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", `q"uote`, `back\slash`, "<html>&", "tab\t", "é", "\u2028", "\x7f", "bad \xff",
		json.Number("12"), json.Number("-0.5e+10"), json.Number(""), json.Number("01"), json.Number("1."),
		ChangeAdd, ChangeOp(`odd"op`), 3, 2.5, map[string]any{"a": []any{1}},
	}
	for _, v := range values {
		var got, want bytes.Buffer
		if err := writeJSONValue(&got, v); err != nil {
			if _, encErr := json.Marshal(v); encErr == nil {
				t.Errorf("%#v: %v", v, err)
			}
			continue
		}
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Errorf("%#v: encoder fails (%v), shortcut writes %s", v, err, got.String())
			continue
		}
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got.Bytes(), w) {
			t.Errorf("%#v: got %s, want %s", v, got.Bytes(), w)
		}
	}
}
