package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/mover"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// RedriveConfig says what to send back.
type RedriveConfig struct {
	DLQStream string
	Select    Select
	// To publishes to this subject instead of the original one.
	To   string
	Rate float64
	// Max stops after this many redriven messages (0: all).
	Max int
	// MaxRedrives refuses messages already redriven this many times (0: no limit).
	MaxRedrives int
	DryRun      bool
	// Keep leaves the DLQ copy in place after the redrive.
	Keep bool
	// AllConsumers sends every message to its original subject even where
	// other consumers of the source stream receive it there too. Without
	// it, a dead letter goes to its original subject only when no other
	// consumer receives it there, else to its consumer's retry subject
	// (see retry.go); a redrive that would reach other consumers is
	// refused (*RefusedRedrive) before anything is sent.
	AllConsumers bool
	// IncludeExpired sends a dead letter whose TTL has passed with its
	// original TTL again; without it, such a message is skipped
	// (StatusExpired) and left in the DLQ.
	IncludeExpired bool
	LockTTL        time.Duration
	// OnRecord hears of every selected message.
	OnRecord func(RedriveRecord)
	Progress func(RedriveSummary)
}

// Statuses of a RedriveRecord.
const (
	StatusRedriven     = "redriven"
	StatusWouldRedrive = "would_redrive"
	StatusRefused      = "refused"
	// StatusExpired: the original's TTL has passed; left in the DLQ.
	StatusExpired = "expired"
)

// RedriveRecord is what happened to one DLQ message.
type RedriveRecord struct {
	DLQStream    string `json:"dlq_stream"`
	DLQSeq       uint64 `json:"dlq_seq"`
	SourceStream string `json:"source_stream"`
	SourceSeq    uint64 `json:"source_seq"`
	Subject      string `json:"subject"`
	// OriginalSubject is set when Subject is a retry subject.
	OriginalSubject string `json:"original_subject,omitempty"`
	Redrives        int    `json:"redrives"`
	Status          string `json:"status"`
	// Stream and Seq are where the redriven message was stored.
	Stream     string `json:"stream,omitempty"`
	Seq        uint64 `json:"seq,omitempty"`
	Duplicate  bool   `json:"duplicate,omitempty"`
	DLQDeleted bool   `json:"dlq_deleted"`
	Size       int    `json:"size"`
	// TTL is the Nats-TTL the redriven message carries (or would): what
	// was left of the original's, or with --include-expired the
	// original's again; empty when the original had none.
	TTL   string `json:"ttl,omitempty"`
	Error string `json:"error,omitempty"`
}

// RedriveSummary counts what a redrive did. Redriven and Duplicates are
// what the target acknowledged: stored anew, or a duplicate of a message
// it already held (the same Nats-Msg-Id within its duplicate window: an
// earlier, interrupted redrive stored it, or this run's own publish whose
// acknowledgement was lost). The DLQ copy of either is deleted.
type RedriveSummary struct {
	DLQStream   string `json:"dlq_stream"`
	Selected    int    `json:"selected"`
	Redriven    int    `json:"redriven"`
	Duplicates  int    `json:"duplicates"`
	WouldRedriv int    `json:"would_redrive,omitempty"`
	Refused     int    `json:"refused"`
	Failed      int    `json:"failed"`
	// Expired counts the dead letters whose TTL had passed, left in the
	// DLQ (without IncludeExpired).
	Expired   int     `json:"expired"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"messages_per_second"`
}

type redriveItem struct {
	e   Entry
	rec RedriveRecord
	// pub is the message on its way through the window, from the publish
	// stage to the settle stage.
	pub *mover.Pub
	// send: publish it (not refused, not a dry run); skipped: interrupted
	// before it was sent, so nothing is reported; retry: to the retry
	// subject of its consumer.
	send, skipped, retry bool
	// others are the consumers besides its own that its original subject
	// would reach, when it is refused for them.
	others []string
	// ttl is the original's TTL.
	ttl deadTTL
}

// errMaxReached ends the read when Max messages are redriven.
var errMaxReached = errors.New("max reached")

