package output

import (
	"bytes"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"orders.paid", "orders.paid"},
		{"ünïcødé ✓", "ünïcødé ✓"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\rb\nc\td\x00\x7f", `a\rb\nc\td\x00\x7f`},
		{"c1 \u0085 \u009b", `c1 \u0085 \u009b`},
		{"bad \xc3\x28 \xff", `bad \xc3( \xff`},
		{"real \uFFFD stays", "real \uFFFD stays"},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got, want := EscapeLines("l1 \x1b[2J\n\tl2"), "l1 \\x1b[2J\n\tl2"; got != want {
		t.Errorf("EscapeLines = %q, want %q", got, want)
	}
}

// Table cells are escaped: a header value cannot change the terminal.
func TestTableEscapesCells(t *testing.T) {
	var buf bytes.Buffer
	p := &Printer{Out: &buf, Format: "table"}
	tbl := Table{Header: []string{"name"}}
	tbl.Row("\x1b[31mred")
	if err := p.Print(nil, func() []Table { return []Table{tbl} }); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsRune(buf.Bytes(), 0x1b) {
		t.Fatalf("table output holds an ESC byte: %q", buf.String())
	}
	if !bytes.Contains(buf.Bytes(), []byte(`\x1b[31mred`)) {
		t.Fatalf("table output = %q, want the escaped cell", buf.String())
	}
}
