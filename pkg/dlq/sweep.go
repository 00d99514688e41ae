package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

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

// item is one dead message on its way through a batch.
type item struct {
	adv  Advisory
	acks []jetstream.Msg
	rec  Record
	src  *envelope.Message
	msg  *nats.Msg
	fut  jetstream.PubAckFuture
	// scanned: found by --scan, not by an advisory.
	scanned bool
	// tooLarge: the copy would exceed max_payload; msg is its pointer copy.
	tooLarge bool
	// limit names the limit the copy exceeds, for the record's note;
	// "" is the server's max_payload.
	limit string
}

type sweeper struct {
	js        jetstream.JetStream
	api       *jsapi.Client
	cfg       SweepConfig
	n         Names
	retention jetstream.RetentionPolicy
	limiter   *rate.Limiter
	dedup     Dedup
	sum       SweepSummary
	start     time.Time
}

const sweepWorkers = 16

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
	s := &sweeper{js: js, api: jsapi.New(js), cfg: cfg, n: n, retention: src.CachedInfo().Config.Retention, start: time.Now()}
	s.sum = SweepSummary{Stream: cfg.Stream, DLQStream: n.DLQ, Retention: s.retention.String()}
	if cfg.Scan && s.retention == jetstream.LimitsPolicy {
		return nil, fmt.Errorf("%w: --scan works on workqueue and interest streams only: stream %q has limits retention, where a message whose advisory was never captured "+
			"cannot be told apart from one that was processed; sweep without --scan, and copy a known time window of failures with jetctl replay %s --from-time T1 --to-time T2",
			ErrInvalid, cfg.Stream, cfg.Stream)
	}
	if cfg.Rate > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), 1)
		cfg.Batch = min(cfg.Batch, max(1, int(cfg.Rate)))
		s.cfg.Batch = cfg.Batch
	}
	durable, filters, err := s.durable(ctx)
	if err != nil {
		return nil, err
	}

	if !cfg.DryRun {
		lock, lerr := AcquireLock(ctx, js, SweepLockKey(cfg.Stream), cfg.LockTTL, "jetctl dlq unlock --stream "+cfg.Stream)
		if lerr != nil {
			return nil, fmt.Errorf("stream %q: another sweep is running: %w", cfg.Stream, lerr)
		}
		defer lock.Release(context.WithoutCancel(ctx))
		var cancel context.CancelFunc
		ctx, cancel = lock.WithLease(ctx)
		defer cancel()
		// A lost lease is a failure with its reason, not an interruption.
		defer func() {
			if lost := lock.LostErr(); lost != nil && sum != nil {
				err = fmt.Errorf("stream %q: sweep %w", cfg.Stream, lost)
			}
		}()
		// Advisories a killed sweep had fetched but not acked come back now,
		// not after the ack wait.
		if _, err := js.ResetConsumer(ctx, n.Capture, durable); err != nil {
			return nil, fmt.Errorf("stream %q: consumer %q: reset to ack floor: %w", n.Capture, durable, err)
		}
	}

	if cfg.Scan {
		items, err := s.scan(ctx)
		if err != nil {
			return &s.sum, err
		}
		for len(items) > 0 && ctx.Err() == nil {
			k := min(len(items), cfg.Batch)
			s.process(ctx, items[:k])
			items = items[k:]
		}
	}

	if cfg.DryRun {
		err = s.dryRunAdvisories(ctx, durable, filters)
	} else {
		err = s.fromDurable(ctx, durable)
	}
	s.sum.Seconds = time.Since(s.start).Seconds()
	if err == nil {
		err = ctx.Err()
	}
	return &s.sum, err
}

