package kv

import (
	"bytes"
	"encoding/json"
	"testing"
)

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
