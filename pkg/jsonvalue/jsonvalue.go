// Package jsonvalue decodes stored values and payloads into the generic
// form a jq program sees: map[string]any, []any, string, json.Number (so
// that large integers stay exact), bool and nil. It is what encoding/json
// gives with UseNumber, about three times faster for the documents most
// streams and buckets hold; kv, replay and stream tail share it.
package jsonvalue

import (
	"bytes"
	"encoding/json"
)

// MayBe reports whether data starts (after white space) as a JSON document
// can. It spares text and binary values encoding/json's scan, whose error
// path allocates.
func MayBe(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return true
		}
		return false
	}
	return false
}

// Valid reports whether data is exactly one JSON document, as
// encoding/json's Valid does (which it asks only when its own scan is not
// sure).
func Valid(data []byte) bool { return MayBe(data) && (validFast(data) || json.Valid(data)) }

// Decode decodes data when it is exactly one JSON document; ok is false
// when it is not (text, binary, empty, or a document followed by more).
func Decode(data []byte) (v any, ok bool) {
	if v, err := decodeFast(data); err == nil {
		return v, true
	}
	if !Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}