// RedriveMsgID is the Nats-Msg-Id of the redrive of a DLQ message: a
// re-run within the target stream's duplicate window stores nothing twice.
func RedriveMsgID(dlqStream string, dlqSeq uint64) string {
	return fmt.Sprintf("redrive:%s:%d", dlqStream, dlqSeq)
}

// redriver is one redrive on its way: its policy (where each message
// goes, what is refused, what is deleted, how it counts) around a
// pipeline of mover's stages and window.
type redriver struct {
	js  jetstream.JetStream
	cfg RedriveConfig
	// route decides where a message goes (nil with To).
	route *router
	// rng is the part of the DLQ the redrive reads: fixed by the
	// preflight, so that the redrive sends only what it checked.
	rng streamread.Range
	// now is the redrive's start: a TTL that passes during the redrive
	// is found so when its message is sent (redriveTTL), not before.
	now time.Time
	// win publishes the messages (nil in a dry run); del deletes the DLQ
	// copies (nil in a dry run and with Keep).
	win *mover.Window
	del *piped

	start time.Time
	// The feed's own.
	admitted int
	// The publish stage's own.
	stopped bool
	// The last stage's own.
	sum      RedriveSummary
	reported int
}

// Redrive publishes the selected DLQ messages back to their original
// subjects and deletes each DLQ copy once its publish is acknowledged.
func Redrive(ctx context.Context, js jetstream.JetStream, cfg RedriveConfig) (sum *RedriveSummary, err error) {
	r := &redriver{js: js, cfg: cfg, start: time.Now(), sum: RedriveSummary{DLQStream: cfg.DLQStream}}
	r.now = r.start
	st, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.DLQStream, err)
	}
	work := context.WithoutCancel(ctx)
	// Where each message goes, decided, and a redrive that would reach
	// other consumers, or make the target act on other messages, refused
	// before anything changes.
	if cfg.To == "" {
		source := st.CachedInfo().Config.Metadata[MetaSource]
		if r.route, err = newRouter(ctx, js, source, cfg.AllConsumers); err != nil {
			return nil, err
		}
	}
	if r.rng, err = streamread.Resolve(ctx, js, streamread.Config{Stream: cfg.DLQStream}); err != nil {
		return nil, err
	}
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	if !cfg.DryRun {
		lock, lerr := lease.Acquire(ctx, js, RedriveLockKey(cfg.DLQStream), cfg.LockTTL, "jetctl dlq unlock --redrive --dlq-stream "+cfg.DLQStream)
		if lerr != nil {
			return nil, fmt.Errorf("stream %q: another redrive is running: %w", cfg.DLQStream, lerr)
		}
		defer lock.Release(work)
		var cancel context.CancelFunc
		ctx, cancel = lock.WithLease(ctx)
		defer cancel()
		// A lost lease is a failure with its reason, not an interruption.
		defer func() {
			if lost := lock.LostErr(); lost != nil {
				err = fmt.Errorf("stream %q: redrive %w", cfg.DLQStream, lost)
			}
		}()
	}
	a := jsapi.New(js)
	if !cfg.DryRun {
		// --rate: the window's bucket starts empty, so N messages take
		// N/rate seconds; it holds a quarter second's worth, so a stall
		// of the pipeline (or of a loaded machine) up to that long is
		// made up for, and the average rate kept.
		if r.win, err = mover.New(js, mover.Config{MaxPending: pipeDepth, AckWait: 2 * a.Timeout, Rate: cfg.Rate}); err != nil {
			return nil, err
		}
		defer r.win.Close()
	}
	if !cfg.DryRun && !cfg.Keep {
		if r.del, err = newPiped(work, js, a); err != nil {
			return nil, err
		}
		defer r.del.close()
	}

	err = r.run(ctx, work)
	r.sum.Seconds = time.Since(r.start).Seconds()
	if r.sum.Seconds > 0 {
		r.sum.PerSecond = float64(r.sum.Redriven) / r.sum.Seconds
	}
	if errors.Is(err, errMaxReached) {
		err = nil
	}
	if err == nil {
		err = ctx.Err()
	}
	return &r.sum, err
}