// durable returns the capture consumer to read: the one setup made, or for
// a sweep narrowed to some consumers, a durable filtered on their
// advisories that starts where the main one stands.
func (s *sweeper) durable(ctx context.Context) (string, []string, error) {
	capture, err := s.js.Stream(ctx, s.n.Capture)
	if err != nil {
		return "", nil, fmt.Errorf("stream %q: %w", s.n.Capture, err)
	}
	main, err := s.js.Consumer(ctx, s.n.Capture, s.n.Durable)
	if err != nil {
		return "", nil, fmt.Errorf("stream %q: consumer %q: %w (run: jetctl dlq setup --stream %s)", s.n.Capture, s.n.Durable, ErrNotSetUp, s.cfg.Stream)
	}
	if len(s.cfg.Consumers) == 0 {
		return s.n.Durable, nil, nil
	}
	filters := AdvisorySubjects(s.cfg.Stream, s.cfg.Consumers)
	captured := capture.CachedInfo().Config.Subjects
	for _, f := range filters {
		ok := false
		for _, c := range captured {
			ok = ok || streamread.SubjectMatches(c, f)
		}
		if !ok {
			return "", nil, fmt.Errorf("stream %q: %w: advisories of consumer %q are not captured (run: jetctl dlq setup --stream %s --consumer %s)",
				s.cfg.Stream, ErrNotSetUp, filterConsumer(f), s.cfg.Stream, filterConsumer(f))
		}
	}
	names := slices.Clone(s.cfg.Consumers)
	sort.Strings(names)
	name := s.n.Durable + "-" + strings.Join(names, "-")
	if _, err := s.js.Consumer(ctx, s.n.Capture, name); err == nil || s.cfg.DryRun {
		return name, filters, nil
	}
	cc := durableConfig(name, capture.CachedInfo().Config.Replicas)
	cc.FilterSubjects = filters
	cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
	cc.OptStartSeq = main.CachedInfo().AckFloor.Stream + 1
	if _, err := s.js.CreateConsumer(ctx, s.n.Capture, cc); err != nil {
		return "", nil, fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, name, err)
	}
	return name, filters, nil
}

func filterConsumer(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

// admit turns an advisory message into work, or acks it at once when there
// is nothing to do for it (server-caused, duplicate, unreadable).
func (s *sweeper) admit(data []byte, ack jetstream.Msg, batch map[MsgKey]*item, order *[]*item) {
	a, err := ParseAdvisory(data)
	if err != nil || a.Stream != s.cfg.Stream || a.ServerCaused() ||
		(len(s.cfg.Consumers) > 0 && !slices.Contains(s.cfg.Consumers, a.Consumer)) {
		s.sum.Ignored++
		if ack != nil {
			_ = ack.Ack()
		}
		return
	}
	if it, ok := batch[a.Key()]; ok {
		s.sum.Duplicates++
		if ack != nil {
			it.acks = append(it.acks, ack)
		}
		return
	}
	if !s.dedup.First(a.Key()) {
		s.sum.Duplicates++
		if ack != nil {
			_ = ack.Ack()
		}
		return
	}
	it := &item{adv: a}
	if ack != nil {
		it.acks = []jetstream.Msg{ack}
	}
	batch[a.Key()] = it
	*order = append(*order, it)
}

func (s *sweeper) fromDurable(ctx context.Context, durable string) error {
	cons, err := s.js.Consumer(ctx, s.n.Capture, durable)
	if err != nil {
		return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
	}
	for ctx.Err() == nil {
		want := s.cfg.Batch
		if s.cfg.Max > 0 {
			want = min(want, s.cfg.Max-s.sum.Found)
			if want <= 0 {
				return nil
			}
		}
		b, err := cons.FetchNoWait(want)
		if err != nil {
			return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
		}
		batch := map[MsgKey]*item{}
		var order []*item
		got := 0
		for m := range b.Messages() {
			got++
			s.admit(m.Data(), m, batch, &order)
		}
		if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
		}
		if got == 0 {
			return nil
		}
		s.process(ctx, order)
	}
	return nil
}

