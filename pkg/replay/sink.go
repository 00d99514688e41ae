package replay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// Sink receives the messages of a replay.
type Sink interface {
	// Write takes one message; it may finish it later (asynchronously).
	Write(ctx context.Context, m *envelope.Message) error
	// Floor returns the sequence up to which every message is finished,
	// given that lastRead is the last sequence read: the checkpoint.
	Floor(lastRead uint64) uint64
	// Close finishes everything in flight.
	Close(ctx context.Context) error
	// Failed lists the sequences that could not be written.
	Failed() []uint64
}

// LineSink writes each message with a format function, buffered.
type LineSink struct {
	w      *bufio.Writer
	format func(buf []byte, m *envelope.Message) ([]byte, error)
	buf    []byte
}

// NewLineSink writes JSON lines (or what format makes of each message) to w.
// A nil format writes envelope JSON lines.
func NewLineSink(w io.Writer, format func(buf []byte, m *envelope.Message) ([]byte, error)) *LineSink {
	if format == nil {
		format = func(buf []byte, m *envelope.Message) ([]byte, error) { return m.AppendJSON(buf), nil }
	}
	return &LineSink{w: bufio.NewWriterSize(w, 256<<10), format: format}
}

// Write formats m and buffers it.
func (s *LineSink) Write(_ context.Context, m *envelope.Message) error {
	var err error
	s.buf, err = s.format(s.buf[:0], m)
	if err != nil {
		return err
	}
	_, err = s.w.Write(s.buf)
	return err
}

// Floor flushes, so that a checkpoint never runs ahead of the output.
func (s *LineSink) Floor(lastRead uint64) uint64 {
	if s.w.Flush() != nil {
		return 0
	}
	return lastRead
}

// Close flushes the buffer.
func (s *LineSink) Close(context.Context) error { return s.w.Flush() }

// Failed is always empty: a write error stops the replay.
func (s *LineSink) Failed() []uint64 { return nil }

// StatsSink counts what would be written: the dry run.
type StatsSink struct {
	Subjects map[string]uint64
	// Messages and Bytes count what would be written.
	Messages, Bytes uint64
	// Skip, when set, says which messages a republish would not copy;
	// Expired and Markers count them, apart from the rest.
	Skip             func(*envelope.Message) Skip
	Expired, Markers uint64
}

// Write counts m under its subject, or as skipped.
func (s *StatsSink) Write(_ context.Context, m *envelope.Message) error {
	if s.Skip != nil {
		switch s.Skip(m) {
		case SkipExpired:
			s.Expired++
			return nil
		case SkipMarker:
			s.Markers++
			return nil
		}
	}
	if s.Subjects == nil {
		s.Subjects = make(map[string]uint64)
	}
	s.Subjects[m.Subject]++
	s.Messages++
	s.Bytes += uint64(len(m.Data))
	return nil
}

// Floor is lastRead: counting finishes at once.
func (s *StatsSink) Floor(lastRead uint64) uint64 { return lastRead }

// Close does nothing.
func (s *StatsSink) Close(context.Context) error { return nil }

// Failed is always empty.
func (s *StatsSink) Failed() []uint64 { return nil }

// PublishConfig configures republishing.
type PublishConfig struct {
	// To is the target: a subject, a template with {subject}, or a prefix
	// mapping "prefix.>" that puts prefix before the original subject.
	To string
	// NoProvenance leaves out the Jetctl-Source-* headers.
	NoProvenance bool
	// TTL is what a copy does with the original's Nats-TTL (--ttl;
	// remaining by default: what is left of it, and a message whose TTL
	// has passed is skipped).
	TTL envelope.TTLMode
	// Markers is what a republish does with subject delete markers
	// (--markers).
	Markers MarkersMode
	// MaxInFlight bounds unacknowledged publishes (default 1024).
	MaxInFlight int
	// Retries is how often a publish that failed is retried (default 3).
	Retries int
	// MsgIDPrefix starts each copy's Nats-Msg-Id (default "replay"; see
	// NewMsgIDPrefix).
	MsgIDPrefix string
	// OnConnection, when set, is called when the target's connection goes
	// away (up false) and when it is back (up true, down for how long).
	OnConnection func(up bool, server string, down time.Duration)
}

// ValidateTarget checks a --to value without contacting anything.
func ValidateTarget(to string) error {
	if to == "" {
		return fmt.Errorf("empty target subject")
	}
	probe := TargetSubject(to, "a.b")
	for _, tok := range strings.Split(probe, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return fmt.Errorf("invalid target subject %q: use a subject, a template with {subject}, or a prefix mapping like restore.>", to)
		}
	}
	return nil
}

// TargetSubject maps an original subject to its target.
func TargetSubject(to, subject string) string {
	if !strings.Contains(to, "{subject}") && !strings.HasSuffix(to, ".>") {
		return to
	}
	return string(appendTargetSubject(nil, to, subject))
}

// appendTargetSubject appends TargetSubject(to, subject) to b.
func appendTargetSubject(b []byte, to, subject string) []byte {
	switch {
	case strings.Contains(to, "{subject}"):
		for {
			before, after, found := strings.Cut(to, "{subject}")
			b = append(b, before...)
			if !found {
				return b
			}
			b = append(b, subject...)
			to = after
		}
	case strings.HasSuffix(to, ".>"):
		return append(append(b, to[:len(to)-1]...), subject...)
	default:
		return append(b, to...)
	}
}
