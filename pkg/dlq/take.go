package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// ReasonTaken is the reason of a DLQ copy made by Take.
const ReasonTaken = "taken"

// HeaderTakenBy says who took a message out of a consumer's way
// (user@host), on the DLQ copy Take makes.
const HeaderTakenBy = "Jetctl-Dlq-Taken-By"

// TakeConfig names the one message to take out of one consumer's way.
type TakeConfig struct {
	Stream   string
	Consumer string
	Seq      uint64
	// By is who takes it (user@host), for the copy's provenance.
	By     string
	DryRun bool
	// AtStep, when set, hears "copied" once the copy is stored and before
	// the +TERM (the kill-and-rerun test's hook).
	AtStep func(step string)
}

// Statuses of a TakeResult.
const (
	StatusTaken        = "taken"
	StatusWouldTake    = "would_take"
	StatusAlreadyTaken = "already_taken"
)

// TakeResult is what Take did.
type TakeResult struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Subject   string `json:"subject"`
	Consumer  string `json:"consumer"`
	Retention string `json:"retention"`
	DLQStream string `json:"dlq_stream"`
	DLQSeq    uint64 `json:"dlq_seq"`
	// Copy is copied, already_copied (an earlier run's) or would_copy.
	Copy   string `json:"copy"`
	Status string `json:"status"`
	// AckFloorBefore and AckFloorAfter are the consumer's ack floor
	// (stream sequence) before and after.
	AckFloorBefore uint64 `json:"ack_floor_before"`
	AckFloorAfter  uint64 `json:"ack_floor_after"`
	// Source says what becomes of the message in the stream: kept for
	// the other consumers (limits; interest while another needs it), or
	// removed by the server (workqueue; interest when none needs it).
	Source string `json:"source"`
	Size   int    `json:"size"`
}

// Copy actions of a TakeResult.
const (
	CopyCopied        = "copied"
	CopyAlreadyCopied = "already_copied"
	CopyWouldCopy     = "would_copy"
)

// ErrNotPending: the message is not one the consumer holds (not yet
// delivered, already acknowledged or given up on, not on its filter).
// A refusal of it is also ErrInvalid: nothing was changed.
var ErrNotPending = errors.New("not pending for the consumer")

type notPending struct{ msg string }

func (e *notPending) Error() string   { return e.msg }
func (e *notPending) Unwrap() []error { return []error{ErrNotPending, ErrInvalid} }

func refuseTake(format string, args ...any) error {
	return &notPending{msg: "refusing to take it: " + fmt.Sprintf(format, args...) + "; nothing was changed"}
}

