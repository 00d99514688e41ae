// Package consumer reads JetStream consumers as the delivery state machines
// they are (delivered cursor, ack floor, unprocessed and ack-pending
// messages, redeliveries, waiting pulls), classifies each one's health in
// one word, names what is wrong with one (Explain), waits for a consumer to
// reach a position, and moves it (Rewind, Pause, Resume). List, Watcher,
// Explain and Wait only read: they consume, acknowledge and change nothing.
package consumer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Kinds of consumer.
const (
	KindPull = "pull"
	KindPush = "push"
)

// State is one consumer's delivery state at one instant, as the server
// reported it, with what jetctl derives from it: the lag in time, the dead
// letters captured for it and its health. Its JSON form is the row of
// `jetctl consumer ls -o json` (fields documented in docs/consumer.md).
type State struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// FilterSubjects are the consumer's filter subjects; [] when it takes
	// every subject of the stream.
	FilterSubjects []string `json:"filter_subjects"`
	// Kind is "pull" or "push".
	Kind      string `json:"kind"`
	Durable   bool   `json:"durable"`
	AckPolicy string `json:"ack_policy"`
	// Unprocessed is num_pending: messages matching the filter that were
	// never delivered.
	Unprocessed uint64 `json:"unprocessed"`
	// AckPending is num_ack_pending: delivered, not yet acknowledged.
	AckPending int `json:"ack_pending"`
	// MaxAckPending is the consumer's limit; -1 is unlimited.
	MaxAckPending int `json:"max_ack_pending"`
	// Redelivered is num_redelivered: messages redelivered at least once
	// and not yet acknowledged.
	Redelivered int `json:"redelivered"`
	// WaitingPulls is num_waiting: pull requests waiting for messages.
	WaitingPulls int `json:"waiting_pulls"`
	// DeliveredStreamSeq and DeliveredConsumerSeq are the delivered
	// cursor: the last stream sequence delivered, and the number of
	// deliveries (redeliveries included).
	DeliveredStreamSeq   uint64 `json:"delivered_stream_seq"`
	DeliveredConsumerSeq uint64 `json:"delivered_consumer_seq"`
	// AckFloorStreamSeq and AckFloorConsumerSeq: everything at or below
	// them is acknowledged.
	AckFloorStreamSeq   uint64 `json:"ack_floor_stream_seq"`
	AckFloorConsumerSeq uint64 `json:"ack_floor_consumer_seq"`
	// LastActive is the later of the last delivery and the last ack; nil
	// when there was neither.
	LastActive *time.Time `json:"last_active"`
	// LastAckUnknown: the consumer acknowledged something, and the server
	// no longer says when (it forgets ack_floor.last_active when it
	// restarts): AckFloorAgeSeconds is unknown until the next ack, and no
	// stall is called on a guess.
	LastAckUnknown bool `json:"last_ack_unknown"`
	// OldestUnprocessedSeq is the stream sequence of the oldest message
	// not yet delivered (the first one after DeliveredStreamSeq that
	// matches the filter); 0 when there is none or it was not read.
	OldestUnprocessedSeq uint64 `json:"oldest_unprocessed_seq"`
	// LagSeconds is the age of that message when the state was read; 0
	// when nothing is unprocessed, nil when it could not be read.
	LagSeconds *float64 `json:"lag_seconds"`
	// AckFloorAgeSeconds is how long the ack floor has stood still while
	// work waits: since the last acknowledgement (the last delivery for
	// an ack policy none consumer, whose floor follows its deliveries;
	// the consumer's creation when there was none), or since the first
	// message still pending arrived when that is later (a burst after a
	// quiet week has not been stuck for a week). 0 when nothing is
	// pending (unprocessed and ack pending 0): an idle consumer's floor
	// is not stuck. nil when unknown. The stall thresholds and check
	// read this one figure.
	AckFloorAgeSeconds *float64 `json:"ack_floor_age_seconds"`
	// DeadLetters counts this consumer's dead letters (MaxDeliver
	// reached, or terminated) that wait, each once (dead.go): swept into
	// the DLQ and not yet redriven or purged, captured by `jetctl dlq
	// setup` and not yet swept, or held by the recorder (`jetctl events
	// record`) alone and still stored. nil when nothing jetctl reads
	// would know of them: no capture covers the consumer, no recorder
	// records its advisories, and the DLQ holds none of its.
	DeadLetters *int64 `json:"dead_letters"`
	Paused      bool   `json:"paused"`
	// PausedUntil is when a paused consumer resumes; nil when not paused.
	PausedUntil *time.Time `json:"paused_until"`
	// PushBound: a push consumer has a subscriber (always false for pull).
	PushBound bool `json:"push_bound"`
	// Leader is the server leading the consumer (on a single server the
	// server, its stream's leader); "" when it has none or the server did
	// not say.
	Leader string `json:"leader"`
	// PriorityPolicy is the consumer's priority policy (nats-server
	// 2.11+): pinned_client, overflow or prioritized; "" for none.
	PriorityPolicy string `json:"priority_policy"`
	// PriorityTimeoutSeconds is, with pinned_client, how long the server
	// keeps a group pinned to a client that stopped pulling
	// (priority_timeout); nil otherwise.
	PriorityTimeoutSeconds *float64 `json:"priority_timeout_seconds"`
	// PriorityGroups are the consumer's priority groups, each with its
	// pinned client and how long it has been pinned; [] when none.
	PriorityGroups []PriorityGroup `json:"priority_groups"`
	// Replication is set for a server-owned consumer, the one through
	// which a mirror or a sourcing stream reads this stream: it is shown
	// as replication and never judged like a worker's (its health is
	// replication); nil for every other consumer.
	Replication *Replication `json:"replication"`
	// Health is the one-word health, the word of the most urgent
	// finding; HealthReason is that finding's summary ("" for ok).
	Health       Health `json:"health"`
	HealthReason string `json:"health_reason"`
	// Severity is the most urgent finding's severity (the first
	// finding's): critical, warning, or info when there is no finding or
	// only notes. Commands decide from it (explain --exit-code, sorting
	// the unhealthy first, check), not from the word: a threshold can
	// raise a finding above its word's usual level (a lag past
	// lag-critical), or keep it below (a young stall is a warning).
	Severity Severity `json:"severity"`
	// Findings are what the health model found, the most urgent first
	// (the findings of `consumer explain`); [] when nothing.
	Findings []Finding `json:"findings"`
	// ReadErrors name what could not be read (for example the lag, where
	// the user may not get messages): the findings that needed it are
	// missing. [] when everything was read.
	ReadErrors []string `json:"read_errors"`
	// Time is when the server read the state (its clock).
	Time time.Time `json:"time"`

	// Info is the server's whole answer, for callers that need more than
	// the fields above (nil for a consumer the server listed as missing).
	Info *jetstream.ConsumerInfo `json:"-"`
	// Thresholds are the thresholds the consumer was judged by: the
	// command's, with the consumer's metadata laid over them
	// (Thresholds.With), every default filled in. ThresholdSource says
	// where each came from, by name (ThresholdNames): SourceFlag,
	// SourceMetadata or SourceDefault. Set by the health model.
	Thresholds      *Thresholds       `json:"-"`
	ThresholdSource map[string]string `json:"-"`
	// NoLeader is set for a consumer the cluster lists without being able
	// to read its state (no leader answered).
	NoLeader bool `json:"-"`
	// dead says where the dead letters wait.
	dead *deadWaiting
	// thresholdNotes are the ReadErrors about the consumer's threshold
	// metadata (a value ignored): notes, not values left unread.
	thresholdNotes []string
}

