package streamflags

import (
	"context"
	"fmt"
	"io"

	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/envelope"
)

// Skips is the one rule of replay and stream tail for a --jq or --filter
// program that fails on a message (say, .data.order_id on a text payload):
// the message is skipped (--jq prints nothing for it, --filter does not
// keep it), the first failure is one warning on stderr naming its
// sequence, and the run goes on; replay's summary says how many.
type Skips struct {
	w                    io.Writer
	JQ, Filter           uint64
	firstJQ, firstFilter uint64
}

// NewSkips reports failures to w.
func NewSkips(w io.Writer) *Skips { return &Skips{w: w} }

func (s *Skips) jqFailed(m *envelope.Message, err error) {
	s.JQ++
	if s.JQ == 1 {
		s.firstJQ = m.Seq
		fmt.Fprintf(s.w, "jetctl: warning: --jq failed on seq %d (%v); messages it fails on are skipped\n", m.Seq, err)
	}
}

func (s *Skips) filterFailed(seq uint64, warning string) {
	s.Filter++
	if s.Filter == 1 {
		s.firstFilter = seq
		io.WriteString(s.w, warning)
	}
}

// Summary is the clause replay's summary line adds, "" when nothing failed.
func (s *Skips) Summary() string {
	out := ""
	if s.JQ > 0 {
		out += fmt.Sprintf("; --jq failed on %s (first seq %d), skipped", output.Plural(s.JQ, "message"), s.firstJQ)
	}
	if s.Filter > 0 {
		out += fmt.Sprintf("; --filter failed on %s (first seq %d), not kept", output.Plural(s.Filter, "message"), s.firstFilter)
	}
	return out
}

// MessageFilter compiles --filter for stream messages (nil for none): the
// fields a simple program reads are built alone, anything else runs on
// the whole message. A failure on a message goes to skips, and no match.
// A program still running when ctx ends stops, and matches nothing.
func MessageFilter(ctx context.Context, expr string, skips *Skips) (func(*envelope.Message) (bool, error), error) {
	filter, err := output.CompileFilter(expr, "messages it fails on")
	if filter == nil || err != nil {
		return nil, err
	}
	return func(m *envelope.Message) (bool, error) {
		keep, err := filter.Keep(ctx, m, func() (any, error) { return m.Generic(), nil })
		if err != nil {
			skips.filterFailed(m.Seq, filter.Warning(fmt.Sprintf("seq %d", m.Seq), err))
		}
		return keep, nil
	}, nil
}

// JQFormat formats each message with the --jq program for a LineSink; a
// message the program fails on prints nothing and goes to skips.
func JQFormat(p *output.Printer, skips *Skips) func(buf []byte, m *envelope.Message) ([]byte, error) {
	return func(buf []byte, m *envelope.Message) ([]byte, error) {
		n := len(buf)
		out, err := p.AppendJQ(buf, m.Generic())
		if err != nil {
			skips.jqFailed(m, err)
			return out[:n], nil
		}
		return out, nil
	}
}

// RawFormat prints payloads only, one a line (--raw).
func RawFormat(buf []byte, m *envelope.Message) ([]byte, error) {
	return append(append(buf, m.Data...), '\n'), nil
}