// Take takes one message out of one consumer's way: it copies it into the
// DLQ with provenance (reason "taken", written once per sequence, as a
// sweep's copy), then terminates it for that consumer alone with a +TERM
// on the consumer's ack subject for that stream sequence
// (TestFactTermOnAckSubjectTakesOneMessage). The consumer stops
// redelivering it and its ack floor moves on; other consumers are not
// touched: a limits stream keeps the message for them. Killed between
// the copy and the +TERM, a rerun finds the copy and sends the +TERM; run
// again after it, it says already taken.
func Take(ctx context.Context, js jetstream.JetStream, cfg TakeConfig) (*TakeResult, error) {
	if cfg.Seq == 0 {
		return nil, fmt.Errorf("%w: --seq must be a stream sequence (1 or more)", ErrInvalid)
	}
	n, err := Resolve(ctx, js, cfg.Stream)
	if err != nil {
		return nil, err
	}
	src, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	cons, err := src.Consumer(ctx, cfg.Consumer)
	if err != nil {
		return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, err)
	}
	ci := cons.CachedInfo()
	retention := src.CachedInfo().Config.Retention
	res := &TakeResult{Stream: cfg.Stream, Seq: cfg.Seq, Consumer: cfg.Consumer, Retention: RetentionName(retention), DLQStream: n.DLQ,
		AckFloorBefore: ci.AckFloor.Stream, AckFloorAfter: ci.AckFloor.Stream}
	if ci.Config.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("%w: stream %q: consumer %q acknowledges %s, not explicitly: it holds no single message to take (an ack of one would acknowledge everything below it)",
			ErrInvalid, cfg.Stream, cfg.Consumer, ci.Config.AckPolicy)
	}
	a := jsapi.New(js)

	// An earlier run's copy: the message may be gone from a workqueue or
	// interest stream since, and the consumer past it.
	existing, err := a.MsgGet(ctx, n.DLQ, jsapi.MsgGetRequest{LastFor: n.DLQSubject(cfg.Seq)})
	switch {
	case err == nil:
		res.Copy, res.DLQSeq, res.Subject, res.Size = CopyAlreadyCopied, existing.Seq, existing.Header.Get(envelope.SourceSubject), len(existing.Data)
	case !errors.Is(err, jsapi.ErrNoMessage):
		return nil, fmt.Errorf("stream %q: %w", n.DLQ, err)
	}
	pending := cfg.Seq > ci.AckFloor.Stream && cfg.Seq <= ci.Delivered.Stream
	if res.Copy == CopyAlreadyCopied && !pending {
		res.Status, res.Source = StatusAlreadyTaken, sourceAfter(retention, ci, cfg.Seq, nil)
		return res, nil
	}

	m, err := a.MsgGet(ctx, cfg.Stream, jsapi.MsgGetRequest{Seq: cfg.Seq})
	if errors.Is(err, jsapi.ErrNoMessage) {
		return nil, fmt.Errorf("stream %q: sequence %d: %w", cfg.Stream, cfg.Seq, jetstream.ErrMsgNotFound)
	}
	if err != nil {
		return nil, err
	}
	res.Subject, res.Size = m.Subject, len(m.Data)
	filters := ConsumerFilters(ci.Config)
	switch {
	case len(filters) > 0 && !streamread.SubjectMatchesAny(filters, m.Subject):
		return nil, refuseTake("stream %q: sequence %d (%s) is not on consumer %q's filter (%s)",
			cfg.Stream, cfg.Seq, m.Subject, cfg.Consumer, strings.Join(filters, ", "))
	case cfg.Seq <= ci.AckFloor.Stream:
		return nil, refuseTake("stream %q: consumer %q's ack floor is at sequence %d: sequence %d was acknowledged or given up on already",
			cfg.Stream, cfg.Consumer, ci.AckFloor.Stream, cfg.Seq)
	case cfg.Seq > ci.Delivered.Stream:
		return nil, refuseTake("stream %q: consumer %q has delivered up to sequence %d: sequence %d was never delivered to it, so it holds nothing there",
			cfg.Stream, cfg.Consumer, ci.Delivered.Stream, cfg.Seq)
	}
	res.Source = sourceAfter(retention, ci, cfg.Seq, otherInfos(ctx, src, cfg.Consumer, m.Subject))
	adv := Advisory{Type: TypeTerminated, Stream: cfg.Stream, Consumer: cfg.Consumer, StreamSeq: cfg.Seq, Reason: takeReason(cfg.By)}
	copyMsg := BuildCopy(n, m, adv, time.Now())
	copyMsg.Header.Set(HeaderReason, ReasonTaken)
	copyMsg.Header.Del(HeaderDeliveries)
	if cfg.By != "" {
		copyMsg.Header.Set(HeaderTakenBy, cfg.By)
	}
	if res.Copy == "" && WireSize(copyMsg) > js.Conn().MaxPayload() {
		return nil, fmt.Errorf("%w: stream %q: sequence %d (%d bytes) is too large to copy with its provenance headers within the server's max_payload (%d bytes); nothing was changed",
			ErrInvalid, cfg.Stream, cfg.Seq, len(m.Data), js.Conn().MaxPayload())
	}
	if cfg.DryRun {
		res.Status = StatusWouldTake
		if res.Copy == "" {
			res.Copy = CopyWouldCopy
		}
		return res, nil
	}

	// The copy first, written once: then the +TERM. Killed in between,
	// the message is in the DLQ and still held; the rerun terminates it.
	if res.Copy == "" {
		ack, err := js.PublishMsg(ctx, copyMsg)
		switch {
		case alreadyCopied(ack, err):
			res.Copy = CopyAlreadyCopied
			if dm, err := a.MsgGet(ctx, n.DLQ, jsapi.MsgGetRequest{LastFor: n.DLQSubject(cfg.Seq)}); err == nil {
				res.DLQSeq = dm.Seq
			}
		case err != nil:
			return nil, fmt.Errorf("stream %q: copy of sequence %d not stored: %w", n.DLQ, cfg.Seq, err)
		default:
			res.Copy, res.DLQSeq = CopyCopied, ack.Sequence
		}
	}
	if cfg.AtStep != nil {
		cfg.AtStep("copied")
	}
	if err := Terminate(ctx, js.Conn(), cfg.Stream, cfg.Consumer, cfg.Seq, takeReason(cfg.By), a.Timeout); err != nil {
		return res, fmt.Errorf("stream %q: consumer %q: copied to %s, but the +TERM of sequence %d failed (run the same command again): %w",
			cfg.Stream, cfg.Consumer, n.DLQ, cfg.Seq, err)
	}
	res.Status = StatusTaken
	if after, err := cons.Info(ctx); err == nil {
		res.AckFloorAfter = after.AckFloor.Stream
	}
	return res, nil
}

// Terminate sends +TERM for stream sequence seq on consumer's ack
// subject and waits for the server's answer. The server terminates seq
// for that consumer when it is pending there, and changes nothing when
// it is not (TestFactTermOnAckSubjectTakesOneMessage).
func Terminate(ctx context.Context, nc *nats.Conn, stream, consumer string, seq uint64, reason string, timeout time.Duration) error {
	subject := fmt.Sprintf("$JS.ACK.%s.%s.0.%d.0.0.0", stream, consumer, seq)
	body := "+TERM"
	if reason != "" {
		body += " " + reason
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := nc.RequestWithContext(rctx, subject, []byte(body))
	return err
}

func takeReason(by string) string {
	if by == "" {
		return "taken by jetctl dlq take"
	}
	return "taken by jetctl dlq take (" + by + ")"
}

// otherInfos are the other consumers of the stream whose filters take
// subject.
func otherInfos(ctx context.Context, st jetstream.Stream, consumer, subject string) map[string]*jetstream.ConsumerInfo {
	out := map[string]*jetstream.ConsumerInfo{}
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.Name != consumer && filtersOverlap(ConsumerFilters(ci.Config), subject) {
			out[ci.Name] = ci
		}
	}
	return out
}

// sourceAfter says what becomes of the message in the stream once the
// consumer has terminated it.
func sourceAfter(retention jetstream.RetentionPolicy, _ *jetstream.ConsumerInfo, seq uint64, others map[string]*jetstream.ConsumerInfo) string {
	switch retention {
	case jetstream.WorkQueuePolicy:
		return "removed: a workqueue stream removes a terminated message"
	case jetstream.InterestPolicy:
		var need []string
		for name, ci := range others {
			if ci.AckFloor.Stream < seq {
				need = append(need, name)
			}
		}
		if len(need) > 0 {
			slices.Sort(need)
			return "kept for " + quoteList(need)
		}
		if others == nil {
			return "removed once no other consumer needs it (interest)"
		}
		return "removed: no other consumer needs it (interest)"
	default:
		return "kept: limits retention, the other consumers still receive it"
	}
}
