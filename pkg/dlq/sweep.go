package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/mover"
	"github.com/jetctl/jetctl/pkg/retry"
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
	msg *nats.Msg
	fut jetstream.PubAckFuture
	// sync: the async publish was refused at once; publish and wait.
	sync bool
	// scanned: found by --scan, not by an advisory.
	scanned bool
	// tooLarge: the copy would exceed max_payload; msg is its pointer copy.
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
	// direct: the source answers direct gets, and dead messages at
	// consecutive sequences are got with batched direct gets (see
	// prefetch).
	direct bool
}

// neededAge is how old the other consumers' ack floors may be when an
// interest stream's source message is judged: an older reading only keeps
// more messages (an ack floor does not go back), never deletes one that
// is still needed.
const neededAge = 100 * time.Millisecond

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

// admit turns an advisory into an item: a dead message to move, or one
// to pass on and acknowledge in its turn (server-caused, unreadable, not
// this sweep's, a duplicate).
func (s *sweeper) admit(data []byte, ack jetstream.Msg) *item {
	a, err := ParseAdvisory(data)
	if err != nil || a.Stream != s.cfg.Stream || a.ServerCaused() ||
		(len(s.cfg.Consumers) > 0 && !slices.Contains(s.cfg.Consumers, a.Consumer)) {
		return &item{ack: ack, pass: passIgnored}
	}
	it := &item{adv: a, ack: ack}
	if !s.claim(it) {
		it.pass = passDuplicate
	}
	return it
}

// claim records it as the first of its dead message, or points it at the
// one that came first (false).
func (s *sweeper) claim(it *item) bool {
	k := it.adv.StreamSeq
	if orig, ok := s.seen[k]; ok {
		it.orig = orig
		return false
	}
	it.out = &outcome{}
	s.seen[k] = it.out
	s.admitted++
	return true
}

// fromDurable feeds the advisories the durable delivers until it has none
// left, or Max dead messages are admitted.
func (s *sweeper) fromDurable(ctx context.Context, durable string, push func(*item) bool) error {
	cons, err := s.js.Consumer(ctx, s.n.Capture, durable)
	if err != nil {
		return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
	}
	empty := 0
	for ctx.Err() == nil {
		want := s.cfg.Batch
		if s.cfg.Max > 0 {
			// Every advisory fetched may be a dead message of its own.
			want = min(want, s.cfg.Max-s.admitted)
			if want <= 0 {
				return nil
			}
		}
		got, stopped := 0, false
		// A fetch that the server did not answer (a restart, an election)
		// is tried again once the connection is back; an answer without
		// messages is the end.
		err := retryTransient(ctx, s.js.Conn(), s.api.Timeout, func() error {
			b, err := cons.FetchNoWait(want)
			if err != nil {
				return err
			}
			var items []*item
			for m := range b.Messages() {
				got++
				items = append(items, s.admit(m.Data(), m))
			}
			s.arrange(items)
			for _, it := range items {
				// Interrupted: the rest of the batch stays
				// unacknowledged, for the next run.
				if !stopped && !push(it) {
					stopped = true
				}
			}
			if err := b.Error(); got == 0 && err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
				return err
			}
			return nil
		})
		if stopped || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream %q: consumer %q: %w", s.n.Capture, durable, err)
		}
		if got == 0 {
			// No messages: the end, unless the server says some are
			// still to be delivered (the fetch met a restart or an
			// election, and was answered before the consumer was back).
			if empty++; empty > transientAttempts {
				return nil
			}
			ci, err := cons.Info(ctx)
			if err == nil && ci.NumPending == 0 {
				return nil
			}
			if retry.Sleep(ctx, time.Duration(empty)*100*time.Millisecond) != nil {
				return nil
			}
			continue
		}
		empty = 0
	}
	return nil
}

// dryRunAdvisories reads the advisories the durable has not acked with
// gets, so that a dry run disturbs no consumer.
func (s *sweeper) dryRunAdvisories(ctx context.Context, durable string, filters []string, push func(*item) bool) error {
	from := uint64(1)
	if c, err := s.js.Consumer(ctx, s.n.Capture, durable); err == nil {
		from = c.CachedInfo().AckFloor.Stream + 1
	} else if c, err := s.js.Consumer(ctx, s.n.Capture, s.n.Durable); err == nil {
		from = c.CachedInfo().AckFloor.Stream + 1
	}
	for ctx.Err() == nil {
		if s.cfg.Max > 0 && s.admitted >= s.cfg.Max {
			return nil
		}
		m, err := s.api.MsgGet(ctx, s.n.Capture, jsapi.MsgGetRequest{Seq: from, NextFor: ">"})
		if errors.Is(err, jsapi.ErrNoMessage) {
			return nil
		}
		if err != nil {
			return err
		}
		from = m.Seq + 1
		if len(filters) > 0 && !slices.ContainsFunc(filters, func(f string) bool { return streamread.SubjectMatches(f, m.Subject) }) {
			continue
		}
		if !push(s.admit(m.Data, nil)) {
			return nil
		}
	}
	return nil
}

