package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/mover"
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
	LockTTL      time.Duration
	// OnRecord hears of every selected message.
	OnRecord func(RedriveRecord)
	Progress func(RedriveSummary)
}

// Statuses of a RedriveRecord.
const (
	StatusRedriven     = "redriven"
	StatusWouldRedrive = "would_redrive"
	StatusRefused      = "refused"
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
	Error      string `json:"error,omitempty"`
}

// RedriveSummary counts what a redrive did.
type RedriveSummary struct {
	DLQStream   string  `json:"dlq_stream"`
	Selected    int     `json:"selected"`
	Redriven    int     `json:"redriven"`
	WouldRedriv int     `json:"would_redrive,omitempty"`
	Refused     int     `json:"refused"`
	Failed      int     `json:"failed"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"messages_per_second"`
}

type redriveItem struct {
	e   Entry
	rec RedriveRecord
	msg *nats.Msg
	fut jetstream.PubAckFuture
	// send: publish it (not refused, not a dry run); skipped: interrupted
	// before it was sent, so nothing is reported; retry: to the retry
	// subject of its consumer.
	send, sync, skipped, retry bool
}

// errMaxReached ends the read when Max messages are redriven.
var errMaxReached = errors.New("max reached")

// RedriveMsgID is the Nats-Msg-Id of the redrive of a DLQ message: a
// re-run within the target stream's duplicate window stores nothing twice.
func RedriveMsgID(dlqStream string, dlqSeq uint64) string {
	return fmt.Sprintf("redrive:%s:%d", dlqStream, dlqSeq)
}

