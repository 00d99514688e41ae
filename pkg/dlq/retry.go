package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/setupresult"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// A redrive to a message's original subject reaches every consumer whose
// filter matches it, not only the one that gave up on it. A retry subject
// is a subject of the source stream that only that consumer's filter
// includes: _jetctl.retry.<stream>.<consumer>.<original subject>. Setup
// adds it (with RetrySubject) to the stream's subjects and to the
// consumer's filter_subjects; a redrive then publishes that consumer's
// dead letters there, with the original subject in HeaderRedriveSubject.

// HeaderRedriveSubject is the original subject of a message a redrive sent
// through a retry subject: a worker reads it to handle the message as the
// original. A DLQ copy of such a message keeps it, so a later redrive
// knows the original subject too.
const HeaderRedriveSubject = "Jetctl-Redrive-Subject"

// RetryPrefix is the prefix of consumer's retry subjects on stream.
func RetryPrefix(stream, consumer string) string {
	return "_jetctl.retry." + stream + "." + consumer
}

// RetryFilter is the wildcard of consumer's retry subjects on stream.
func RetryFilter(stream, consumer string) string { return RetryPrefix(stream, consumer) + ".>" }

// RetrySubjectFor is where a redrive sends consumer's dead letter of
// original subject.
func RetrySubjectFor(stream, consumer, original string) string {
	return RetryPrefix(stream, consumer) + "." + original
}

// ConsumerFilters are a consumer's filter subjects; none means every
// subject of the stream.
func ConsumerFilters(c jetstream.ConsumerConfig) []string {
	out := slices.Clone(c.FilterSubjects)
	if c.FilterSubject != "" {
		out = append(out, c.FilterSubject)
	}
	return out
}

// wantsAny: a consumer with filters receives a subject matching one of
// them; one without receives every subject of the stream.
func filtersOverlap(filters []string, subject string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if streamread.SubjectsOverlap(f, subject) {
			return true
		}
	}
	return false
}

// RetrySetupConfig says whose retry subjects to add or remove.
type RetrySetupConfig struct {
	Stream    string
	Consumers []string
	// Remove takes the retry subjects out again (refused while the
	// consumer still has retry messages to process).
	Remove bool
	DryRun bool
}

