// Package check judges every stream and consumer in scope against warning
// and critical thresholds, in one call: jetctl's own (the health model of
// pkg/consumer, whose findings and word are those of consumer ls, and
// the stream's limits, replicas, mirror and sources) and natscli's (the
// io.nats.monitor.* metadata and flags, judged by jsm.go's monitor
// package). Run reads, and changes nothing; the Report it returns is what
// `jetctl check` renders as nagios, Prometheus, JSON or a table.
package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
)

// Config says what Run checks and against which thresholds.
type Config struct {
	// Streams names the streams to check (each must exist); when empty,
	// every stream of the account, except those consumer ls hides (KV,
	// object store and DLQ streams) unless All.
	Streams []string
	// Consumers, when set, are the only consumers checked: each name must
	// be a consumer of a stream in scope. Without Streams, only the
	// streams holding them are checked too.
	Consumers []string
	// All includes the streams consumer ls hides.
	All bool
	// Thresholds and Fixed are the health model's, as consumer ls takes
	// them: Fixed names the thresholds given as flags, which a consumer's
	// io.jetctl.check.* metadata does not override (and the limits
	// percentages given as flags, for the report).
	Thresholds consumer.Thresholds
	Fixed      map[string]bool
	// ConsumerMonitor and StreamMonitor are natscli's thresholds given as
	// flags, by metadata key (io.nats.monitor.*), with the values as
	// written (ValidateMonitor checks them): each beats the same key in a
	// consumer's or stream's metadata.
	ConsumerMonitor map[string]string
	StreamMonitor   map[string]string
	// LimitsWarning and LimitsCritical are the percentages of max_msgs
	// and max_bytes from which a stream that refuses new messages when
	// full (discard new) warns and is critical; 0 turns a level off.
	LimitsWarning, LimitsCritical float64
	// ElectionWait bounds how long a stream or consumer read without a
	// leader is read again, waiting for an election, before it is
	// reported without one (critical). Default DefaultElectionWait.
	ElectionWait time.Duration
	// Workers bounds the concurrent requests, as consumer.List's.
	Workers int
	// LagCache, when set, is kept between runs (a --listen exporter).
	LagCache *consumer.LagCache
}

// DefaultElectionWait is how long a leaderless stream or consumer is read
// again by default: a JetStream election normally takes a few seconds.
const DefaultElectionWait = 5 * time.Second

// Default percentages of a discard-new stream's limits: critical a little
// before 100%, since a message that does not fit in what is left is
// already refused.
const (
	DefaultLimitsWarning  = 80
	DefaultLimitsCritical = 95
)

// Validate checks the configuration that needs no server: the health
// model's thresholds (consumer.Thresholds.Validate), the limits
// percentages and natscli's values. Errors wrap errkind.Invalid.
func (c Config) Validate() error {
	if err := c.Thresholds.Validate(); err != nil {
		return err
	}
	for _, p := range []struct {
		flag  string
		value float64
	}{{"limits-warning", c.LimitsWarning}, {"limits-critical", c.LimitsCritical}} {
		if p.value < 0 || p.value > 100 {
			return errkind.New(errkind.Invalid, fmt.Sprintf("invalid --%s %g: use a percentage from 0 (off) to 100", p.flag, p.value))
		}
	}
	if c.LimitsWarning > 0 && c.LimitsCritical > 0 && c.LimitsWarning > c.LimitsCritical {
		return errkind.New(errkind.Invalid, fmt.Sprintf("--limits-warning %g is above --limits-critical %g", c.LimitsWarning, c.LimitsCritical))
	}
	if err := ValidateMonitor(ConsumerSettings, c.ConsumerMonitor); err != nil {
		return err
	}
	return ValidateMonitor(StreamSettings, c.StreamMonitor)
}

// Report is the result of one Run: its JSON form is `jetctl check -o
// json` (docs/check.md).
type Report struct {
	// Status is the worst status of the streams and consumers checked
	// (skipped ones aside); OK when there are none.
	Status Status `json:"status"`
	// Time is when the check started; DurationSeconds how long it took.
	Time            time.Time `json:"time"`
	DurationSeconds float64   `json:"duration_seconds"`
	// Counts are the streams and consumers by status, and those skipped.
	Counts Counts `json:"counts"`
	// Streams and Consumers, the worst first.
	Streams   []*StreamResult   `json:"streams"`
	Consumers []*ConsumerResult `json:"consumers"`
}

