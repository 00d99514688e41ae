package kv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// Kind is how jetctl reads a value: as JSON, as text, or as opaque bytes.
type Kind string

// The kinds of value.
const (
	KindJSON   Kind = "json"
	KindText   Kind = "text"
	KindBinary Kind = "binary"
)

// KindOf classifies a value. JSON wins over text, so `5` and `"x"` are JSON
// while `ready` is text; text is valid UTF-8 without control characters other
// than tab, newline and carriage return; everything else is binary.
func KindOf(data []byte) Kind {
	if mayBeJSON(data) && json.Valid(data) {
		return KindJSON
	}
	if isText(data) {
		return KindText
	}
	return KindBinary
}

// mayBeJSON reports whether data starts (after white space) as a JSON
// document can. It spares text and binary values encoding/json's scan,
// whose error path allocates: a filtered tail classifies every revision.
func mayBeJSON(data []byte) bool {
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

func isText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, b := range data {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' || b == 0x7f {
			return false
		}
	}
	return true
}

// BinaryInfo stands for a binary value in diffs: its size and SHA-256.
type BinaryInfo struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

func binaryInfo(data []byte) BinaryInfo {
	sum := sha256.Sum256(data)
	return BinaryInfo{Size: len(data), SHA256: hex.EncodeToString(sum[:])}
}

// decodeJSON decodes a value already known to be JSON, keeping numbers exact.
func decodeJSON(data []byte) (any, error) {
	if v, err := decodeFast(data); err == nil {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// Decoded is how a value appears in JSON output: the decoded document for
// JSON, a string for text, and a BinaryInfo for binary values.
func Decoded(data []byte) any {
	switch KindOf(data) {
	case KindJSON:
		if v, err := decodeJSON(data); err == nil {
			return v
		}
	case KindText:
		return string(data)
	}
	return binaryInfo(data)
}

// Raw is how a whole value appears in JSON output without decoding it: the
// JSON document as it is stored (the encoder compacts it), a string for
// text, and a BinaryInfo for binary values. It costs far less than Decoded
// for many values.
func Raw(data []byte) any {
	switch KindOf(data) {
	case KindJSON:
		return json.RawMessage(data)
	case KindText:
		return string(data)
	}
	return binaryInfo(data)
}
