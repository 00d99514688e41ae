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

// Valid says what encoding/json says, on documents and near misses.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range validCorpus {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
		if validFast([]byte(s)) && !json.Valid([]byte(s)) {
			t.Errorf("validFast(%q) is true, encoding/json says invalid", s)
		}
	}
}

var validCorpus = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `1E+2`, `-1.0e-3`, `true`, `false`, `null`,
	` {"a": [1, 2.5, "x", true, null, {"b": {}}]} `, "\t[\n1\r\n]\n",
	`{"a":1,"a":2}`, `"\u00e9\n\t\"\\\/\b\f\r"`, `"\uD83D\uDE80"`, `"grüße 🚀"`, "\"\xff\"",
	`12345678901234567890`, `1e400`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `--1`, `0x10`, `1 2`, `{} {}`, `[1,]`, `[,1]`, `{"a":1,}`,
	`{"a" 1}`, `{a:1}`, `{"a":}`, `[`, `{`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\x01b\"", `tru`, `nul`, `falsey`,
	`[1]]`, `{"a":[}`, `NaN`, `Infinity`, `-Infinity`, "", " ", "\x00",
}

func FuzzValid(f *testing.F) {
	for _, s := range validCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", data, got, want)
		}
	})
}