// Redrive publishes the selected DLQ messages back to their original
// subjects and deletes each DLQ copy once its publish is acknowledged.
func Redrive(ctx context.Context, js jetstream.JetStream, cfg RedriveConfig) (sum *RedriveSummary, err error) {
	start := time.Now()
	sum = &RedriveSummary{DLQStream: cfg.DLQStream}
	st, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.DLQStream, err)
	}
	work := context.WithoutCancel(ctx)
	// Where each message goes, decided (and a redrive that would reach
	// other consumers refused) before anything changes.
	var r *router
	if cfg.To == "" {
		source := st.CachedInfo().Config.Metadata[MetaSource]
		if r, err = newRouter(ctx, js, source, cfg.AllConsumers); err != nil {
			return nil, err
		}
		if err := r.check(ctx, js, cfg); err != nil {
			return nil, err
		}
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
			if lost := lock.LostErr(); lost != nil && sum != nil {
				err = fmt.Errorf("stream %q: redrive %w", cfg.DLQStream, lost)
			}
		}()
	}
	var limiter *rate.Limiter
	if cfg.Rate > 0 {
		// The bucket starts empty, so N messages take N/rate seconds;
		// it holds a quarter second's worth, so a stall of the pipeline
		// (or of a loaded machine) up to that long is made up for, and
		// the average rate kept.
		limiter = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate/4)))
		limiter.AllowN(time.Now(), max(1, int(cfg.Rate/4)))
	}
	a := jsapi.New(js)
	var del *piped
	if !cfg.DryRun && !cfg.Keep {
		var err error
		if del, err = newPiped(work, js, a); err != nil {
			return nil, err
		}
		defer del.close()
	}

	// A pipeline, as the sweep's: read the DLQ -> publish (paced) -> wait
	// for the acknowledgement, in order -> delete the DLQ copy
	// (deleteWorkers at a time, through one pipe) -> report, in order. A DLQ copy is
	// deleted only after its publish is acknowledged; interrupted, what
	// is not yet published is left in the DLQ.
	in := make(chan *redriveItem, pipeDepth)
	var readErr error
	admitted := 0
	go func() {
		defer close(in)
		readErr = Each(ctx, js, cfg.DLQStream, cfg.Select, func(e Entry) error {
			// Interrupted: take no new work; what is in flight is settled.
			if err := ctx.Err(); err != nil {
				return err
			}
			if cfg.Max > 0 && admitted >= cfg.Max {
				return errMaxReached
			}
			it := &redriveItem{e: e}
			subject, retry, others := cfg.To, false, []string(nil)
			if subject == "" && e.Subject != "" {
				subject, retry, others = r.route(e)
			}
			it.retry = retry
			it.rec = RedriveRecord{DLQStream: e.DLQStream, DLQSeq: e.DLQSeq, SourceStream: e.SourceStream, SourceSeq: e.SourceSeq,
				Subject: subject, Redrives: e.Redrives, Size: e.Size}
			if retry {
				it.rec.OriginalSubject = originalSubject(e)
			}
			switch {
			case len(others) > 0:
				it.rec.Status, it.rec.Error = StatusRefused, fmt.Sprintf("its original subject reaches %s too, and %q has no retry subject (jetctl dlq setup --stream %s --consumer %s --retry-subject, or --all-consumers)",
					quoteList(others), e.Consumer, r.stream, e.Consumer)
			case subject == "":
				it.rec.Status, it.rec.Error = StatusFailed, "no original subject (Jetctl-Source-Subject header missing)"
			case e.PayloadOmitted > 0:
				it.rec.Status, it.rec.Error = StatusRefused, fmt.Sprintf("the DLQ holds no payload (%d bytes, too large to copy): it is in stream %s at sequence %d",
					e.PayloadOmitted, e.SourceStream, e.SourceSeq)
			case cfg.MaxRedrives > 0 && e.Redrives >= cfg.MaxRedrives:
				it.rec.Status, it.rec.Error = StatusRefused, fmt.Sprintf("already redriven %d %s (--max-redrives %d)",
					e.Redrives, english.PluralWord(e.Redrives, "time", "times"), cfg.MaxRedrives)
			case cfg.DryRun:
				it.rec.Status, it.rec.Redrives = StatusWouldRedrive, e.Redrives+1
				admitted++
			default:
				it.send = true
				admitted++
			}
			select {
			case in <- it:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	stopped := false
	sent := mover.Serial(in, pipeDepth, func(it *redriveItem) {
		if !it.send {
			return
		}
		if stopped || ctx.Err() != nil || (limiter != nil && limiter.Wait(ctx) != nil) {
			stopped, it.skipped = true, true
			return
		}
		it.rec.Redrives = it.e.Redrives + 1
		h := RedriveHeader(it.e.Message.Header, it.e.Redrives, RedriveMsgID(it.e.DLQStream, it.e.DLQSeq))
		if it.retry {
			h.Set(HeaderRedriveSubject, it.rec.OriginalSubject)
		} else if cfg.To == "" {
			// Back on its original subject: no retry subject to undo.
			h.Del(HeaderRedriveSubject)
		}
		it.msg = &nats.Msg{Subject: it.rec.Subject, Header: h, Data: it.e.Message.Data}
		it.e.Message = nil
		fut, err := js.PublishMsgAsync(it.msg)
		if err != nil {
			it.sync = true
			return
		}
		it.fut = fut
	})
	settled := mover.Serial(sent, pipeDepth, func(it *redriveItem) {
		if !it.send || it.skipped {
			return
		}
		stored := func(ack *jetstream.PubAck) {
			it.rec.Status, it.rec.Stream, it.rec.Seq, it.rec.Duplicate = StatusRedriven, ack.Stream, ack.Sequence, ack.Duplicate
		}
		syncPublish := func() {
			ack, err := js.PublishMsg(work, it.msg)
			if err != nil {
				it.rec.Status, it.rec.Error = StatusFailed, err.Error()
				return
			}
			stored(ack)
		}
		if it.sync {
			syncPublish()
		} else {
			t := time.NewTimer(2 * a.Timeout)
			select {
			case ack := <-it.fut.Ok():
				stored(ack)
			case <-it.fut.Err():
				syncPublish()
			case <-t.C:
				syncPublish()
			}
			t.Stop()
		}
		it.msg, it.fut = nil, nil
	})
	removed := mover.Ordered(settled, deleteWorkers, func(it *redriveItem, done func()) {
		if del == nil || it.rec.Status != StatusRedriven {
			done()
			return
		}
		del.delete(cfg.DLQStream, it.e.DLQSeq, func(err error) {
			if err != nil {
				it.rec.Status, it.rec.Error = StatusFailed, "redriven, but the DLQ copy could not be deleted: "+err.Error()
			} else {
				it.rec.DLQDeleted = true
			}
			done()
		})
	})
	emit := func(r RedriveRecord) {
		switch r.Status {
		case StatusRedriven:
			sum.Redriven++
			sum.Bytes += int64(r.Size)
		case StatusWouldRedrive:
			sum.WouldRedriv++
			sum.Bytes += int64(r.Size)
		case StatusRefused:
			sum.Refused++
		case StatusFailed:
			sum.Failed++
		}
		if cfg.OnRecord != nil {
			cfg.OnRecord(r)
		}
	}
	n := 0
	for it := range removed {
		sum.Selected++
		if it.skipped {
			continue
		}
		emit(it.rec)
		if n++; n%pipeDepth == 0 && cfg.Progress != nil {
			s := *sum
			s.Seconds = time.Since(start).Seconds()
			cfg.Progress(s)
		}
	}
	if cfg.Progress != nil {
		s := *sum
		s.Seconds = time.Since(start).Seconds()
		cfg.Progress(s)
	}
	err = readErr
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.PerSecond = float64(sum.Redriven) / sum.Seconds
	}
	if errors.Is(err, errMaxReached) {
		err = nil
	}
	if err == nil {
		err = ctx.Err()
	}
	return sum, err
}

// PurgeConfig says which DLQ messages to delete.
type PurgeConfig struct {
	DLQStream string
	Select    Select
	DryRun    bool
	OnRecord  func(Entry)
}

// Purge deletes the selected DLQ messages and returns how many (and how
// many bytes) it deleted, or would delete. The deletes are pipelined
// behind the read (deleteWorkers at a time) and reported in order;
// interrupted or failing, it stops taking new messages and counts only
// the deletes the server confirmed.
func Purge(ctx context.Context, js jetstream.JetStream, cfg PurgeConfig) (int, int64, error) {
	a := jsapi.New(js)
	work := context.WithoutCancel(ctx)
	// stop ends the read at the first failed delete.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	type purgeItem struct {
		e   Entry
		err error
	}
	in := make(chan *purgeItem, pipeDepth)
	var readErr error
	go func() {
		defer close(in)
		readErr = Each(ctx, js, cfg.DLQStream, cfg.Select, func(e Entry) error {
			select {
			case in <- &purgeItem{e: e}:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	}()
	var del *piped
	if !cfg.DryRun {
		var err error
		if del, err = newPiped(work, js, a); err != nil {
			return 0, 0, err
		}
		defer del.close()
	}
	deleted := mover.Ordered(in, deleteWorkers, func(it *purgeItem, done func()) {
		if del == nil {
			done()
			return
		}
		del.delete(cfg.DLQStream, it.e.DLQSeq, func(err error) {
			it.err = err
			done()
		})
	})
	n := 0
	var bytes int64
	var first error
	for it := range deleted {
		if it.err != nil {
			if first == nil {
				first = it.err
				stop(it.err)
			}
			continue
		}
		n++
		bytes += int64(it.e.Size)
		if cfg.OnRecord != nil {
			cfg.OnRecord(it.e)
		}
	}
	if first != nil {
		return n, bytes, first
	}
	if readErr != nil {
		return n, bytes, readErr
	}
	return n, bytes, ctx.Err()
}
