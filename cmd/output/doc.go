package output

import (
	"bytes"
	"encoding/json"
	"io"
)

// DocField is one field of a JSON document written as it is computed: a
// value known up front, a list whose items come one at a time, or a value
// known only once the lists before it are written. Set one of Value, List
// and After.
type DocField struct {
	Name  string
	Value any
	List  func(item func(any) error) error
	After func() any
}

// WriteDoc writes fields as one JSON object, in order, holding one item at
// a time, for documents too big to build first (a bucket diff): exactly
// what Printer writes for the whole document, indented for -o json
// (two-space indent) and on one line for -o jsonl, HTML characters as they
// are in both.
func WriteDoc(w io.Writer, fields []DocField, indent bool) error {
	d := docWriter{w: w, indent: indent}
	d.depth1 = d.encoder("  ")
	d.depth2 = d.encoder("    ")
	d.write("{")
	for i, f := range fields {
		if i > 0 {
			d.write(",")
		}
		d.newline("  ")
		d.write(`"` + f.Name + `":`)
		if indent {
			d.write(" ")
		}
		switch {
		case f.List != nil:
			d.write("[")
			n := 0
			err := f.List(func(v any) error {
				if n > 0 {
					d.write(",")
				}
				n++
				d.newline("    ")
				d.encode(d.depth2, v)
				return d.err
			})
			if err != nil {
				return err
			}
			if n > 0 {
				d.newline("  ")
			}
			d.write("]")
		case f.After != nil:
			d.encode(d.depth1, f.After())
		default:
			d.encode(d.depth1, f.Value)
		}
	}
	d.newline("")
	d.write("}\n")
	return d.err
}

type docWriter struct {
	w              io.Writer
	indent         bool
	buf            bytes.Buffer
	depth1, depth2 *json.Encoder
	err            error
}

func (d *docWriter) encoder(prefix string) *json.Encoder {
	enc := json.NewEncoder(&d.buf)
	enc.SetEscapeHTML(false)
	if d.indent {
		enc.SetIndent(prefix, "  ")
	}
	return enc
}

func (d *docWriter) write(s string) {
	if d.err == nil {
		_, d.err = io.WriteString(d.w, s)
	}
}

func (d *docWriter) newline(prefix string) {
	if d.indent {
		d.write("\n" + prefix)
	}
}

// encode writes v with enc, without the newline Encode ends with.
func (d *docWriter) encode(enc *json.Encoder, v any) {
	if d.err != nil {
		return
	}
	d.buf.Reset()
	if d.err = enc.Encode(v); d.err != nil {
		return
	}
	_, d.err = d.w.Write(bytes.TrimSuffix(d.buf.Bytes(), []byte("\n")))
}
