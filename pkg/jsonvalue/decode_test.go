package jsonvalue

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// Decode gives what encoding/json gives with UseNumber for exactly one
// document, and decodeFast the same or hands the document over.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
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
		wantOK := dec.Decode(&want) == nil && json.Valid(data)
		got, ok := Decode(data)
		if ok != wantOK {
			t.Errorf("%q: ok %v, encoding/json %v", doc, ok, wantOK)
			continue
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, want %#v", doc, got, want)
		}
		if fast, err := decodeFast(data); err == nil && !reflect.DeepEqual(fast, want) {
			t.Errorf("%q: fast path %#v, want %#v", doc, fast, want)
		}
	}
}

func TestMayBe(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1}`: true, ` [1]`: true, "\r\n\t-1.5e3": true, `true`: true, `false`: true, `null`: true,
		`0`: true, `9`: true, `"x"`: true, `nulls`: true, // a start, not a document
		`tea`: true, `ready`: false, `   `: false, ``: false, "\ufeff{}": false, "\x00{}": false,
	} {
		if got := MayBe([]byte(in)); got != want {
			t.Errorf("MayBe(%q) = %v, want %v", in, got, want)
		}
	}
}
