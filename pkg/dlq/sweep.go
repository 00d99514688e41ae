package dlq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/mover"
)

// The sweep, by job: this file is what a sweep is (its config, records,
// summary and items) and Sweep, which puts it together;
// sweep_feed.go: what comes in (the capture durable's advisories, the dry
// run's gets of them, --scan's finds in scan.go) and in which order;
// sweep_stages.go: the pipeline each dead message goes through;
// sweep_policy.go: what the sweep decides (what a get or a publish means
// for the record, what to delete, what to acknowledge, how to count).

// SweepConfig says what to sweep.
type SweepConfig struct {
	Stream string
	// Consumers narrows the sweep to these consumers' dead messages.
	Consumers []string
	// DeleteSource removes swept messages from a limits stream too.
	DeleteSource bool
	// Scan also looks for dead messages whose advisories were never
	// captured (workqueue and interest streams).
	Scan   bool
	DryRun bool
	// Max stops after this many dead messages (0: all).
	Max int
	// Rate limits copies per second (0: as fast as possible).
	Rate    float64
	LockTTL time.Duration
	// Batch is how many advisories are handled together (default 256).
	Batch int
	// OnRecord hears of every dead message, in the order handled.
	OnRecord func(Record)
	// Progress is called after every batch.
	Progress func(SweepSummary)
}

// Statuses of a Record.
const (
	StatusMoved        = "moved"
	StatusAlreadyMoved = "already_moved"
	StatusGone         = "gone"
	StatusFailed       = "failed"
	StatusWouldMove    = "would_move"
	// StatusTooLarge: the copy with its provenance headers would exceed
	// the server's max_payload. The DLQ holds the headers and a pointer
	// (HeaderPayloadOmitted); the message stays in the source.
	StatusTooLarge = "too_large"
)

// Source actions of a Record.
const (
	SourceDeleted = "deleted"
	SourceKept    = "kept"
)

// Record is what happened to one dead message.
type Record struct {
	Stream     string `json:"stream"`
	StreamSeq  uint64 `json:"stream_seq"`
	Subject    string `json:"subject,omitempty"`
	Consumer   string `json:"consumer"`
	Reason     string `json:"reason"`
	TermReason string `json:"term_reason,omitempty"`
	Deliveries uint64 `json:"deliveries"`
	FoundBy    string `json:"found_by"`
	Status     string `json:"status"`
	Source     string `json:"source,omitempty"`
	SourceNote string `json:"source_note,omitempty"`
	DLQStream  string `json:"dlq_stream"`
	DLQSeq     uint64 `json:"dlq_seq,omitempty"`
	Size       int    `json:"size"`
	Error      string `json:"error,omitempty"`
}

// SweepSummary counts what a sweep did.
type SweepSummary struct {
	Stream        string   `json:"stream"`
	DLQStream     string   `json:"dlq_stream"`
	Retention     string   `json:"retention"`
	Found         int      `json:"found"`
	Moved         int      `json:"moved"`
	AlreadyMoved  int      `json:"already_moved"`
	Gone          int      `json:"gone_before_sweep"`
	Failed        int      `json:"failed"`
	TooLarge      int      `json:"too_large"`
	WouldMove     int      `json:"would_move,omitempty"`
	SourceDeleted int      `json:"source_deleted"`
	SourceKept    int      `json:"source_kept"`
	Duplicates    int      `json:"duplicate_advisories"`
	Ignored       int      `json:"ignored_advisories"`
	ScanSkipped   []string `json:"scan_skipped,omitempty"`
	Bytes         int64    `json:"bytes"`
	Seconds       float64  `json:"seconds"`
}

// item is one advisory (or scanned message) on its way through the
// pipeline: a dead message to move, or an advisory with nothing to do of
// its own (pass), acknowledged in its turn.
type item struct {
	adv Advisory
	// ack is the advisory's message: nil for a scanned message and in a
	// dry run.
	ack jetstream.Msg
	// pass: nothing to move; the advisory was ignored, or is a duplicate
	// of the dead message whose outcome is orig.
	pass passKind
	orig *outcome
	// out is this dead message's outcome, which its duplicates look at.
	out *outcome
	rec Record
	src *envelope.Message
	// pub is the copy on its way through the window, from the publish
	// stage to the settle stage.
	pub *mover.Pub
	// scanned: found by --scan, not by an advisory.
	scanned bool
	// tooLarge: the copy was refused for its size, and the DLQ holds its
	// pointer copy (or already did).
	tooLarge bool
	// limit names the limit the copy exceeds, for the record's note;
	// "" is the server's max_payload.
	limit string
	// rowEnd: the next dead message fed is not the one at the next
	// stream sequence (see prefetch).
	rowEnd bool
}

