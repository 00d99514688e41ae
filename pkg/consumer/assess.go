package consumer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/retry"
)

// assess completes states read from the server with what the health
// model needs besides the consumer info (the lag, the dead letters that
// wait, the rules' message reads) and evaluates each one: the one path of
// consumer ls, status, watch, wait and explain. infos are the streams
// (by name; a stream missing there is evaluated without it), captures
// the advisory capture streams by source stream, rec the event recorder
// (nil: none; dead.go reads it where it records the consumer
// advisories). Every consumer of a stream whose state is in states is
// another consumer for the rules of the others.
func assess(ctx context.Context, js jetstream.JetStream, a *api, states []*State, infos, captures map[string]*jetstream.StreamInfo, rec *jetstream.StreamInfo, cfg ListConfig) error {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	leadOnSingleServer(states, infos)
	// What the user may not read is left unknown, not a failure: the
	// server refusing a read of a stream ends that stream's reads.
	r := newReads(ctx, a.client.Prefix)
	defer natsconn.Tolerate(a.client.NC, r.match, r.refused)()
	var wg sync.WaitGroup
	var dead map[string]*streamDead
	var deadErrs map[string]string
	wg.Add(1)
	go func() {
		defer wg.Done()
		dead, deadErrs = deadLetters(r, js, a.client, states, infos, captures, usableRecorder(rec), cfg.Workers, cfg.LagCache)
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
			if w, known := d.of(s.Consumer); known {
				n := w.total()
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
		if d, ok := dead[s.Stream]; ok && d.capture != nil {
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