// SetupRetrySubjects adds (or removes) the retry subject of each consumer
// to the stream's subjects and to the consumer's filter subjects, and
// reports what it did (or would do) as setup's resources. Everything that
// can refuse is checked before the first change; run again, it changes
// nothing.
func SetupRetrySubjects(ctx context.Context, js jetstream.JetStream, cfg RetrySetupConfig) ([]setupresult.Resource, error) {
	if len(cfg.Consumers) == 0 {
		return nil, fmt.Errorf("%w: a retry subject is per consumer: name it with --consumer", ErrInvalid)
	}
	src, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	sc := src.CachedInfo().Config
	if sc.Retention == jetstream.WorkQueuePolicy && !cfg.Remove {
		return nil, fmt.Errorf("%w: stream %q has workqueue retention: each subject goes to one consumer, so a redrive to the original subject reaches only the consumer that gave up on it; no retry subject is needed", ErrInvalid, cfg.Stream)
	}
	infos := map[string]*jetstream.ConsumerInfo{}
	l := src.ListConsumers(ctx)
	for ci := range l.Info() {
		infos[ci.Name] = ci
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: consumers: %w", cfg.Stream, err)
	}
	a := jsapi.New(js)
	type change struct {
		name    string
		filters []string
		update  bool
	}
	var changes []change
	var out []setupresult.Resource
	subjects := slices.Clone(sc.Subjects)
	for _, c := range cfg.Consumers {
		ci, ok := infos[c]
		if !ok {
			return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, c, jetstream.ErrConsumerNotFound)
		}
		retry := RetryFilter(cfg.Stream, c)
		filters := ConsumerFilters(ci.Config)
		if !cfg.Remove {
			if others := othersReceiving(infos, c, retry); len(others) > 0 {
				return nil, fmt.Errorf("%w: stream %q: %s would receive %s too (no filter, or a filter that matches it): a retry subject of %q is not %q's alone; give %s filter subjects that leave _jetctl.> out, or redrive with --all-consumers",
					ErrInvalid, cfg.Stream, quoteList(others), retry, c, c, quoteList(others))
			}
			if !slices.Contains(subjects, retry) {
				subjects = append(subjects, retry)
			}
			switch {
			case len(filters) == 0:
				out = append(out, setupresult.Resource{Kind: "consumer filter", Name: cfg.Stream + " > " + c, Action: setupresult.ActionExists, Detail: "no filter: receives " + retry + " already"})
			case slices.Contains(filters, retry):
				out = append(out, setupresult.Resource{Kind: "consumer filter", Name: cfg.Stream + " > " + c, Action: setupresult.ActionExists, Detail: strings.Join(filters, ", ")})
			default:
				changes = append(changes, change{name: c, filters: append(filters, retry), update: true})
			}
			continue
		}
		// Removal: refused while retry messages wait above the ack floor.
		m, err := a.MsgGet(ctx, cfg.Stream, jsapi.MsgGetRequest{Seq: ci.AckFloor.Stream + 1, NextFor: retry})
		switch {
		case err == nil:
			return nil, fmt.Errorf("%w: stream %q: consumer %q has not yet processed the retry message at sequence %d (%s): removing its retry subject now would strand it; let it catch up first",
				ErrInvalid, cfg.Stream, c, m.Seq, m.Subject)
		case !errors.Is(err, jsapi.ErrNoMessage):
			return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
		}
		subjects = slices.DeleteFunc(subjects, func(s string) bool { return s == retry })
		if slices.Contains(filters, retry) {
			changes = append(changes, change{name: c, filters: slices.DeleteFunc(filters, func(s string) bool { return s == retry }), update: true})
		}
	}
	action := func(would, done string) string {
		if cfg.DryRun {
			return would
		}
		return done
	}
	streamChanged := !slices.Equal(subjects, sc.Subjects)
	streamRes := setupresult.Resource{Kind: "stream subjects", Name: cfg.Stream, Action: setupresult.ActionExists, Detail: strings.Join(subjects, ", ")}
	if streamChanged {
		streamRes.Action = action(setupresult.ActionWouldUpdate, setupresult.ActionUpdated)
	}
	// Adding: the stream takes the subject before a consumer may filter on
	// it. Removing: the consumers let go of it before the stream does.
	updateStream := func() error {
		if !streamChanged || cfg.DryRun {
			return nil
		}
		sc.Subjects = subjects
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("stream %q: subjects: %w", cfg.Stream, err)
		}
		return nil
	}
	if !cfg.Remove {
		if err := updateStream(); err != nil {
			return nil, err
		}
		out = append([]setupresult.Resource{streamRes}, out...)
	}
	for _, ch := range changes {
		res := setupresult.Resource{Kind: "consumer filter", Name: cfg.Stream + " > " + ch.name, Action: action(setupresult.ActionWouldUpdate, setupresult.ActionUpdated), Detail: strings.Join(ch.filters, ", ")}
		if !cfg.DryRun {
			cc := infos[ch.name].Config
			cc.FilterSubject, cc.FilterSubjects = "", ch.filters
			if len(ch.filters) == 1 {
				cc.FilterSubject, cc.FilterSubjects = ch.filters[0], nil
			}
			if err := updateFilters(ctx, js, cfg.Stream, cc, ch.filters); err != nil {
				return nil, err
			}
		}
		out = append(out, res)
	}
	if cfg.Remove {
		if err := updateStream(); err != nil {
			return nil, err
		}
		out = append(out, streamRes)
	}
	return out, nil
}

// updateFilters updates a consumer to cfg, whose filters are filters, and
// judges the update by what the server then holds, read back: the reply
// to the first update of a consumer after a server restart carries the
// config it had before (TestFactFirstUpdateAfterRestartRepliesTheOldConfig),
// and nats.go, seeing no filter_subjects there, fails with "multiple
// consumer filter subjects not supported by nats-server" although the
// server applied the update. A server that really lacks them (before
// 2.10) holds other filters than asked, and that is the error.
func updateFilters(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, filters []string) error {
	name := cfg.Durable
	if name == "" {
		name = cfg.Name
	}
	_, err := js.UpdateConsumer(ctx, stream, cfg)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerMultipleFilterSubjectsNotSupported) {
		return fmt.Errorf("stream %q: consumer %q: filter subjects: %w", stream, name, err)
	}
	c, rerr := js.Consumer(ctx, stream, name)
	if rerr != nil {
		return fmt.Errorf("stream %q: consumer %q: reading the filter subjects back after the update: %w", stream, name, rerr)
	}
	held := ConsumerFilters(c.CachedInfo().Config)
	if !sameSet(held, filters) {
		if err != nil {
			return fmt.Errorf("stream %q: consumer %q: filter subjects: %w (the server holds %s)", stream, name, err, strings.Join(held, ", "))
		}
		return fmt.Errorf("stream %q: consumer %q: filter subjects: the server holds %s after the update, not %s", stream, name, strings.Join(held, ", "), strings.Join(filters, ", "))
	}
	return nil
}

