package factory

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

// IOStreams are a command's standard streams and what is known about them.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	StdinTTY  bool
	StdoutTTY bool
	StderrTTY bool
	// NoColor is set by NO_COLOR.
	NoColor bool
}

// System returns the process's streams.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		StdinTTY:  isTerminal(os.Stdin),
		StdoutTTY: isTerminal(os.Stdout),
		StderrTTY: isTerminal(os.Stderr),
		NoColor:   os.Getenv("NO_COLOR") != "",
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// ColorOut reports whether stdout may carry colour.
func (s *IOStreams) ColorOut() bool { return s.StdoutTTY && !s.NoColor }

// CanPrompt reports whether the user can be asked a question: both stdin and
// stdout are terminals.
func (s *IOStreams) CanPrompt() bool { return s.StdinTTY && s.StdoutTTY }

// Accept is the answer a confirmation takes as "go on".
type Accept int

const (
	// AcceptYes takes "y" or "yes", in any case: the rule for every
	// command that asks, unless it says otherwise.
	AcceptYes Accept = iota
	// AcceptWordYes takes only the word "yes", as terraform's apply does:
	// apply changes a whole server, and a stray "y" should not.
	AcceptWordYes
)

// Confirm asks question on stderr, so that stdout stays data, and reads
// one line from stdin; it reports whether the answer accepts. Callers check
// CanPrompt first and ask for --yes without a terminal.
func (s *IOStreams) Confirm(question string, accept Accept) bool {
	hint := " [y/N] "
	if accept == AcceptWordYes {
		hint = " Only 'yes' is accepted: "
	}
	fmt.Fprint(s.ErrOut, question+hint)
	line, _ := bufio.NewReader(s.In).ReadString('\n')
	answer := strings.TrimSpace(line)
	if accept == AcceptWordYes {
		return answer == "yes"
	}
	answer = strings.ToLower(answer)
	return answer == "y" || answer == "yes"
}

// ConfirmChange asks before a change that cannot be taken back (what says
// which): with yes it goes on at once; without a terminal it is a usage
// error that asks for --yes (or --dry-run); an answer other than y/yes is a
// usage error too. Each refusal says that nothing was changed.
func (s *IOStreams) ConfirmChange(yes bool, what string) error {
	if yes {
		return nil
	}
	if !s.CanPrompt() {
		return exitcode.UsageErrorf("%s: pass --yes when not running in a terminal (or --dry-run to see what it would do); nothing was changed", what)
	}
	if !s.Confirm(what+". Continue?", AcceptYes) {
		return exitcode.UsageErrorf("cancelled; nothing was changed")
	}
	return nil
}

// AcceptedYes adds --yes to a changing command that never asks: one whose
// change is undone as easily as made, or only adds (a pause, a resume,
// the streams dlq setup and events record create, a replay's copies).
// Every changing command takes --yes, so that a runbook or CI job can
// pass it to each alike (docs/output.md); here it changes nothing.
func AcceptedYes(fs *pflag.FlagSet) {
	fs.Bool("yes", false, "accepted, as by every changing command: this one never asks")
}
