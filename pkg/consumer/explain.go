package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/retry"
)

// Severity ranks a finding: info is worth knowing, warning needs a look,
// critical means messages are not being processed.
type Severity string

// Severities, from least to most serious.
const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// AtLeastWarning reports whether s is warning or critical: what
// `explain --exit-code` fails on.
func (s Severity) AtLeastWarning() bool { return s == SeverityWarning || s == SeverityCritical }

// rank orders severities for sorting: 0 is the most serious.
func (s Severity) rank() int {
	switch s {
	case SeverityCritical:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// Finding ids: stable, documented in docs/consumer.md; scripts match on them.
const (
	FindingNoLeader          = "no-leader"
	FindingStalled           = "stalled-max-ack-pending"
	FindingNoWorker          = "no-worker-pulling"
	FindingPushNoSubscriber  = "push-no-subscriber"
	FindingAckFloorFrozen    = "ack-floor-frozen"
	FindingNothingAcked      = "nothing-acknowledged"
	FindingPoison            = "poison-message"
	FindingPaused            = "paused"
	FindingBehind            = "behind"
	FindingDeadLetters       = "dead-letters"
	FindingMaxDeliverReached = "max-deliver-exceeded"
	FindingReplicaLagging    = "replica-lagging"
	FindingFilterNoMatch     = "filter-matches-nothing"
	FindingMaxDeliverNone    = "max-deliver-unlimited"
	FindingIdle              = "idle"
	FindingSkippedBacklog    = "deliver-policy-skipped-backlog"
	FindingInterestHeld      = "interest-held-only-here"
	// Priority groups (priority.go) and replication (replication.go).
	FindingPinnedClientGone   = "pinned-client-gone"
	FindingOverflowNotReached = "overflow-threshold-not-reached"
	FindingReplication        = "replication-consumer"
)

// Finding is one named diagnosis of a consumer: what is wrong, the numbers
// the server gave that show it, and the command that fixes or
// investigates it.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Health is the health word the finding gives; a consumer's word is
	// that of its most urgent finding.
	Health   Health `json:"health"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Summary is one line for people.
	Summary string `json:"summary"`
	// Evidence holds the numbers read from the server, by name.
	Evidence map[string]any `json:"evidence"`
	// Command fixes or investigates the finding.
	Command string `json:"command"`
}

// ExplainConfig names the consumer to diagnose and the thresholds used.
type ExplainConfig struct {
	Stream   string
	Consumer string
	// Thresholds of the health model; zero fields take the defaults.
	Thresholds Thresholds
	// Fixed names the thresholds given as flags, which the consumer's
	// metadata does not override (ListConfig.Fixed).
	Fixed map[string]bool
}

// Explanation is the diagnosis of one consumer.
type Explanation struct {
	Stream   string
	Consumer string
	// State is the consumer's state, with its findings and health word:
	// the row `consumer ls` shows for it. Nil when the stream or
	// consumer has no leader to answer.
	State *State
	// Info is the consumer's state; nil when the cluster could not give it.
	Info *jetstream.ConsumerInfo
	// Findings, the most urgent first; empty when all is well.
	Findings []Finding
}

// Healthy reports whether the consumer's severity is below warning (no
// finding at warning or above): what explain --exit-code passes.
func (e *Explanation) Healthy() bool {
	if e.State != nil {
		return e.State.Healthy()
	}
	for _, f := range e.Findings {
		if f.Severity.AtLeastWarning() {
			return false
		}
	}
	return true
}

// Explain reads a consumer and its stream and names what is wrong with
// it, by the health model every command uses (its findings are those of
// the consumer's row in `consumer ls`). It only reads: it consumes,
// acknowledges and changes nothing. A stream or consumer that does not
// exist is jetstream.ErrStreamNotFound or ErrConsumerNotFound (wrapped);
// a stream or consumer that the cluster cannot answer for is a no-leader
// finding, not an error.
func Explain(ctx context.Context, js jetstream.JetStream, cfg ExplainConfig) (*Explanation, error) {
	res := &Explanation{Stream: cfg.Stream, Consumer: cfg.Consumer}
	noLeader := func(what string, err error) (*Explanation, error) {
		res.Findings = []Finding{noLeaderFinding(cfg.Stream, cfg.Consumer, what, err)}
		return res, nil
	}
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("stream %q: %w", cfg.Stream, jetstream.ErrStreamNotFound)
		}
		if leaderless(err) {
			return noLeader("stream", err)
		}
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	ci, err := readConsumer(ctx, st, cfg.Consumer)
	if err != nil {
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, jetstream.ErrConsumerNotFound)
		}
		if leaderless(err) {
			return noLeader("consumer", err)
		}
		return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, err)
	}
	s, err := assessOne(ctx, js, st, ci, cfg.Thresholds, cfg.Fixed)
	if err != nil {
		return nil, err
	}
	res.State, res.Info, res.Findings = s, ci, s.Findings
	return res, nil
}

// assessOne evaluates one consumer read on its own (explain, wait) the
// way List evaluates it among its stream's consumers: with the stream's
// other consumers and its DLQ capture.
func assessOne(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, ci *jetstream.ConsumerInfo, t Thresholds, fixed map[string]bool) (*State, error) {
	si := st.CachedInfo()
	name := si.Config.Name
	a := newAPI(js)
	s := FromInfo(ci)
	states := []*State{s}
	// The other consumers count on an interest stream only.
	if si.Config.Retention == jetstream.InterestPolicy {
		all, err := a.listConsumers(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, o := range all {
			if o.Consumer != s.Consumer {
				states = append(states, o)
			}
		}
	}
	captures := map[string]*jetstream.StreamInfo{}
	if capture, err := js.Stream(ctx, dlq.DefaultNames(name, "").Capture); err == nil && capture.CachedInfo().Config.Metadata[dlq.MetaSource] == name {
		captures[name] = capture.CachedInfo()
	}
	// The recorder, where the account has one (dead.go): what cannot be
	// read leaves the recorded dead letters out, as without one.
	rec, _ := recorder.Find(ctx, js)
	cfg := ListConfig{Thresholds: t, Fixed: fixed}
	if err := assess(ctx, js, a, states, map[string]*jetstream.StreamInfo{name: si}, captures, rec, cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// readConsumer reads a pull or a push consumer's info.
func readConsumer(ctx context.Context, st jetstream.Stream, name string) (*jetstream.ConsumerInfo, error) {
	c, err := st.Consumer(ctx, name)
	if errors.Is(err, jetstream.ErrNotPullConsumer) {
		pc, perr := st.PushConsumer(ctx, name)
		if perr != nil {
			return nil, perr
		}
		return pc.CachedInfo(), nil
	}
	if err != nil {
		return nil, err
	}
	return c.CachedInfo(), nil
}

// FilterSubjects are a consumer's filters, from either config field; none
// means the whole stream.
func FilterSubjects(cfg jetstream.ConsumerConfig) []string {
	if cfg.FilterSubject != "" {
		return []string{cfg.FilterSubject}
	}
	return cfg.FilterSubjects
}

// leaderless reports whether err is the cluster failing to answer for an
// asset: what retry.Transient counts (no leader, 10008; every replica
// offline, 10118/10119; no reply within the request timeout; ...), or an
// asset offline for a reason (10194/10195, e.g. a feature this server
// lacks), which no retry changes but which leaves it without a leader all
// the same. Explain does not retry: it reports a no-leader finding.
func leaderless(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == errStreamOfflineReason || apiErr.ErrorCode == errConsumerOfflineReason) {
		return true
	}
	return retry.Transient(err)
}

// The server's "stream is offline: <reason>" and "consumer is offline:
// <reason>".
const (
	errStreamOfflineReason   jetstream.ErrorCode = 10194
	errConsumerOfflineReason jetstream.ErrorCode = 10195
)

func noLeaderFinding(stream, consumer, what string, err error) Finding {
	reason := strings.TrimPrefix(err.Error(), "nats: ")
	ev := map[string]any{"asset": what}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		reason = apiErr.Description
		ev["error_code"] = apiErr.ErrorCode
	}
	ev["error"] = reason
	return Finding{ID: FindingNoLeader, Severity: WordOf(FindingNoLeader).Level(), Health: HealthNoLeader, Stream: stream, Consumer: consumer,
		Summary:  fmt.Sprintf("the %s has no leader: the cluster did not answer for it (%s); nothing is delivered until a leader is elected", what, reason),
		Evidence: ev, Command: "jetctl status"}
}
