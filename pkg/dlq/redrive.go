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
	Keep    bool
	LockTTL time.Duration
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
	Redrives     int    `json:"redrives"`
	Status       string `json:"status"`
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
	if _, err := js.Stream(ctx, cfg.DLQStream); err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.DLQStream, err)
	}
	work := context.WithoutCancel(ctx)
	if !cfg.DryRun {
		lock, lerr := AcquireLock(ctx, js, RedriveLockKey(cfg.DLQStream), cfg.LockTTL, "jetctl dlq unlock --redrive --dlq-stream "+cfg.DLQStream)
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
	batchSize := 256
	if cfg.Rate > 0 {
		// A burst of 20ms worth keeps the average rate while a batch
		// settles (acks, deletes) and the limiter would otherwise idle.
		limiter = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate/50)))
		batchSize = min(batchSize, max(1, int(cfg.Rate/4)))
	}
	a := jsapi.New(js)
	var batch []*redriveItem
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
	flush := func() {
		for _, it := range batch {
			if it.fut == nil {
				continue
			}
			select {
			case ack := <-it.fut.Ok():
				it.rec.Status, it.rec.Stream, it.rec.Seq, it.rec.Duplicate = StatusRedriven, ack.Stream, ack.Sequence, ack.Duplicate
			case <-it.fut.Err():
				ack, err := js.PublishMsg(work, it.msg)
				if err != nil {
					it.rec.Status, it.rec.Error = StatusFailed, err.Error()
					break
				}
				it.rec.Status, it.rec.Stream, it.rec.Seq, it.rec.Duplicate = StatusRedriven, ack.Stream, ack.Sequence, ack.Duplicate
			}
		}
		if !cfg.Keep {
			parallel(len(batch), sweepWorkers, func(i int) {
				it := batch[i]
				if it.rec.Status != StatusRedriven {
					return
				}
				if err := a.MsgDelete(work, cfg.DLQStream, it.e.DLQSeq); err != nil {
					it.rec.Status, it.rec.Error = StatusFailed, "redriven, but the DLQ copy could not be deleted: "+err.Error()
					return
				}
				it.rec.DLQDeleted = true
			})
		}
		for _, it := range batch {
			emit(it.rec)
		}
		batch = batch[:0]
		if cfg.Progress != nil {
			s := *sum
			s.Seconds = time.Since(start).Seconds()
			cfg.Progress(s)
		}
	}
	err = Each(ctx, js, cfg.DLQStream, cfg.Select, func(e Entry) error {
		// Interrupted: take no new work; what is in flight is settled below.
		if err := ctx.Err(); err != nil {
			return err
		}
		if cfg.Max > 0 && sum.Redriven+sum.WouldRedriv+len(batch) >= cfg.Max {
			return errMaxReached
		}
		sum.Selected++
		subject := e.Subject
		if cfg.To != "" {
			subject = cfg.To
		}
		rec := RedriveRecord{DLQStream: e.DLQStream, DLQSeq: e.DLQSeq, SourceStream: e.SourceStream, SourceSeq: e.SourceSeq,
			Subject: subject, Redrives: e.Redrives, Size: e.Size}
		switch {
		case subject == "":
			rec.Status, rec.Error = StatusFailed, "no original subject (Jetctl-Source-Subject header missing)"
			emit(rec)
			return nil
		case e.PayloadOmitted > 0:
			rec.Status, rec.Error = StatusRefused, fmt.Sprintf("the DLQ holds no payload (%d bytes, too large to copy): it is in stream %s at sequence %d",
				e.PayloadOmitted, e.SourceStream, e.SourceSeq)
			emit(rec)
			return nil
		case cfg.MaxRedrives > 0 && e.Redrives >= cfg.MaxRedrives:
			rec.Status, rec.Error = StatusRefused, fmt.Sprintf("already redriven %d %s (--max-redrives %d)",
				e.Redrives, english.PluralWord(e.Redrives, "time", "times"), cfg.MaxRedrives)
			emit(rec)
			return nil
		case cfg.DryRun:
			rec.Status, rec.Redrives = StatusWouldRedrive, e.Redrives+1
			emit(rec)
			return nil
		}
		if limiter != nil {
			if err := limiter.Wait(ctx); err != nil {
				return err
			}
		}
		rec.Redrives = e.Redrives + 1
		msg := &nats.Msg{Subject: subject, Header: RedriveHeader(e.Message.Header, e.Redrives, RedriveMsgID(e.DLQStream, e.DLQSeq)), Data: e.Message.Data}
		it := &redriveItem{e: e, rec: rec, msg: msg}
		fut, err := js.PublishMsgAsync(msg)
		if err != nil {
			ack, err := js.PublishMsg(work, msg)
			if err != nil {
				it.rec.Status, it.rec.Error = StatusFailed, err.Error()
			} else {
				it.rec.Status, it.rec.Stream, it.rec.Seq = StatusRedriven, ack.Stream, ack.Sequence
			}
		}
		it.fut = fut
		batch = append(batch, it)
		if len(batch) >= batchSize {
			flush()
		}
		return nil
	})
	flush()
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
// many bytes) it deleted, or would delete.
func Purge(ctx context.Context, js jetstream.JetStream, cfg PurgeConfig) (int, int64, error) {
	a := jsapi.New(js)
	var selected []Entry
	err := Each(ctx, js, cfg.DLQStream, cfg.Select, func(e Entry) error {
		selected = append(selected, e)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	var bytes int64
	if cfg.DryRun {
		for _, e := range selected {
			bytes += int64(e.Size)
			if cfg.OnRecord != nil {
				cfg.OnRecord(e)
			}
		}
		return len(selected), bytes, nil
	}
	errs := make([]error, len(selected))
	parallel(len(selected), sweepWorkers, func(i int) {
		errs[i] = a.MsgDelete(context.WithoutCancel(ctx), cfg.DLQStream, selected[i].DLQSeq)
	})
	n := 0
	for i, e := range selected {
		if errs[i] != nil {
			return n, bytes, errs[i]
		}
		n++
		bytes += int64(e.Size)
		if cfg.OnRecord != nil {
			cfg.OnRecord(e)
		}
	}
	return n, bytes, nil
}