type passKind uint8

const (
	passNone passKind = iota
	passIgnored
	passDuplicate
)

// outcome is whether a dead message was handled (moved, already moved,
// gone, too large) by this run. The last stage sets it, in order, so a
// duplicate advisory behind it sees it set or not for good.
type outcome struct{ done bool }

type sweeper struct {
	js        jetstream.JetStream
	api       *jsapi.Client
	win       *mover.Window
	cfg       SweepConfig
	n         Names
	retention jetstream.RetentionPolicy
	limiter   *rate.Limiter
	slice     int
	start     time.Time

	// Fed by the feeding stage alone.
	// seen: by stream sequence (every dead message admitted is of the
	// swept stream), the first item of each dead message.
	seen     map[uint64]*outcome
	admitted int
	// lastDelivery is the consumer sequence of the last advisory received
	// from the durable; lost: the durable delivered advisories this sweep
	// never received (see received).
	lastDelivery uint64
	lost         bool
	// The publish stage's own.
	stopped bool
	// The other consumers of an interest stream, read again when older
	// than neededAge (a delete stage reads them).
	needMu sync.Mutex
	needAt time.Time
	needed map[string]*jetstream.ConsumerInfo
	// The last stage's own.
	sum      SweepSummary
	finished int
	// held: the advisory acknowledged last, whose acknowledgement is sent
	// with the next one's, or confirmed at the end of the run (see ack);
	// unacked: the advisories this run left unacknowledged on purpose
	// (failed, interrupted, a duplicate of one not handled).
	held    jetstream.Msg
	unacked int
	// direct: the source answers direct gets, and dead messages at
	// consecutive sequences are got with batched direct gets (see
	// prefetch).
	direct bool
}

