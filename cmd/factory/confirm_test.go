package factory

import (
	"bytes"
	"strings"
	"testing"
)

func TestConfirm(t *testing.T) {
	for _, c := range []struct {
		answer string
		accept Accept
		want   bool
		prompt string
	}{
		{"y\n", AcceptYes, true, "Purge? [y/N] "},
		{"YES\n", AcceptYes, true, "Purge? [y/N] "},
		{"no\n", AcceptYes, false, "Purge? [y/N] "},
		{"", AcceptYes, false, "Purge? [y/N] "},
		{"yes\n", AcceptWordYes, true, "Purge? Only 'yes' is accepted: "},
		{"y\n", AcceptWordYes, false, "Purge? Only 'yes' is accepted: "},
		{"Yes\n", AcceptWordYes, false, "Purge? Only 'yes' is accepted: "},
	} {
		var out, errOut bytes.Buffer
		s := &IOStreams{In: strings.NewReader(c.answer), Out: &out, ErrOut: &errOut}
		if got := s.Confirm("Purge?", c.accept); got != c.want {
			t.Errorf("answer %q (accept %d): got %v, want %v", c.answer, c.accept, got, c.want)
		}
		if out.Len() != 0 || errOut.String() != c.prompt {
			t.Errorf("answer %q: stdout %q, stderr %q; want the prompt %q on stderr only", c.answer, out.String(), errOut.String(), c.prompt)
		}
	}
}