// Unreadable are the ReadErrors about values that could not be read
// (the lag, dead letters, a rule's reads), without the notes about
// threshold metadata that was ignored (ThresholdNotes): what makes a
// listing partial.
func (s *State) Unreadable() []string {
	out := []string{}
	for _, e := range s.ReadErrors {
		if !slices.Contains(s.thresholdNotes, e) {
			out = append(out, e)
		}
	}
	return out
}

// ThresholdNotes are the ReadErrors saying which of the consumer's
// threshold metadata values were ignored, and why.
func (s *State) ThresholdNotes() []string { return append([]string{}, s.thresholdNotes...) }

// Healthy reports whether the consumer's severity is below warning: what
// explain --exit-code passes.
func (s *State) Healthy() bool { return !s.Severity.AtLeastWarning() }

// deadWaiting is where a consumer's waiting dead letters are (dead.go),
// each counted once, where it is furthest along.
type deadWaiting struct {
	// inDLQ in the DLQ; unswept captured and not yet swept; recorded in
	// the recorder only.
	unswept, inDLQ, recorded int64
	dlq                      string
	// recorder names the recorder ("" without one); covered says a
	// capture takes the consumer's advisories.
	recorder string
	covered  bool
	// exact is false when a bound was reached (the DLQ too large to
	// read: every entry is then counted for each consumer with dead
	// letters; the recorder's advisories, or the gets that check them).
	exact bool
}

// total is the consumer's dead letters that wait.
func (w deadWaiting) total() int64 { return w.unswept + w.inDLQ + w.recorded }

// Key identifies a consumer across polls: "STREAM > CONSUMER".
func (s *State) Key() string { return s.Stream + " > " + s.Consumer }

// Lag is LagSeconds as a duration, and whether it is known.
func (s *State) Lag() (time.Duration, bool) {
	if s.LagSeconds == nil {
		return 0, false
	}
	return time.Duration(*s.LagSeconds * float64(time.Second)), true
}