// Sweep moves the dead messages announced by the captured advisories (and,
// with Scan, found in the consumers' state) into the DLQ stream. Killed at
// any point and run again, it ends as one uninterrupted run would have.
// Cancelled, it stops taking advisories, finishes what is in flight and
// returns ctx's error with the summary.
func Sweep(ctx context.Context, js jetstream.JetStream, cfg SweepConfig) (sum *SweepSummary, err error) {
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	n, err := Resolve(ctx, js, cfg.Stream)
	if err != nil {
		return nil, err
	}
	src, err := sourceStream(ctx, js, cfg.Stream, cfg.Consumers)
	if err != nil {
		return nil, err
	}
	s := &sweeper{js: js, api: jsapi.New(js), cfg: cfg, n: n, retention: src.CachedInfo().Config.Retention, start: time.Now(), seen: map[uint64]*outcome{}}
	s.sum = SweepSummary{Stream: cfg.Stream, DLQStream: n.DLQ, Retention: RetentionName(s.retention)}
	if cfg.Scan && s.retention == jetstream.LimitsPolicy {
		return nil, fmt.Errorf("%w: --scan works on workqueue and interest streams only: stream %q has limits retention, where a message whose advisory was never captured "+
			"cannot be told apart from one that was processed; sweep without --scan, and copy a known time window of failures with jetctl replay %s --from-time T1 --to-time T2",
			ErrInvalid, cfg.Stream, cfg.Stream)
	}
	if cfg.Rate > 0 {
		// Slices of a quarter second's worth of dead messages, one slice
		// every quarter second, the first one too: never more than the
		// rate in any second, and a slice goes through the pipeline
		// together.
		s.slice = max(1, int(cfg.Rate/4))
		s.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), s.slice)
		s.limiter.AllowN(time.Now(), s.slice)
		cfg.Batch = min(cfg.Batch, max(1, int(cfg.Rate)))
		s.cfg.Batch = cfg.Batch
	}
	durable, filters, err := s.durable(ctx)
	if err != nil {
		return nil, err
	}
	s.direct = src.CachedInfo().Config.AllowDirect

	if !cfg.DryRun {
		lock, lerr := lease.Acquire(ctx, js, SweepLockKey(cfg.Stream), cfg.LockTTL, "jetctl dlq unlock --stream "+cfg.Stream)
		if lerr != nil {
			return nil, fmt.Errorf("stream %q: another sweep is running: %w", cfg.Stream, lerr)
		}
		defer lock.Release(context.WithoutCancel(ctx))
		var cancel context.CancelFunc
		ctx, cancel = lock.WithLease(ctx)
		defer cancel()
		// A lost lease is a failure with its reason, not an interruption.
		defer func() {
			if lost := lock.LostErr(); lost != nil {
				err = fmt.Errorf("stream %q: sweep %w", cfg.Stream, lost)
			}
		}()
		// Advisories a killed sweep had fetched but not acked come back now,
		// not after the ack wait.
		if err := s.resetDurable(ctx, durable); err != nil {
			return nil, err
		}
	}

	var scanned []*item
	if cfg.Scan {
		if scanned, err = s.scan(ctx); err != nil {
			return &s.sum, err
		}
		s.arrange(scanned)
	}
	err = s.run(ctx, func(push func(*item) bool) error {
		for i, it := range scanned {
			scanned[i] = nil
			if !push(it) {
				return nil
			}
		}
		if cfg.DryRun {
			return s.dryRunAdvisories(ctx, durable, filters, push)
		}
		return s.fromDurable(ctx, durable, push)
	})
	// Advisories the durable delivered and this sweep never received wait
	// out the ack wait: now that everything it did receive is done (or
	// failed, and left for the next run), reset the durable to its ack
	// floor and read on from there. What was handled already comes back
	// as duplicate advisories, acknowledged once its message is done.
	// The same goes for acknowledgements the server did not keep (a
	// server that stops abandons those still queued for the durable):
	// the durable's ack floor is the sweep's checkpoint, so a sweep that
	// ends well has every advisory it handled acknowledged as the server
	// sees it (see acksKept).
	for again := 0; err == nil && ctx.Err() == nil && !cfg.DryRun && (cfg.Max == 0 || s.admitted < cfg.Max); again++ {
		if !s.lost {
			var pending int
			if pending, err = s.acksKept(ctx, durable); err != nil || pending == 0 {
				break
			}
			if again == transientAttempts {
				err = fmt.Errorf("stream %q: consumer %q: %d advisories handled by this sweep are still pending acknowledgement after %d readings again (the server did not keep their acknowledgements); run the sweep again",
					n.Capture, durable, pending, transientAttempts)
				break
			}
			logctx.From(ctx).Debug("dlq sweep: the durable has advisories pending acknowledgement that the sweep acknowledged; resetting it to its ack floor to read them again",
				"stream", n.Capture, "consumer", durable, "pending", pending)
		} else {
			if again == transientAttempts {
				break
			}
			logctx.From(ctx).Debug("dlq sweep: the durable delivered advisories that never reached the sweep; resetting it to its ack floor to read them again",
				"stream", n.Capture, "consumer", durable)
		}
		s.lost, s.lastDelivery = false, 0
		if err = s.resetDurable(ctx, durable); err != nil {
			break
		}
		err = s.run(ctx, func(push func(*item) bool) error { return s.fromDurable(ctx, durable, push) })
	}
	s.sum.Seconds = time.Since(s.start).Seconds()
	if err == nil {
		err = ctx.Err()
	}
	return &s.sum, err
}

// acksKept returns how many advisories the durable holds pending
// acknowledgement beyond those the last run left unacknowledged on
// purpose (0: the server has every acknowledgement the sweep sent). The
// run ended with a confirmed acknowledgement (confirmAcks), so the
// durable's count is not behind the acknowledgements of this connection.
func (s *sweeper) acksKept(ctx context.Context, durable string) (int, error) {
	var ci *jetstream.ConsumerInfo
	err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func(ctx context.Context) error {
		c, err := s.js.Consumer(ctx, s.n.Capture, durable)
		if err == nil {
			ci = c.CachedInfo()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
	}
	return max(0, ci.NumAckPending-s.unacked), nil
}

// resetDurable resets the capture durable to its ack floor, riding out a
// server restart or an election as the sweep's other requests do (the
// reset after lost deliveries comes right after one).
func (s *sweeper) resetDurable(ctx context.Context, durable string) error {
	err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func(ctx context.Context) error {
		_, err := s.js.ResetConsumer(ctx, s.n.Capture, durable)
		return err
	})
	if err != nil {
		return fmt.Errorf("stream %q: consumer %q: reset to ack floor: %w", s.n.Capture, durable, err)
	}
	return nil
}
