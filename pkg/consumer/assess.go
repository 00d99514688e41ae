package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/retry"
)

// assess completes states read from the server with what the health
// model needs besides the consumer info (the lag, the dead letters that
// wait, the rules' message reads) and evaluates each one: the one path of
// consumer ls, status, watch, wait and explain. infos are the streams
// (by name; a stream missing there is evaluated without it), captures
// the advisory capture streams by source stream. Every consumer of a
// stream whose state is in states is another consumer for the rules of
// the others.
func assess(ctx context.Context, js jetstream.JetStream, a *api, states []*State, infos, captures map[string]*jetstream.StreamInfo, cfg ListConfig) error {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	leadOnSingleServer(states, infos)
	// What the user may not read is left unknown, not a failure: the
	// server refusing a read of a stream ends that stream's reads.
	r := newReads(ctx, a.client.Prefix)
	defer natsconn.Tolerate(a.client.NC, r.match, r.refused)()
	var wg sync.WaitGroup
	var dead map[string]*deadCounts
	var deadErrs map[string]string
	wg.Add(1)
	go func() {
		defer wg.Done()
		dead, deadErrs = deadLetters(r, js, a.client, captures, cfg.Workers, cfg.LagCache)
	}()
	fillLag(r, a, states, cfg.Workers, cfg.LagCache)
	wg.Wait()
	// What this call read is what the next may reuse.
	defer cfg.LagCache.rotate()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	byStream := map[string][]*State{}
	for _, s := range states {
		byStream[s.Stream] = append(byStream[s.Stream], s)
		if e, ok := deadErrs[s.Stream]; ok && s.Info != nil {
			s.ReadErrors = append(s.ReadErrors, "dead letters: "+e)
		}
		if d, ok := dead[s.Stream]; ok && s.Info != nil {
			if w, covered := d.of(s.Consumer); covered {
				n := w.unswept + w.inDLQ
				s.DeadLetters, s.dead = &n, &w
			}
		}
	}
	errs := make([]error, len(states))
	parallel(len(states), cfg.Workers*2, func(i int) {
		s := states[i]
		var others []*State
		for _, o := range byStream[s.Stream] {
			if o != s {
				others = append(others, o)
			}
		}
		ev := &evaluation{t: cfg.Thresholds, fixed: cfg.Fixed, cache: cfg.LagCache, s: s, api: a.client, stream: infos[s.Stream], others: others}
		if d, ok := dead[s.Stream]; ok {
			ev.dlq = d.dlq
		}
		errs[i] = evaluate(r.of(s.Stream), ev)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// reads gives each stream's reads a context that ends when the server
// refuses this user a read of that stream (a permission violation), with
// the refusal as its cause; they all end with the parent.
type reads struct {
	parent context.Context
	prefix string
	mu     sync.Mutex
	ctxs   map[string]context.Context
	cancel map[string]context.CancelCauseFunc
}

func newReads(parent context.Context, prefix string) *reads {
	return &reads{parent: parent, prefix: prefix, ctxs: map[string]context.Context{}, cancel: map[string]context.CancelCauseFunc{}}
}

// of is the context of stream's reads.
func (r *reads) of(stream string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.ctxs[stream]; ok {
		return c
	}
	c, cancel := context.WithCancelCause(r.parent)
	r.ctxs[stream], r.cancel[stream] = c, cancel
	return c
}

// The reads an assessment makes, with the index of the stream's name
// among the subject's tokens after the API prefix.
var readSubjects = map[string]int{"STREAM.MSG.GET": 3, "DIRECT.GET": 2, "CONSUMER.CREATE": 2,
	"CONSUMER.MSG.NEXT": 3, "CONSUMER.DELETE": 2, "CONSUMER.INFO": 2, "STREAM.INFO": 2, "CONSUMER.LIST": 2}

// streamOf is the stream a read's subject names, "" when it is not a read.
func (r *reads) streamOf(subject string) string {
	rest, ok := strings.CutPrefix(subject, r.prefix)
	if !ok {
		return ""
	}
	tokens := strings.Split(rest, ".")
	for verb, i := range readSubjects {
		if strings.HasPrefix(rest, verb+".") && len(tokens) > i {
			return tokens[i]
		}
	}
	return ""
}

func (r *reads) match(subject string) bool { return r.streamOf(subject) != "" }

func (r *reads) refused(perr *natsconn.PermissionError) {
	stream := r.streamOf(perr.Subject)
	r.of(stream)
	r.mu.Lock()
	cancel := r.cancel[stream]
	r.mu.Unlock()
	cancel(perr)
}

// readError says why a read failed: the refusal that ended its stream's
// reads, or err.
func readError(ctx context.Context, err error) string {
	var perr *natsconn.PermissionError
	if cause := context.Cause(ctx); ctx.Err() != nil && errors.As(cause, &perr) {
		return perr.Error()
	}
	return err.Error()
}

// lagRetry is how a lag read that fails as during an election is tried
// again: within a second, so an answer such as "temporarily unavailable"
// (10008) is asked again, and a read that timed out is not.
var lagRetry = retry.Policy{Within: time.Second, Pause: 200 * time.Millisecond, MaxPause: 400 * time.Millisecond, Retryable: retry.Transient}

// fillLag reads, for each consumer with unprocessed messages, the oldest
// message it has not had delivered: the first one after its delivered
// stream sequence that matches its filter (one get per filter subject).
// Its age when the consumer state was read is the lag. A get that fails
// leaves the lag unknown (nil) and says why in ReadErrors: the listing
// does not fail for it.
func fillLag(r *reads, api *api, states []*State, workers int, cache *LagCache) {
	var todo []*State
	for _, s := range states {
		if s.Unprocessed > 0 && !s.NoLeader {
			todo = append(todo, s)
		}
	}
	parallel(len(todo), workers*2, func(i int) {
		s := todo[i]
		if e, ok := cache.get(s); ok {
			s.setLag(e.seq, e.at)
			return
		}
		ctx := r.of(s.Stream)
		var m *envelope.Message
		// A stream whose leader just changed does not answer for a
		// moment: a few tries ride that out (retry.Transient).
		err := retry.Do(ctx, lagRetry, func(ctx context.Context) (err error) {
			m, err = firstMatching(ctx, api.client, s.Stream, s.FilterSubjects, s.DeliveredStreamSeq+1)
			return err
		})
		if err != nil {
			s.ReadErrors = append(s.ReadErrors, "lag: "+readError(ctx, err))
			return
		}
		if m == nil {
			return
		}
		cache.put(s, m.Seq, m.Time)
		s.setLag(m.Seq, m.Time)
	})
}

// deadCounts are, for one source stream with a capture, the consumers
// the capture covers and their dead letters that wait.
type deadCounts struct {
	source   string
	subjects []string
	dlq      string
	waiting  map[string]deadWaiting
	exact    bool
}

// of returns the dead letters of consumer that wait, and false when the
// capture does not cover it (set up for other consumers only).
func (d *deadCounts) of(consumer string) (deadWaiting, bool) {
	if !dlq.FiltersCover(d.subjects, d.source, consumer) {
		return deadWaiting{}, false
	}
	w := d.waiting[consumer]
	w.dlq, w.exact = d.dlq, d.exact
	return w, true
}

// MaxDLQScan is the largest DLQ whose entries are read to count each
// consumer's; past it, every entry counts for each consumer with dead
// letters captured.
const MaxDLQScan = 10000

// maxUnsweptScan bounds the unswept advisories read per consumer.
const maxUnsweptScan = 1000

const advisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER."

// deadLetters finds, per source stream with a capture, the dead letters
// that wait for each consumer: advisories captured after the sweep's
// checkpoint for that consumer (the ack floor of the sweep durable that
// reads its advisories), not counting those the server sends of its own
// when it deletes a pending message; and the entries of the DLQ stream
// whose Jetctl-Dlq-Consumer is the consumer. The capture's older
// advisories (kept for its retention, 7 days by default) are history,
// not waiting dead letters.
//
// A source stream whose dead letters could not be read is in the second
// map, with why.
func deadLetters(r *reads, js jetstream.JetStream, client *jsapi.Client, captures map[string]*jetstream.StreamInfo, workers int, cache *LagCache) (map[string]*deadCounts, map[string]string) {
	sources := make([]string, 0, len(captures))
	for source := range captures {
		sources = append(sources, source)
	}
	found := make([]*deadCounts, len(sources))
	errs := make([]error, len(sources))
	parallel(len(sources), workers, func(i int) {
		found[i], errs[i] = deadLettersOf(r, js, client, sources[i], captures[sources[i]], cache)
	})
	out, failed := map[string]*deadCounts{}, map[string]string{}
	for i, d := range found {
		if errs[i] != nil {
			failed[sources[i]] = errs[i].Error()
		} else if d != nil {
			out[sources[i]] = d
		}
	}
	return out, failed
}

func deadLettersOf(r *reads, js jetstream.JetStream, client *jsapi.Client, source string, capture *jetstream.StreamInfo, cache *LagCache) (*deadCounts, error) {
	name := capture.Config.Name
	ctx := r.of(name)
	fail := func(stream string, ctx context.Context, err error) error {
		return fmt.Errorf("stream %q: %s", stream, readError(ctx, err))
	}
	// One info request, with the advisories' subjects counted.
	var info struct {
		jetstream.StreamInfo
		Error *jetstream.APIError `json:"error,omitempty"`
	}
	if err := client.Request(ctx, "STREAM.INFO."+name, map[string]string{"subjects_filter": advisoryPrefix + "*." + source + ".*"}, &info); err != nil {
		return nil, fail(name, ctx, err)
	}
	if info.Error != nil {
		if info.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
			return nil, nil
		}
		return nil, fail(name, ctx, info.Error)
	}
	d := &deadCounts{source: source, subjects: dlq.CaptureFilters(&info.Config), waiting: map[string]deadWaiting{}, exact: true,
		dlq: dlq.DefaultNames(source, "").DLQ}
	if m := info.Config.Metadata[dlq.MetaDLQ]; m != "" {
		d.dlq = m
	}
	captured := map[string]bool{}
	for subject, n := range info.State.Subjects {
		kind, rest, _ := strings.Cut(strings.TrimPrefix(subject, advisoryPrefix), ".")
		if n > 0 && (kind == "MAX_DELIVERIES" || kind == "MSG_TERMINATED") {
			captured[strings.TrimPrefix(rest, source+".")] = true
		}
	}
	if len(captured) == 0 {
		return d, nil
	}
	// The sweep's checkpoints: each sweep durable's ack floor, with the
	// advisory subjects it reads (none: all).
	type checkpoint struct {
		floor   uint64
		filters []string
	}
	var checkpoints []checkpoint
	durables, err := (&api{client: client}).listConsumers(ctx, name)
	if err != nil {
		return nil, fail(name, ctx, err)
	}
	for _, c := range durables {
		if strings.HasPrefix(c.Consumer, dlq.SweepDurable) && c.Info != nil {
			checkpoints = append(checkpoints, checkpoint{c.AckFloorStreamSeq, c.FilterSubjects})
		}
	}
	for consumer := range captured {
		var from uint64
		subject := advisoryPrefix + "*." + source + "." + consumer
		for _, c := range checkpoints {
			if len(c.filters) == 0 || filtersOverlap(c.filters, []string{subject}) {
				from = max(from, c.floor)
			}
		}
		n, err := unswept(ctx, client, name, subject, from+1, source)
		if err != nil {
			return nil, fail(name, ctx, err)
		}
		w := d.waiting[consumer]
		w.unswept = n
		d.waiting[consumer] = w
	}
	// The DLQ's entries, by consumer.
	ctx = r.of(d.dlq)
	dst, err := js.Stream(ctx, d.dlq)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return d, nil
	}
	if err != nil {
		return nil, fail(d.dlq, ctx, err)
	}
	ds := dst.CachedInfo().State
	if ds.Msgs == 0 {
		return d, nil
	}
	key := fmt.Sprintf("%s %d %d %d", d.dlq, ds.FirstSeq, ds.LastSeq, ds.Msgs)
	counts, ok := cache.dlqCounts(key)
	if !ok && ds.Msgs > MaxDLQScan {
		d.exact = false
		counts = map[string]int64{}
		for consumer := range captured {
			counts[consumer] = int64(ds.Msgs)
		}
	} else if !ok {
		counts = map[string]int64{}
		err := dlq.Each(ctx, js, d.dlq, dlq.Select{}, func(e dlq.Entry) error {
			counts[e.Consumer]++
			return nil
		})
		if err != nil {
			return nil, fail(d.dlq, ctx, err)
		}
		cache.putDLQCounts(key, counts)
	}
	for consumer, n := range counts {
		w := d.waiting[consumer]
		w.inDLQ = n
		d.waiting[consumer] = w
	}
	return d, nil
}

// unswept counts the dead-letter advisories on subject from seq on,
// leaving out those the server sends of its own (a pending message
// deleted), up to maxUnsweptScan.
func unswept(ctx context.Context, client *jsapi.Client, capture, subject string, seq uint64, source string) (int64, error) {
	var n int64
	for i := 0; i < maxUnsweptScan; i++ {
		m, err := client.MsgGet(ctx, capture, jsapi.MsgGetRequest{Seq: seq, NextFor: subject})
		if errors.Is(err, jsapi.ErrNoMessage) {
			break
		}
		if err != nil {
			return 0, err
		}
		seq = m.Seq + 1
		a, err := dlq.ParseAdvisory(m.Data)
		if err != nil || a.ServerCaused() || a.Stream != source {
			continue
		}
		n++
	}
	return n, nil
}