// sameSet reports whether a and b hold the same subjects, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// othersReceiving names the consumers other than consumer whose filters
// overlap subject (a subject or a wildcard), sorted.
func othersReceiving(infos map[string]*jetstream.ConsumerInfo, consumer, subject string) []string {
	var out []string
	for name, ci := range infos {
		if name != consumer && filtersOverlap(ConsumerFilters(ci.Config), subject) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// router decides where a redrive sends each DLQ message: to the
// original subject when no other consumer of the source receives it
// there (always on a workqueue stream) or when every consumer is asked
// for, else to the retry subject of the consumer that gave up on it,
// where one is set up. A message that has neither is refused.
type router struct {
	stream       string
	allConsumers bool
	infos        map[string]*jetstream.ConsumerInfo
	subjects     []string
}

// newRouter reads the source stream's subjects and consumers once.
func newRouter(ctx context.Context, js jetstream.JetStream, source string, allConsumers bool) (*router, error) {
	r := &router{stream: source, allConsumers: allConsumers, infos: map[string]*jetstream.ConsumerInfo{}}
	if source == "" || allConsumers {
		return r, nil
	}
	st, err := js.Stream(ctx, source)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// The source is gone: nobody else receives anything there.
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", source, err)
	}
	if st.CachedInfo().Config.Retention == jetstream.WorkQueuePolicy {
		// The server gives each subject to one consumer: the original
		// subject reaches the one that gave up on it alone, and the
		// selection need not be read twice.
		return r, nil
	}
	r.subjects = st.CachedInfo().Config.Subjects
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		r.infos[ci.Name] = ci
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: consumers: %w", source, err)
	}
	return r, nil
}

// originalSubject is the subject e was first published to: a message
// that died on a retry subject says it in HeaderRedriveSubject.
func originalSubject(e Entry) string {
	if e.Message != nil && e.Message.Header != nil {
		if s := e.Message.Header.Get(HeaderRedriveSubject); s != "" {
			return s
		}
	}
	return e.Subject
}

// hasRetry: consumer's retry subject is in the stream and its filter.
func (r *router) hasRetry(consumer string) bool {
	ci, ok := r.infos[consumer]
	if !ok {
		return false
	}
	retry := RetryFilter(r.stream, consumer)
	if !slices.Contains(r.subjects, retry) {
		return false
	}
	filters := ConsumerFilters(ci.Config)
	return len(filters) == 0 || slices.Contains(filters, retry)
}

// route returns the subject to publish e to, and whether it is a retry
// subject; others names the consumers the original subject would reach
// besides e's own, when it is refused.
func (r *router) route(e Entry) (subject string, retry bool, others []string) {
	orig := originalSubject(e)
	if r.allConsumers || len(r.infos) == 0 {
		return orig, false, nil
	}
	others = othersReceiving(r.infos, e.Consumer, orig)
	if len(others) == 0 {
		return orig, false, nil
	}
	if r.hasRetry(e.Consumer) {
		// Only e's consumer may receive it there.
		if o := othersReceiving(r.infos, e.Consumer, RetryFilter(r.stream, e.Consumer)); len(o) > 0 {
			return "", false, o
		}
		return RetrySubjectFor(r.stream, e.Consumer, orig), true, nil
	}
	return "", false, others
}

// RefusedRedrive is a redrive refused before it changed anything: the
// original subjects of some dead letters reach other consumers too.
type RefusedRedrive struct {
	Stream string
	// Reach maps each consumer with dead letters to the other consumers
	// its redrive would reach.
	Reach map[string][]string
}

func (e *RefusedRedrive) Error() string {
	var parts, cmds []string
	names := make([]string, 0, len(e.Reach))
	for c := range e.Reach {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		parts = append(parts, fmt.Sprintf("the dead letters of %q would reach %s too", c, quoteList(e.Reach[c])))
		cmds = append(cmds, "--consumer "+c)
	}
	return fmt.Sprintf("refusing to redrive: stream %q: %s (their filters match the original subjects); nothing was sent. "+
		"Redrive through a retry subject only the consumer that failed receives (jetctl dlq setup --stream %s %s --retry-subject), or to every consumer with --all-consumers",
		e.Stream, strings.Join(parts, "; "), e.Stream, strings.Join(cmds, " "))
}

func (e *RefusedRedrive) Unwrap() error { return ErrInvalid }