// Counts are how many items have each status.
type Counts struct {
	OK       int `json:"ok"`
	Warning  int `json:"warning"`
	Critical int `json:"critical"`
	Unknown  int `json:"unknown"`
	Skipped  int `json:"skipped"`
}

// Add counts one item.
func (c *Counts) Add(s Status, skipped bool) {
	switch {
	case skipped:
		c.Skipped++
	case s == OK:
		c.OK++
	case s == Warning:
		c.Warning++
	case s == Critical:
		c.Critical++
	default:
		c.Unknown++
	}
}

// Check is one threshold judged on one stream or consumer.
type Check struct {
	// Name is the check's: lag, stall, dead-letters, health (jetctl's
	// model), limit-messages, limit-bytes, leader, replicas, mirror,
	// source (jetctl's stream checks), or natscli's (outstanding-ack,
	// unprocessed, msgs, peer-lag, ...; docs/check.md lists them).
	Name string `json:"name"`
	// By is whose rule it is: jetctl or natscli.
	By     string `json:"by"`
	Status Status `json:"status"`
	// Value is the figure judged, in Unit; null when there is none (no
	// message unprocessed, never acknowledged).
	Value *float64 `json:"value"`
	Unit  string   `json:"unit,omitempty"`
	// Warning and Critical are the levels, in Unit; null when not set.
	Warning  *float64 `json:"warning"`
	Critical *float64 `json:"critical"`
	// WarningSource and CriticalSource say where each level came from:
	// flag, metadata or default ("" when not set); WarningSetting and
	// CriticalSetting name the flag (--lag-warning) or metadata key.
	WarningSource   string `json:"warning_source,omitempty"`
	WarningSetting  string `json:"warning_setting,omitempty"`
	CriticalSource  string `json:"critical_source,omitempty"`
	CriticalSetting string `json:"critical_setting,omitempty"`
	// Message says what was found, for people.
	Message string `json:"message"`
}

// ErrConsumerNotFound is a consumer named with Config.Consumers that no
// stream in scope has.
var ErrConsumerNotFound = errkind.New(errkind.NotFound, "consumer not found")

// Run checks the streams and consumers cfg selects. A stream named in
// cfg.Streams that does not exist is an error wrapping
// jetstream.ErrStreamNotFound, a consumer named in cfg.Consumers that no
// stream in scope has one wrapping ErrConsumerNotFound; both before
// anything is judged. A stream or consumer read without a leader is read
// again, for up to cfg.ElectionWait, before it is judged without one.
func Run(ctx context.Context, js jetstream.JetStream, cfg Config) (*Report, error) {
	start := time.Now()
	if cfg.ElectionWait <= 0 {
		cfg.ElectionWait = DefaultElectionWait
	}
	s := &scope{cfg: cfg, js: js, electionEnds: start.Add(cfg.ElectionWait)}
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := s.selectConsumers(); err != nil {
		return nil, err
	}
	r := &Report{Time: start.UTC(), Streams: []*StreamResult{}, Consumers: []*ConsumerResult{}}
	for _, name := range s.streamNames() {
		r.Streams = append(r.Streams, judgeStream(s.streams[name], cfg))
	}
	for _, st := range s.states {
		r.Consumers = append(r.Consumers, judgeConsumer(st, cfg))
	}
	sortStreams(r.Streams)
	sortConsumers(r.Consumers)
	for _, sr := range r.Streams {
		r.Counts.Add(sr.Status, sr.Skipped)
		if !sr.Skipped {
			r.Status = Worst(r.Status, sr.Status)
		}
	}
	for _, cr := range r.Consumers {
		r.Counts.Add(cr.Status, cr.Skipped)
		if !cr.Skipped {
			r.Status = Worst(r.Status, cr.Status)
		}
	}
	r.DurationSeconds = time.Since(start).Seconds()
	return r, nil
}