// dryRunAdvisories reads the advisories the durable has not acked with
// gets, so that a dry run disturbs no consumer.
func (s *sweeper) dryRunAdvisories(ctx context.Context, durable string, filters []string) error {
	from := uint64(1)
	if c, err := s.js.Consumer(ctx, s.n.Capture, durable); err == nil {
		from = c.CachedInfo().AckFloor.Stream + 1
	} else if c, err := s.js.Consumer(ctx, s.n.Capture, s.n.Durable); err == nil {
		from = c.CachedInfo().AckFloor.Stream + 1
	}
	for ctx.Err() == nil {
		batch := map[MsgKey]*item{}
		var order []*item
		for len(order) < s.cfg.Batch {
			if s.cfg.Max > 0 && s.sum.Found+len(order) >= s.cfg.Max {
				break
			}
			m, err := s.api.MsgGet(ctx, s.n.Capture, jsapi.MsgGetRequest{Seq: from, NextFor: ">"})
			if errors.Is(err, jsapi.ErrNoMessage) {
				break
			}
			if err != nil {
				return err
			}
			from = m.Seq + 1
			if len(filters) > 0 && !slices.ContainsFunc(filters, func(f string) bool { return streamread.SubjectMatches(f, m.Subject) }) {
				continue
			}
			s.admit(m.Data, nil, batch, &order)
		}
		if len(order) == 0 {
			return nil
		}
		s.process(ctx, order)
	}
	return nil
}