// run redrives what the feed selects, as a pipeline (the sweep's shape):
//
//	feed: read the DLQ, route, refuse
//	     -> publish (through the mover.Window, async, paced by --rate)
//	     -> settle: the acknowledgement, in order (the window's rules: no
//	        acknowledgement in time or a transient refusal, one more try)
//	     -> delete the DLQ copy (deleteWorkers at a time, through one pipe)
//	     -> count and report, in DLQ order
//
// A DLQ copy is deleted only after its publish is acknowledged;
// interrupted, what is not yet published is left in the DLQ.
func (r *redriver) run(ctx, work context.Context) error {
	in := make(chan *redriveItem, pipeDepth)
	var readErr error
	go func() {
		defer close(in)
		readErr = eachIn(ctx, r.js, r.rng, r.cfg.Select, func(e Entry) error {
			// Interrupted: take no new work; what is in flight is settled.
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.cfg.Max > 0 && r.admitted >= r.cfg.Max {
				return errMaxReached
			}
			select {
			case in <- r.admit(e):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	sent := mover.Serial(in, pipeDepth, func(it *redriveItem) { r.publish(ctx, it) })
	settled := mover.Serial(sent, pipeDepth, func(it *redriveItem) { r.settle(work, it) })
	removed := mover.Ordered(settled, deleteWorkers, r.remove)
	for it := range removed {
		r.finish(it)
	}
	r.progress()
	// in is closed once the read has returned.
	return readErr
}

// decide decides what becomes of a selected DLQ message, as the
// preflight and the redrive both see it: where it goes (its original
// subject, its consumer's retry subject, or To), or why it is refused or
// left (an expired TTL). A message it leaves without a status is to be
// sent.
func (r *redriver) decide(e Entry) *redriveItem {
	cfg := r.cfg
	it := &redriveItem{e: e}
	subject, retry := cfg.To, false
	if subject == "" && e.Subject != "" {
		subject, retry, it.others = r.route.route(e)
	}
	it.retry = retry
	it.rec = RedriveRecord{DLQStream: e.DLQStream, DLQSeq: e.DLQSeq, SourceStream: e.SourceStream, SourceSeq: e.SourceSeq,
		Subject: subject, Redrives: e.Redrives, Size: e.Size}
	if retry {
		it.rec.OriginalSubject = originalSubject(e)
	}
	var ttlErr error
	if e.Message != nil {
		it.ttl, ttlErr = ttlOf(e.Message.Header)
	}
	switch {
	case len(it.others) > 0:
		it.rec.Status, it.rec.Error = StatusRefused, fmt.Sprintf("its original subject reaches %s too, and %q has no retry subject (jetctl dlq setup --stream %s --consumer %s --retry-subject, or --all-consumers)",
			quoteList(it.others), e.Consumer, r.route.stream, e.Consumer)
	case subject == "":
		it.rec.Status, it.rec.Error = StatusFailed, "no original subject (Jetctl-Source-Subject header missing)"
	case e.PayloadOmitted > 0:
		it.rec.Status, it.rec.Error = StatusRefused, fmt.Sprintf("the DLQ holds no payload (%d bytes, too large to copy): it is in stream %s at sequence %d",
			e.PayloadOmitted, e.SourceStream, e.SourceSeq)
	case cfg.MaxRedrives > 0 && e.Redrives >= cfg.MaxRedrives:
		it.rec.Status, it.rec.Error = StatusRefused, fmt.Sprintf("already redriven %d %s (--max-redrives %d)",
			e.Redrives, english.PluralWord(e.Redrives, "time", "times"), cfg.MaxRedrives)
	case ttlErr != nil:
		it.rec.Status, it.rec.Error = StatusRefused, ttlErr.Error()
	case it.ttl.orig != nil && !cfg.IncludeExpired && it.ttl.at(r.now).Expired:
		it.rec.Status, it.rec.Error = StatusExpired, expiredReason(it.ttl.at(r.now), it.ttl.orig.Get(envelope.TTLHeader))
	}
	return it
}

// admit decides what becomes of a selected DLQ message (decide); a dry
// run stops there, with the TTL the message would carry.
func (r *redriver) admit(e Entry) *redriveItem {
	it := r.decide(e)
	switch {
	case it.rec.Status != "":
	case r.cfg.DryRun:
		it.rec.Status, it.rec.Redrives = StatusWouldRedrive, e.Redrives+1
		if it.ttl.orig != nil {
			it.rec.TTL, _ = redriveTTL(nats.Header{}, it.ttl, r.now, r.cfg.IncludeExpired)
		}
		r.admitted++
	default:
		it.send = true
		r.admitted++
	}
	return it
}

// publish sends the message through the window (paced by its rate),
// without waiting for the acknowledgement. Once interrupted (or the lease
// lost) it sends nothing more: the rest stays in the DLQ.
func (r *redriver) publish(ctx context.Context, it *redriveItem) {
	if !it.send {
		return
	}
	if !r.stopped && ctx.Err() == nil {
		h := RedriveHeader(it.e.Message.Header, it.e.Redrives, RedriveMsgID(it.e.DLQStream, it.e.DLQSeq))
		ttl, expired := redriveTTL(h, it.ttl, time.Now(), r.cfg.IncludeExpired)
		if expired {
			// Its TTL passed while the redrive ran.
			st := it.ttl.at(time.Now())
			it.rec.Status, it.rec.Error = StatusExpired, expiredReason(st, it.ttl.orig.Get(envelope.TTLHeader))
			it.e.Message = nil
			return
		}
		it.rec.TTL = ttl
		if it.retry {
			h.Set(HeaderRedriveSubject, it.rec.OriginalSubject)
		} else if r.cfg.To == "" {
			// Back on its original subject: no retry subject to undo.
			h.Del(HeaderRedriveSubject)
		}
		it.pub = &mover.Pub{Msg: &nats.Msg{Subject: it.rec.Subject, Header: h, Data: it.e.Message.Data}}
		it.e.Message = nil
		if r.win.Publish(ctx, it.pub) == nil {
			it.rec.Redrives = it.e.Redrives + 1
			return
		}
	}
	r.stopped, it.skipped, it.pub = true, true, nil
}

// settle waits for the window's outcome and records it: stored, a
// duplicate of what the target holds (Duplicate), or failed.
func (r *redriver) settle(work context.Context, it *redriveItem) {
	if it.pub == nil {
		return
	}
	p := it.pub
	r.win.Settle(work, p)
	it.pub = nil
	if p.Err != nil {
		it.rec.Status, it.rec.Error = StatusFailed, p.Err.Error()
		return
	}
	it.rec.Status, it.rec.Stream, it.rec.Seq, it.rec.Duplicate = StatusRedriven, p.Stream, p.Seq, p.Duplicate
}

// remove deletes the DLQ copy of a message the target acknowledged
// (stored or a duplicate), unless Keep, and calls done when that is over.
func (r *redriver) remove(it *redriveItem, done func()) {
	if r.del == nil || it.rec.Status != StatusRedriven {
		done()
		return
	}
	r.del.delete(r.cfg.DLQStream, it.e.DLQSeq, func(err error) {
		if err != nil {
			it.rec.Status, it.rec.Error = StatusFailed, "redriven, but the DLQ copy could not be deleted: "+err.Error()
		} else {
			it.rec.DLQDeleted = true
		}
		done()
	})
}

// finish counts and reports a message, in DLQ order; one interrupted
// before it was sent is counted as selected only.
func (r *redriver) finish(it *redriveItem) {
	r.sum.Selected++
	if it.skipped {
		return
	}
	rec := it.rec
	switch {
	case rec.Status == StatusRedriven && rec.Duplicate:
		r.sum.Duplicates++
	case rec.Status == StatusRedriven:
		r.sum.Redriven++
		r.sum.Bytes += int64(rec.Size)
	case rec.Status == StatusWouldRedrive:
		r.sum.WouldRedriv++
		r.sum.Bytes += int64(rec.Size)
	case rec.Status == StatusRefused:
		r.sum.Refused++
	case rec.Status == StatusFailed:
		r.sum.Failed++
	case rec.Status == StatusExpired:
		r.sum.Expired++
	}
	if r.cfg.OnRecord != nil {
		r.cfg.OnRecord(rec)
	}
	if r.reported++; r.reported%pipeDepth == 0 {
		r.progress()
	}
}

func (r *redriver) progress() {
	if r.cfg.Progress != nil {
		s := r.sum
		s.Seconds = time.Since(r.start).Seconds()
		r.cfg.Progress(s)
	}
}
