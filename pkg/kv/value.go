package kv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/jetctl/jetctl/pkg/jsonvalue"
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
	if jsonvalue.Valid(data) {
		return KindJSON
	}
	if isText(data) {
		return KindText
	}
	return KindBinary
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

// Decoded is how a value appears in JSON output: the decoded document for
// JSON, a string for text, and a BinaryInfo for binary values.
func Decoded(data []byte) any {
	if v, ok := jsonvalue.Decode(data); ok {
		return v
	}
	if isText(data) {
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
