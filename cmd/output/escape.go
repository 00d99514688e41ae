package output

import (
	"strconv"
	"strings"
	"unicode"
)

// Escape makes s safe to print on a terminal: control characters (ESC
// sequences, carriage returns, newlines, tabs, NUL, DEL, C1 controls) and
// invalid UTF-8 bytes are written as Go escapes (\x1b, \r, \u0085, \xff).
// Text without any passes through unchanged. Table cells get it (Table.Row);
// use it for every other value from a message or a server in human
// output. JSON output escapes by itself.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == unicode.ReplacementChar && !validAt(s, i):
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EscapeLines is Escape for multi-line text: newlines and tabs stay.
func EscapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = Escape(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}

func needsEscape(s string) bool {
	for i, r := range s {
		if unicode.IsControl(r) || (r == unicode.ReplacementChar && !validAt(s, i)) {
			return true
		}
	}
	return false
}

// validAt reports whether the U+FFFD at byte i of s is really there (three
// bytes), rather than a decoding error of one invalid byte.
func validAt(s string, i int) bool {
	return strings.HasPrefix(s[i:], "\uFFFD")
}