// scope is what one Run reads: the streams in scope and their consumers'
// states.
type scope struct {
	cfg          Config
	js           jetstream.JetStream
	electionEnds time.Time
	// streams in scope, by name; listed is every stream of the account
	// when none was named (for consumer.List's capture streams).
	streams map[string]*streamRead
	listed  []*jetstream.StreamInfo
	states  []*consumer.State
}

// streamRead is a stream as read, or why it could not be.
type streamRead struct {
	name string
	info *jetstream.StreamInfo
	// offline: the server said no server holding it is up (10118).
	offline bool
}

// leaderless reports whether the stream has no leader: offline, or
// clustered with no leader named.
func (sr *streamRead) leaderless() bool {
	return sr.offline || sr.info != nil && sr.info.Cluster != nil && sr.info.Cluster.Leader == "" &&
		(sr.info.Cluster.Name != "" || len(sr.info.Cluster.Replicas) > 0)
}

// read lists the streams in scope and their consumers, evaluated by the
// health model.
func (s *scope) read(ctx context.Context) error {
	s.streams = map[string]*streamRead{}
	if len(s.cfg.Streams) == 0 {
		var missing []string
		err := s.transient(ctx, func(ctx context.Context) error {
			var err error
			s.listed, missing, err = consumer.ListStreams(ctx, s.js)
			return err
		})
		if err != nil {
			return fmt.Errorf("listing streams: %w", err)
		}
		for _, name := range missing {
			sr, err := s.readStream(ctx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				// Deleted meanwhile.
				continue
			}
			if err != nil {
				return err
			}
			s.listed = append(s.listed, sr.info)
		}
		for _, si := range s.listed {
			if s.cfg.All || !consumer.Hidden(&si.Config) {
				s.streams[si.Config.Name] = &streamRead{name: si.Config.Name, info: si}
			}
		}
	} else {
		for _, name := range s.cfg.Streams {
			sr, err := s.readStream(ctx, name)
			if err != nil {
				return err
			}
			s.streams[name] = sr
		}
	}
	return s.transient(ctx, func(ctx context.Context) error {
		states, err := consumer.List(ctx, s.js, s.listConfig(nil))
		s.states = states
		return err
	})
}

// transient runs fn again while it fails as a server does during an
// election (retry.Transient), until the election wait ends.
func (s *scope) transient(ctx context.Context, fn func(context.Context) error) error {
	left := time.Until(s.electionEnds)
	if left <= 0 {
		// Within 0 would not bound the tries: one is all there is time for.
		return fn(ctx)
	}
	return retry.Do(ctx, retry.Policy{Within: left, Pause: 250 * time.Millisecond, MaxPause: time.Second,
		Retryable: retry.Transient}, fn)
}

