package factory

import (
	"io"
	"os"

	"golang.org/x/term"
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