// process moves one batch: coherent gets in parallel, publishes pipelined,
// then source deletes in parallel, then the advisory acks. Each step starts
// only after the one before it is confirmed for that message.
func (s *sweeper) process(ctx context.Context, items []*item) {
	work := context.WithoutCancel(ctx)
	for _, it := range items {
		a := it.adv
		it.rec = Record{Stream: a.Stream, StreamSeq: a.StreamSeq, Consumer: a.Consumer, Reason: a.DeadReason(),
			TermReason: a.Reason, Deliveries: a.Deliveries, FoundBy: "advisory", DLQStream: s.n.DLQ}
		if it.scanned {
			it.rec.FoundBy = "scan"
		}
	}
	// 1. Read each dead message from the stream leader.
	parallel(len(items), sweepWorkers, func(i int) {
		it := items[i]
		var m *envelope.Message
		err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func() (err error) {
			m, err = s.api.MsgGet(work, s.cfg.Stream, jsapi.MsgGetRequest{Seq: it.adv.StreamSeq})
			return err
		})
		switch {
		case errors.Is(err, jsapi.ErrNoMessage):
			// Gone: moved by an earlier, interrupted sweep, or removed
			// before any sweep (limits, a delete, a terminated message on
			// a workqueue or interest stream).
			dm, derr := s.api.MsgGet(work, s.n.DLQ, jsapi.MsgGetRequest{LastFor: s.n.DLQSubject(it.adv.StreamSeq)})
			switch {
			case derr == nil:
				it.rec.Status, it.rec.DLQSeq, it.rec.Subject, it.rec.Size = StatusAlreadyMoved, dm.Seq, dm.Header.Get(envelope.SourceSubject), len(dm.Data)
				it.rec.Source = SourceDeleted
			case errors.Is(derr, jsapi.ErrNoMessage):
				it.rec.Status = StatusGone
			default:
				it.rec.Status, it.rec.Error = StatusFailed, derr.Error()
			}
		case err != nil:
			it.rec.Status, it.rec.Error = StatusFailed, err.Error()
		default:
			it.src = m
			it.rec.Subject, it.rec.Size = m.Subject, len(m.Data)
		}
	})
	// 2. Copy to the DLQ, pipelined.
	sweptAt := time.Now()
	stopped := false
	for _, it := range items {
		if it.src == nil {
			continue
		}
		if s.cfg.DryRun {
			it.rec.Status = StatusWouldMove
			if WireSize(BuildCopy(s.n, it.src, it.adv, sweptAt)) > s.js.Conn().MaxPayload() {
				it.rec.Status, it.rec.SourceNote = StatusTooLarge, s.tooLargeNote(it)
			}
			continue
		}
		if stopped || (s.limiter != nil && s.limiter.Wait(ctx) != nil) || ctx.Err() != nil {
			// Interrupted: the rest stays for the next run.
			stopped = true
			it.rec.Status = ""
			continue
		}
		it.msg = BuildCopy(s.n, it.src, it.adv, sweptAt)
		if WireSize(it.msg) > s.js.Conn().MaxPayload() {
			it.msg, it.tooLarge = PointerCopy(it.msg), true
		}
		fut, err := s.js.PublishMsgAsync(it.msg)
		if err != nil {
			s.publishSync(work, it)
			continue
		}
		it.fut = fut
	}
	for _, it := range items {
		if it.fut == nil {
			continue
		}
		select {
		case ack := <-it.fut.Ok():
			s.published(it, ack, nil)
		case err := <-it.fut.Err():
			s.published(it, nil, err)
			if it.rec.Status == StatusFailed {
				it.rec.Error = ""
				s.publishSync(work, it)
			}
		case <-time.After(2 * s.api.Timeout):
			s.publishSync(work, it)
		}
	}
	// 3. Remove the source message where the retention policy calls for it.
	var needers map[string]*jetstream.ConsumerInfo
	if s.retention == jetstream.InterestPolicy {
		needers = s.consumerInfos(work)
	}
	parallel(len(items), sweepWorkers, func(i int) {
		it := items[i]
		if it.src != nil && it.rec.Status == StatusTooLarge {
			// Only a pointer is in the DLQ: the payload stays where it is.
			it.rec.Source, it.rec.SourceNote = SourceKept, s.tooLargeNote(it)
			return
		}
		if it.src == nil || (it.rec.Status != StatusMoved && it.rec.Status != StatusAlreadyMoved) {
			return
		}
		remove, note := s.shouldRemove(it, needers)
		if !remove {
			it.rec.Source, it.rec.SourceNote = SourceKept, note
			return
		}
		if err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func() error {
			return s.api.MsgDelete(work, s.cfg.Stream, it.src.Seq)
		}); err != nil {
			it.rec.Status, it.rec.Error = StatusFailed, "copied, but the source could not be deleted: "+err.Error()
			return
		}
		it.rec.Source = SourceDeleted
	})
	// 4. Ack the advisories of every message done; failed and interrupted
	// ones come back on the next run.
	for _, it := range items {
		if it.rec.Status == "" {
			continue
		}
		if it.rec.Status != StatusFailed && !s.cfg.DryRun {
			for _, m := range it.acks {
				_ = m.Ack()
			}
		}
		s.count(it.rec)
		if s.cfg.OnRecord != nil {
			s.cfg.OnRecord(it.rec)
		}
	}
	if !s.cfg.DryRun {
		_ = s.js.Conn().FlushWithContext(work)
	}
	if s.cfg.Progress != nil {
		sum := s.sum
		sum.Seconds = time.Since(s.start).Seconds()
		s.cfg.Progress(sum)
	}
}

func (s *sweeper) publishSync(ctx context.Context, it *item) {
	ack, err := s.js.PublishMsg(ctx, it.msg)
	if err != nil && !it.tooLarge && isTooLarge(err) {
		// Larger than the size judged before publishing (e.g. the DLQ
		// stream's max_msg_size): keep a pointer instead.
		it.msg, it.tooLarge = PointerCopy(it.msg), true
		if !errors.Is(err, nats.ErrMaxPayload) {
			it.limit = "the DLQ stream's max_msg_size"
		}
		ack, err = s.js.PublishMsg(ctx, it.msg)
	}
	s.published(it, ack, err)
}

// isTooLarge: the server (or the client, knowing the server's limit)
// refused the copy for its size; retrying it never helps.
func isTooLarge(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) ||
		(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum)
}