// run moves the dead messages feed pushes, as a pipeline:
//
//	feed -> get (from the stream leader, getWorkers at a time)
//	     -> publish the copy (async, paced by --rate)
//	     -> wait for the copy's acknowledgement, in order
//	     -> remove the source (deleteWorkers at a time, through one pipe)
//	     -> acknowledge the advisory, count, report: in order
//
// Each step for a message starts only after the one before it is
// confirmed for it, and advisories are acknowledged in the order they
// were fetched, so the durable's ack floor only ever passes messages that
// are done. Interrupted, feed stops, messages not yet published are left
// (unacknowledged) for the next run, and those already published are
// finished.
func (s *sweeper) run(ctx context.Context, feed func(push func(*item) bool) error) error {
	work := context.WithoutCancel(ctx)
	p, err := newPiped(ctx, s.js, s.api)
	if err != nil {
		return err
	}
	defer p.close()
	in := make(chan *item, pipeDepth)
	var feedErr error
	sliceLeft := 0
	go func() {
		defer close(in)
		feedErr = feed(func(it *item) bool {
			if ctx.Err() != nil {
				return false
			}
			// --rate paces the dead messages taken (a get, a copy and a
			// delete each), whatever becomes of them, a slice at a time.
			if s.limiter != nil && !s.cfg.DryRun && it.pass == passNone {
				if sliceLeft == 0 {
					if s.limiter.WaitN(ctx, s.slice) != nil {
						return false
					}
					sliceLeft = s.slice
				}
				sliceLeft--
			}
			select {
			case in <- it:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	got := mover.Ordered(s.prefetch(ctx, in), getWorkers, func(it *item, done func()) { s.get(work, p, it, done) })
	sent := mover.Serial(got, pipeDepth, func(it *item) { s.publish(ctx, it) })
	settled := mover.Serial(sent, pipeDepth, func(it *item) { s.settle(work, it) })
	removed := mover.Ordered(settled, deleteWorkers, func(it *item, done func()) { s.remove(work, p, it, done) })
	for it := range removed {
		s.finish(it)
	}
	if !s.cfg.DryRun {
		_ = s.js.Conn().FlushWithContext(work)
	}
	s.progress()
	// in is closed once feed has returned.
	return feedErr
}

// get reads the dead message from the stream leader, unless prefetch has,
// and calls done when that is over.
func (s *sweeper) get(work context.Context, p *piped, it *item, done func()) {
	if it.pass != passNone {
		done()
		return
	}
	a := it.adv
	it.rec = Record{Stream: a.Stream, StreamSeq: a.StreamSeq, Consumer: a.Consumer, Reason: a.DeadReason(),
		TermReason: a.Reason, Deliveries: a.Deliveries, FoundBy: "advisory", DLQStream: s.n.DLQ}
	if it.scanned {
		it.rec.FoundBy = "scan"
	}
	if it.src != nil {
		s.got(work, it, it.src, nil)
		done()
		return
	}
	p.get(s.cfg.Stream, jsapi.MsgGetRequest{Seq: a.StreamSeq}, func(m *envelope.Message, err error) {
		if errors.Is(err, jsapi.ErrNoMessage) {
			// got asks the DLQ: not on the pipe's goroutine.
			go func() {
				s.got(work, it, nil, err)
				done()
			}()
			return
		}
		s.got(work, it, m, err)
		done()
	})
}

// got records what the get of it's dead message found.
func (s *sweeper) got(work context.Context, it *item, m *envelope.Message, err error) {
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
}

// arrange orders a batch for the pipeline: the ignored advisories first,
// then the dead messages by stream sequence (a duplicate advisory after the
// one it repeats), and marks where a row of dead messages at consecutive
// sequences ends (see prefetch). Advisories are acknowledged in this
// order, each once its dead message is done, which keeps the durable's ack
// floor a checkpoint whatever the order within a batch.
func (s *sweeper) arrange(items []*item) {
	slices.SortStableFunc(items, func(a, b *item) int {
		if ai, bi := a.pass == passIgnored, b.pass == passIgnored; ai != bi {
			if ai {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.adv.StreamSeq, b.adv.StreamSeq)
	})
	var last *item
	for _, it := range items {
		if it.pass != passNone {
			continue
		}
		if last != nil && it.adv.StreamSeq != last.adv.StreamSeq+1 {
			last.rowEnd = true
		}
		last = it
	}
	if last != nil {
		last.rowEnd = true
	}
}

// prefetch passes the items of in on in their order. Where the source
// answers direct gets, it gets dead messages at consecutive sequences (one
// at N, the next at N+1) with one batched direct get per row of them,
// directWorkers rows at a time, instead of a get each. A stored message
// cannot differ between replicas, so whichever replica answers gives the
// same copy. A message the batch does not return (gone, or not yet on the
// replica that answered) is left to the get stage, which asks the leader.
func (s *sweeper) prefetch(ctx context.Context, in <-chan *item) <-chan *item {
	if !s.direct {
		return in
	}
	rows := make(chan []*item)
	go func() {
		defer close(rows)
		var row []*item
		send := func() {
			if len(row) > 0 {
				rows <- row
				row = nil
			}
		}
		for it := range in {
			inRow := it.pass == passNone
			if !inRow || len(row) >= directRow || (len(row) > 0 && row[len(row)-1].adv.StreamSeq+1 != it.adv.StreamSeq) {
				send()
			}
			row = append(row, it)
			// A row waits for its next message only where the feeder
			// said one follows.
			if !inRow || it.rowEnd {
				send()
			}
		}
		send()
	}()
	// directWorkers goroutines, each with a getter (one reply inbox), take
	// the rows one at a time (a goroutine per row, with more rows
	// waiting, raised the peak RSS of a 100,000-message sweep by 5 MiB).
	type job struct {
		row  []*item
		done func()
	}
	jobs := make(chan job)
	var workers sync.WaitGroup
	for range directWorkers {
		workers.Go(func() {
			g := streamread.NewDirectGetter(s.js, s.cfg.Stream)
			defer g.Close()
			for j := range jobs {
				s.getRow(ctx, g, j.row)
				j.done()
			}
		})
	}
	// At most directWorkers rows in the stage, so a worker is free for
	// each row started: directWorkers direct gets in flight.
	done := mover.Ordered(rows, directWorkers, func(row []*item, done func()) { jobs <- job{row, done} })
	out := make(chan *item, pipeDepth)
	go func() {
		defer close(out)
		for row := range done {
			for _, it := range row {
				out <- it
			}
		}
		close(jobs)
		workers.Wait()
	}()
	return out
}

// getRow gets a row of dead messages at consecutive sequences with one
// batched direct get; a row of one is left to the get stage.
func (s *sweeper) getRow(ctx context.Context, g *streamread.DirectGetter, row []*item) {
	first := row[0].adv.StreamSeq
	if len(row) < 2 || row[0].pass != passNone {
		return
	}
	_ = retryTransient(ctx, s.js.Conn(), s.api.Timeout, func() error {
		return g.Get(ctx, jsapi.MsgGetRequest{Seq: first, Batch: len(row)}, func(m *envelope.Message) error {
			if m.Seq < first || m.Seq-first >= uint64(len(row)) {
				return streamread.ErrStop
			}
			row[m.Seq-first].src = m
			return nil
		})
	})
}

// publish sends the copy to the DLQ without waiting for its
// acknowledgement. Once interrupted (or the lease lost) it sends nothing
// more: those messages stay for the next run.
func (s *sweeper) publish(ctx context.Context, it *item) {
	if it.pass != passNone || it.src == nil {
		return
	}
	sweptAt := time.Now()
	if s.cfg.DryRun {
		it.rec.Status = StatusWouldMove
		if WireSize(BuildCopy(s.n, it.src, it.adv, sweptAt)) > s.js.Conn().MaxPayload() {
			it.rec.Status, it.rec.SourceNote = StatusTooLarge, s.tooLargeNote(it)
		}
		return
	}
	if s.stopped || ctx.Err() != nil {
		s.stopped = true
		it.rec.Status = ""
		it.src = nil
		return
	}
	it.msg = BuildCopy(s.n, it.src, it.adv, sweptAt)
	if WireSize(it.msg) > s.js.Conn().MaxPayload() {
		it.msg, it.tooLarge = PointerCopy(it.msg), true
	}
	fut, err := s.js.PublishMsgAsync(it.msg)
	if err != nil {
		it.sync = true
		return
	}
	it.fut = fut
}

// settle waits for the copy's acknowledgement; a copy refused or not
// acknowledged in time is published again, waiting for the answer.
func (s *sweeper) settle(work context.Context, it *item) {
	switch {
	case it.sync:
		s.publishSync(work, it)
	case it.fut != nil:
		// Usually the acknowledgement is there already: no timer then.
		select {
		case ack := <-it.fut.Ok():
			s.published(it, ack, nil)
			it.fut, it.msg = nil, nil
			return
		default:
		}
		t := time.NewTimer(2 * s.api.Timeout)
		defer t.Stop()
		select {
		case ack := <-it.fut.Ok():
			s.published(it, ack, nil)
		case err := <-it.fut.Err():
			s.published(it, nil, err)
			if it.rec.Status == StatusFailed {
				it.rec.Error = ""
				s.publishSync(work, it)
			}
		case <-t.C:
			s.publishSync(work, it)
		}
		it.fut = nil
	}
	it.msg = nil
}

// remove deletes the source message where the retention policy calls for
// it, once its copy is acknowledged, and calls done when that is over.
func (s *sweeper) remove(work context.Context, p *piped, it *item, done func()) {
	if !s.deletes(work, it) {
		done()
		return
	}
	p.delete(s.cfg.Stream, it.src.Seq, func(err error) {
		if err != nil {
			it.rec.Status, it.rec.Error = StatusFailed, "copied, but the source could not be deleted: "+err.Error()
		} else {
			it.rec.Source = SourceDeleted
		}
		done()
	})
}

// deletes says whether it's source message is to be deleted now; where it
// stays on purpose (too large to copy, still needed), it records why.
func (s *sweeper) deletes(work context.Context, it *item) bool {
	switch {
	case it.pass != passNone || it.src == nil:
		return false
	case it.rec.Status == StatusTooLarge:
		// Only a pointer is in the DLQ: the payload stays where it is.
		it.rec.Source, it.rec.SourceNote = SourceKept, s.tooLargeNote(it)
		return false
	case it.rec.Status != StatusMoved && it.rec.Status != StatusAlreadyMoved:
		return false
	}
	remove, note := s.shouldRemove(it, s.neededBy(work))
	if !remove {
		it.rec.Source, it.rec.SourceNote = SourceKept, note
	}
	return remove
}

// neededBy returns the source's consumers, for an interest stream.
func (s *sweeper) neededBy(ctx context.Context) map[string]*jetstream.ConsumerInfo {
	if s.retention != jetstream.InterestPolicy {
		return nil
	}
	s.needMu.Lock()
	defer s.needMu.Unlock()
	if s.needed == nil || time.Since(s.needAt) > neededAge {
		s.needed, s.needAt = s.consumerInfos(ctx), time.Now()
	}
	return s.needed
}

// finish acknowledges the advisory of a message that is done (a failed
// or interrupted one comes back on the next run), counts and reports it.
func (s *sweeper) finish(it *item) {
	ack := func() {
		if it.ack != nil {
			_ = it.ack.Ack()
		}
	}
	switch it.pass {
	case passIgnored:
		s.sum.Ignored++
		ack()
		return
	case passDuplicate:
		s.sum.Duplicates++
		// Acknowledged only when the message it repeats was handled:
		// it may be a redelivery of that very advisory.
		if it.orig.done {
			ack()
		}
		return
	}
	if it.rec.Status == "" {
		return
	}
	if it.rec.Status != StatusFailed {
		it.out.done = true
		ack()
	}
	it.src = nil
	s.count(it.rec)
	if s.cfg.OnRecord != nil {
		s.cfg.OnRecord(it.rec)
	}
	if s.finished++; s.finished%pipeDepth == 0 {
		s.progress()
	}
}

func (s *sweeper) progress() {
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
	switch {
	case alreadyCopied(ack, err):
		// The per-message subject already holds the copy (or pointer); a
		// retry clears the error of the attempt before it.
		it.rec.Status, it.rec.Error = StatusAlreadyMoved, ""
		if it.tooLarge {
			it.rec.Status = StatusTooLarge
		}
	case err == nil && it.tooLarge:
		it.rec.Status, it.rec.Error, it.rec.DLQSeq = StatusTooLarge, "", ack.Sequence
	case err == nil:
		it.rec.Status, it.rec.Error, it.rec.DLQSeq = StatusMoved, "", ack.Sequence
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
