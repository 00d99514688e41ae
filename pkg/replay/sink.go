package replay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
}

// Write counts m under its subject.
func (s *StatsSink) Write(_ context.Context, m *envelope.Message) error {
	if s.Subjects == nil {
		s.Subjects = make(map[string]uint64)
	}
	s.Subjects[m.Subject]++
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
	// MaxInFlight bounds unacknowledged publishes (default 1024).
	MaxInFlight int
	// Retries is how often a failed publish is retried (default 3).
	Retries int
	// MsgIDPrefix starts each copy's Nats-Msg-Id (default "replay").
	MsgIDPrefix string
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
	switch {
	case strings.Contains(to, "{subject}"):
		return strings.ReplaceAll(to, "{subject}", subject)
	case strings.HasSuffix(to, ".>"):
		return strings.TrimSuffix(to, ">") + subject
	default:
		return to
	}
}

// MaxConsecutiveFailures stops a republish whose target keeps refusing:
// retrying every remaining message would only take long and fail alike.
const MaxConsecutiveFailures = 10

// ErrTargetFailing is returned when MaxConsecutiveFailures publishes in a
// row failed after their retries.
var ErrTargetFailing = errors.New("target keeps failing")

type inflight struct {
	seq   uint64
	msg   *nats.Msg
	token uint64 // 0: not sent
	// done and err hold the outcome once it has arrived.
	done bool
	err  error
}

// Publisher republishes messages asynchronously with a bounded number in
// flight, checks every acknowledgement in order, and retries failures.
// Each copy has Nats-Msg-Id <prefix>:<stream>:<seq>, so that a re-run
// inside the target's duplicate window stores nothing twice.
type Publisher struct {
	js          jetstream.JetStream
	cfg         PublishConfig
	acks        *acks
	ackTimeout  time.Duration
	idPrefix    string
	pending     []inflight
	failed      []uint64
	firstFailed uint64
	consecutive int
	// lastErr keeps the last publish error for the summary.
	lastErr error
}

// NewPublisher returns a publisher to js.
func NewPublisher(js jetstream.JetStream, cfg PublishConfig) *Publisher {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	} else if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.MsgIDPrefix == "" {
		cfg.MsgIDPrefix = "replay"
	}
	timeout := js.Options().DefaultTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Publisher{js: js, cfg: cfg, ackTimeout: timeout}
}

// Copy builds the message published for m.
func (p *Publisher) Copy(m *envelope.Message) *nats.Msg {
	hdr := envelope.CopyHeader(m.Header)
	if !p.cfg.NoProvenance {
		envelope.SetProvenance(hdr, m)
	}
	id := make([]byte, 0, len(p.cfg.MsgIDPrefix)+len(m.Stream)+22)
	id = append(append(append(append(id, p.cfg.MsgIDPrefix...), ':'), m.Stream...), ':')
	id = strconv.AppendUint(id, m.Seq, 10)
	hdr[jetstream.MsgIDHeader] = []string{string(id)}
	return &nats.Msg{Subject: TargetSubject(p.cfg.To, m.Subject), Header: hdr, Data: m.Data}
}

// Write publishes a copy of m.
func (p *Publisher) Write(ctx context.Context, m *envelope.Message) error {
	if p.acks == nil {
		a, err := newAcks(p.js.Conn())
		if err != nil {
			return err
		}
		p.acks = a
	}
	msg := p.Copy(m)
	token, err := p.acks.publish(msg)
	if err != nil {
		token = 0 // not sent: settled by a synchronous retry
	}
	p.pending = append(p.pending, inflight{seq: m.Seq, msg: msg, token: token})
	for len(p.pending) > 0 && (len(p.pending) >= p.cfg.MaxInFlight || p.headDone()) {
		if err := p.settleHead(ctx); err != nil {
			return err
		}
	}
	return nil
}

// headDone reports, without waiting, whether the oldest publish has its
// outcome, and keeps that outcome.
func (p *Publisher) headDone() bool {
	h := &p.pending[0]
	if h.done || h.token == 0 {
		return true
	}
	h.done, h.err = p.acks.poll(h.token)
	return h.done
}

// settleHead waits for the oldest publish and retries it if it failed.
func (p *Publisher) settleHead(ctx context.Context) error {
	h := p.pending[0]
	p.pending = p.pending[1:]
	err := h.err
	switch {
	case h.done:
	case h.token != 0:
		err = p.acks.wait(ctx, h.token, p.ackTimeout)
		if ctx.Err() != nil {
			p.pending = append([]inflight{h}, p.pending...)
			return ctx.Err()
		}
	default:
		err = fmt.Errorf("not sent")
	}
	if err == nil {
		p.consecutive = 0
		return nil
	}
	h.msg.Reply = ""
	for attempt := 0; attempt < p.cfg.Retries; attempt++ {
		if _, err = p.js.PublishMsg(ctx, h.msg); err == nil {
			p.consecutive = 0
			return nil
		}
		if ctx.Err() != nil {
			p.pending = append([]inflight{h}, p.pending...)
			return ctx.Err()
		}
	}
	p.lastErr = err
	p.failed = append(p.failed, h.seq)
	if p.firstFailed == 0 {
		p.firstFailed = h.seq
	}
	p.consecutive++
	if p.consecutive >= MaxConsecutiveFailures {
		return fmt.Errorf("%w: %d publishes in a row failed (last: %v)", ErrTargetFailing, p.consecutive, err)
	}
	return nil
}

func (p *Publisher) settleAll(ctx context.Context) error {
	for len(p.pending) > 0 {
		if err := p.settleHead(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Floor is the last sequence before the oldest unacknowledged or failed
// publish: everything up to it is stored in the target.
func (p *Publisher) Floor(lastRead uint64) uint64 {
	floor := lastRead
	if len(p.pending) > 0 {
		floor = p.pending[0].seq - 1
	}
	if p.firstFailed > 0 && p.firstFailed-1 < floor {
		floor = p.firstFailed - 1
	}
	return floor
}

// Close waits for every publish in flight.
func (p *Publisher) Close(ctx context.Context) error {
	err := p.settleAll(ctx)
	if p.acks != nil {
		p.acks.close()
	}
	return err
}

// Failed lists the sequences whose copies could not be stored.
func (p *Publisher) Failed() []uint64 { return p.failed }

// LastError is the last publish error, for reporting failures.
func (p *Publisher) LastError() error { return p.lastErr }