func (s *sweeper) tooLargeNote(it *item) string {
	limit := it.limit
	if limit == "" {
		limit = fmt.Sprintf("the server's max_payload (%d bytes)", s.js.Conn().MaxPayload())
	}
	return fmt.Sprintf("payload of %d bytes not copied: with its provenance headers it exceeds %s; "+
		"the DLQ copy holds the headers, the message stays in %s at sequence %d", len(it.src.Data), limit, s.cfg.Stream, it.src.Seq)
}

func (s *sweeper) published(it *item, ack *jetstream.PubAck, err error) {
	var apiErr *jetstream.APIError
	switch {
	case err == nil && ack.Duplicate && it.tooLarge:
		it.rec.Status, it.rec.Error = StatusTooLarge, ""
	case err == nil && ack.Duplicate:
		// A retry clears the error of the attempt before it.
		it.rec.Status, it.rec.Error = StatusAlreadyMoved, ""
	case err == nil && it.tooLarge:
		it.rec.Status, it.rec.Error, it.rec.DLQSeq = StatusTooLarge, "", ack.Sequence
	case err == nil:
		it.rec.Status, it.rec.Error, it.rec.DLQSeq = StatusMoved, "", ack.Sequence
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		// The per-message subject already holds the copy (or pointer).
		it.rec.Status, it.rec.Error = StatusAlreadyMoved, ""
		if it.tooLarge {
			it.rec.Status = StatusTooLarge
		}
	default:
		it.rec.Status, it.rec.Error = StatusFailed, "copy not stored: "+err.Error()
	}
}

// shouldRemove applies the retention policy: workqueue streams lose the
// message, interest streams when no other consumer still needs it, limits
// streams only with DeleteSource.
func (s *sweeper) shouldRemove(it *item, infos map[string]*jetstream.ConsumerInfo) (bool, string) {
	switch s.retention {
	case jetstream.WorkQueuePolicy:
		return true, ""
	case jetstream.InterestPolicy:
		for name, ci := range infos {
			if name == it.adv.Consumer || !consumerWants(ci, it.src.Subject) {
				continue
			}
			if ci.AckFloor.Stream < it.src.Seq {
				return false, fmt.Sprintf("consumer %q has not acknowledged it yet", name)
			}
		}
		return true, ""
	default:
		if s.cfg.DeleteSource {
			return true, ""
		}
		return false, "limits retention (use --delete-source to remove it)"
	}
}

func (s *sweeper) consumerInfos(ctx context.Context) map[string]*jetstream.ConsumerInfo {
	out := map[string]*jetstream.ConsumerInfo{}
	st, err := s.js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return out
	}
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		out[ci.Name] = ci
	}
	return out
}

func consumerWants(ci *jetstream.ConsumerInfo, subject string) bool {
	filters := ci.Config.FilterSubjects
	if ci.Config.FilterSubject != "" {
		filters = append(slices.Clip(filters), ci.Config.FilterSubject)
	}
	return streamread.SubjectMatchesAny(filters, subject)
}

func (s *sweeper) count(r Record) {
	s.sum.Found++
	switch r.Status {
	case StatusMoved:
		s.sum.Moved++
		s.sum.Bytes += int64(r.Size)
	case StatusAlreadyMoved:
		s.sum.AlreadyMoved++
	case StatusGone:
		s.sum.Gone++
	case StatusFailed:
		s.sum.Failed++
	case StatusWouldMove:
		s.sum.WouldMove++
		s.sum.Bytes += int64(r.Size)
	case StatusTooLarge:
		s.sum.TooLarge++
	}
	switch r.Source {
	case SourceDeleted:
		if r.Status == StatusMoved || r.Status == StatusAlreadyMoved {
			s.sum.SourceDeleted++
		}
	case SourceKept:
		s.sum.SourceKept++
	}
}
