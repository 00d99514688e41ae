package factory

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/cmd/exitcode"
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

func TestConfirmChange(t *testing.T) {
	const what = "rewind redelivers ORDERS > p's messages"
	for _, c := range []struct {
		yes, tty bool
		answer   string
		want     string
	}{
		{true, false, "", ""},
		{false, false, "y\n", what + ": pass --yes when not running in a terminal (or --dry-run to see what it would do); nothing was changed"},
		{false, true, "y\n", ""},
		{false, true, "n\n", "cancelled; nothing was changed"},
	} {
		s := &IOStreams{In: strings.NewReader(c.answer), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, StdinTTY: c.tty, StdoutTTY: c.tty}
		err := s.ConfirmChange(c.yes, what)
		if c.want == "" {
			if err != nil {
				t.Errorf("yes=%v tty=%v answer %q: %v", c.yes, c.tty, c.answer, err)
			}
			continue
		}
		if exitcode.Of(err) != exitcode.Usage || err.Error() != c.want {
			t.Errorf("yes=%v tty=%v answer %q: %v, want exit 2 with %q", c.yes, c.tty, c.answer, err, c.want)
		}
	}
}
