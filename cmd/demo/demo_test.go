package demo

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

// A step's command line ends with the exit code the step says (0 when it
// says none), or the demo stops there.
func TestStepExit(t *testing.T) {
	for _, c := range []struct {
		name    string
		exit    int
		got     error
		wantErr string
	}{
		{"critical expected and got", 2, exitcode.Silent(2), ""},
		{"critical expected, ok got", 2, nil, "exited 0, want 2"},
		{"critical expected, unknown got", 2, exitcode.Silent(3), "exited 3, want 2"},
		{"ok expected and got", 0, nil, ""},
		{"ok expected, critical got", 0, exitcode.Silent(2), "demo step 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(context.Context, string, []string, io.Writer) error { return c.got }
			var out strings.Builder
			err := Run(context.Background(), &out, run, []Step{{Title: "check", Args: []string{"check"}, Exit: c.exit}})
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Run: %v\n%s", err, out.String())
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("Run: %v, want an error with %q", err, c.wantErr)
			}
			if c.wantErr == "" && c.exit != 0 && !strings.Contains(out.String(), "(exit 2)\n") {
				t.Errorf("no (exit 2) line in:\n%s", out.String())
			}
		})
	}
}