// readStream reads a stream's info; an offline stream is read as such.
func (s *scope) readStream(ctx context.Context, name string) (*streamRead, error) {
	var sr *streamRead
	err := s.transient(ctx, func(ctx context.Context) error {
		info, offline, err := consumer.StreamOrStub(ctx, s.js, name)
		if err == nil {
			sr = &streamRead{name: name, info: info, offline: offline}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return sr, nil
}

// listConfig is consumer.List's configuration: the named streams, or the
// streams listed, or (again) only.
func (s *scope) listConfig(only []string) consumer.ListConfig {
	lc := consumer.ListConfig{Streams: s.cfg.Streams, All: s.cfg.All, Thresholds: s.cfg.Thresholds, Fixed: s.cfg.Fixed,
		Workers: s.cfg.Workers, LagCache: s.cfg.LagCache}
	switch {
	case only != nil:
		lc.Streams, lc.Listed = only, nil
	case len(s.cfg.Streams) == 0:
		lc.Listed = s.listed
		if lc.Listed == nil {
			lc.Listed = []*jetstream.StreamInfo{}
		}
	}
	return lc
}

// settle reads again, until the election wait ends, the streams without a
// leader, with consumers without one, or with replicas catching up: an
// election takes a moment, and a check run during one must not call it
// critical (nor a replica that is catching up degraded).
func (s *scope) settle(ctx context.Context) error {
	log := logctx.From(ctx)
	seen := false
	for {
		waiting := s.waitingForLeaders()
		if len(waiting) == 0 {
			return nil
		}
		if !seen {
			// The wait starts when an election is seen, not when the
			// check did: the reads before may have used most of it, as
			// a list the server gathers during an election waits 4 s
			// for the answers that do not come, and a read again that
			// starts before the election ends costs as much.
			seen = true
			if ends := time.Now().Add(s.cfg.ElectionWait); ends.After(s.electionEnds) {
				s.electionEnds = ends
			}
		}
		if !time.Now().Before(s.electionEnds) {
			return nil
		}
		log.Debug("reading again, waiting for a leader", "streams", waiting)
		if err := retry.Sleep(ctx, min(250*time.Millisecond, time.Until(s.electionEnds))); err != nil {
			return err
		}
		for _, name := range waiting {
			sr, err := s.readStream(ctx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) && !slices.Contains(s.cfg.Streams, name) {
				// Deleted meanwhile.
				delete(s.streams, name)
				continue
			}
			if err == nil {
				s.streams[name] = sr
			}
		}
		again, err := consumer.List(ctx, s.js, s.listConfig(waiting))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Still electing: read again, until the wait ends.
			continue
		}
		kept := s.states[:0]
		for _, st := range s.states {
			if !slices.Contains(waiting, st.Stream) {
				kept = append(kept, st)
			}
		}
		s.states = append(kept, again...)
	}
}

// waitingForLeaders names the streams still settling after an election:
// without a leader, with a consumer without one, or with a replica (of
// the stream or a consumer) that is up but not yet current, as replicas
// are for a moment after a leader changes. An offline replica is no
// election: it is not waited for.
func (s *scope) waitingForLeaders() []string {
	var names []string
	for name, sr := range s.streams {
		if sr.leaderless() || sr.info != nil && catchingUp(sr.info.Cluster) {
			names = append(names, name)
		}
	}
	for _, st := range s.states {
		settling := st.NoLeader || st.Info != nil && catchingUp(st.Info.Cluster)
		if settling && !slices.Contains(names, st.Stream) {
			names = append(names, st.Stream)
		}
	}
	sort.Strings(names)
	return names
}

// catchingUp reports whether a replica is up but not current.
func catchingUp(cl *jetstream.ClusterInfo) bool {
	if cl == nil || cl.Leader == "" {
		return false
	}
	for _, r := range cl.Replicas {
		if !r.Current && !r.Offline {
			return true
		}
	}
	return false
}

// selectConsumers keeps the consumers named, each of which must exist,
// and without named streams keeps only the streams holding them.
func (s *scope) selectConsumers() error {
	if len(s.cfg.Consumers) == 0 {
		return nil
	}
	var kept []*consumer.State
	holding := map[string]bool{}
	for _, st := range s.states {
		if slices.Contains(s.cfg.Consumers, st.Consumer) {
			kept = append(kept, st)
			holding[st.Stream] = true
		}
	}
	for _, name := range s.cfg.Consumers {
		if !slices.ContainsFunc(kept, func(st *consumer.State) bool { return st.Consumer == name }) {
			where := "any stream"
			if len(s.cfg.Streams) > 0 {
				where = "stream " + strings.Join(s.cfg.Streams, ", ")
			}
			return fmt.Errorf("%w: %q in %s", ErrConsumerNotFound, name, where)
		}
	}
	s.states = kept
	if len(s.cfg.Streams) == 0 {
		for name := range s.streams {
			if !holding[name] {
				delete(s.streams, name)
			}
		}
	}
	return nil
}

func (s *scope) streamNames() []string {
	names := make([]string, 0, len(s.streams))
	for name := range s.streams {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// sortStreams puts the worst first, then by name.
func sortStreams(rs []*StreamResult) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Skipped != b.Skipped {
			return !a.Skipped
		}
		if a.Status != b.Status {
			return a.Status.Worse(b.Status)
		}
		return a.Stream < b.Stream
	})
}

// sortConsumers puts the worst first, then by the health model's
// severity and word, then by name.
func sortConsumers(rs []*ConsumerResult) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Skipped != b.Skipped {
			return !a.Skipped
		}
		if a.Status != b.Status {
			return a.Status.Worse(b.Status)
		}
		if sa, sb := a.Health.Severity(), b.Health.Severity(); sa != sb {
			return sa < sb
		}
		if a.Stream != b.Stream {
			return a.Stream < b.Stream
		}
		return a.Consumer < b.Consumer
	})
}