// FromInfo builds a State from the server's consumer info. Lag, dead
// letters and health are filled in later (List does).
func FromInfo(info *jetstream.ConsumerInfo) *State {
	cfg := info.Config
	// [] rather than null in JSON when it takes every subject.
	filters := append([]string{}, FilterSubjects(cfg)...)
	kind := KindPull
	if cfg.DeliverSubject != "" {
		kind = KindPush
	}
	s := &State{
		Stream:               info.Stream,
		Consumer:             info.Name,
		FilterSubjects:       filters,
		Kind:                 kind,
		Durable:              cfg.Durable != "",
		AckPolicy:            ackPolicy(cfg.AckPolicy),
		Unprocessed:          info.NumPending,
		AckPending:           info.NumAckPending,
		MaxAckPending:        cfg.MaxAckPending,
		Redelivered:          info.NumRedelivered,
		WaitingPulls:         info.NumWaiting,
		DeliveredStreamSeq:   info.Delivered.Stream,
		DeliveredConsumerSeq: info.Delivered.Consumer,
		AckFloorStreamSeq:    info.AckFloor.Stream,
		AckFloorConsumerSeq:  info.AckFloor.Consumer,
		LastActive:           later(info.Delivered.Last, info.AckFloor.Last),
		LastAckUnknown:       LastAckUnknown(info),
		Paused:               info.Paused,
		PushBound:            info.PushBound,
		Time:                 info.TimeStamp,
		Info:                 info,
	}
	if s.Time.IsZero() {
		s.Time = time.Now()
	}
	// The server keeps 0 for an AckNone consumer: nothing is ever pending.
	if s.MaxAckPending == 0 {
		s.MaxAckPending = -1
	}
	if info.Paused && cfg.PauseUntil != nil {
		t := *cfg.PauseUntil
		s.PausedUntil = &t
	}
	s.setPriority(info)
	s.Replication = replicationOf(cfg)
	if info.Cluster != nil {
		s.Leader = info.Cluster.Leader
		// A clustered consumer (it has replicas or a raft group) with no
		// leader cannot deliver; the server reports such an offline
		// consumer with its config only.
		if info.Cluster.Leader == "" && (info.Cluster.RaftGroup != "" || len(info.Cluster.Replicas) > 0) {
			s.NoLeader = true
			s.LagSeconds = nil
		}
	}
	if s.Unprocessed == 0 && !s.NoLeader {
		zero := 0.0
		s.LagSeconds = &zero
	}
	return s
}

// leadOnSingleServer names the leader of the consumers whose info names
// none: a single server's, which live on their stream's server, the
// leader its info names (TestFactSingleServerNamesItselfInStreamInfoOnly).
// A cluster's consumers name their own.
func leadOnSingleServer(states []*State, infos map[string]*jetstream.StreamInfo) {
	for _, s := range states {
		if s.Leader != "" || s.Info == nil || s.Info.Cluster != nil {
			continue
		}
		if si := infos[s.Stream]; si != nil && si.Cluster != nil {
			s.Leader = si.Cluster.Leader
		}
	}
}

// setLag records the oldest unprocessed message and its age.
func (s *State) setLag(seq uint64, at time.Time) {
	lag := s.Time.Sub(at).Seconds()
	if lag < 0 {
		lag = 0
	}
	s.OldestUnprocessedSeq = seq
	s.LagSeconds = &lag
}

// missingState is a consumer the cluster knows of but whose state no
// leader reported.
func missingState(stream, name string, now time.Time) *State {
	return &State{Stream: stream, Consumer: name, FilterSubjects: []string{}, PriorityGroups: []PriorityGroup{}, NoLeader: true, Time: now}
}

func later(a, b *time.Time) *time.Time {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		t := *b
		return &t
	case b == nil || a.After(*b):
		t := *a
		return &t
	}
	t := *b
	return &t
}

func ackPolicy(p jetstream.AckPolicy) string {
	switch p {
	case jetstream.AckNonePolicy:
		return "none"
	case jetstream.AckAllPolicy:
		return "all"
	case jetstream.AckFlowControlPolicy:
		// A replication consumer's (2.14+): acknowledged by flow control.
		return "flow_control"
	}
	return "explicit"
}

// inactiveFor reports whether the consumer saw no delivery or ack (or was
// created) within d, and a phrase saying since when.
func (s *State) inactiveFor(d time.Duration) (bool, string) {
	last := s.LastActive
	what := "last active %s ago"
	if last == nil && s.Info != nil && !s.Info.Created.IsZero() {
		c := s.Info.Created
		last = &c
		what = "never active, created %s ago"
	}
	if last == nil {
		return true, "never active"
	}
	age := s.Time.Sub(*last)
	if age < 0 {
		age = 0
	}
	return age >= d, fmt.Sprintf(what, ShortDuration(age))
}

// ShortDuration prints d rounded for people: 850ms, 12s, 5m3s, 2h5m, 3d4h.
func ShortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour, d < 48*time.Hour:
		unit := time.Second
		if d >= time.Hour {
			unit = time.Minute
		}
		str := d.Round(unit).String()
		if strings.HasSuffix(str, "m0s") {
			str = strings.TrimSuffix(str, "0s")
		}
		return str
	}
	days := d / (24 * time.Hour)
	hours := (d % (24 * time.Hour)).Round(time.Hour) / time.Hour
	return fmt.Sprintf("%dd%dh", days, hours)
}
