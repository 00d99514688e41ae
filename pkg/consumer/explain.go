package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
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

// Finding ids: stable, documented in docs/consumer.md; scripts match on them.
const (
	FindingStalled           = "stalled-max-ack-pending"
	FindingNoWorker          = "no-worker-pulling"
	FindingPoison            = "poison-message"
	FindingMaxDeliverReached = "max-deliver-exceeded"
	FindingMaxDeliverNone    = "max-deliver-unlimited"
	FindingFilterNoMatch     = "filter-matches-nothing"
	FindingSkippedBacklog    = "deliver-policy-skipped-backlog"
	FindingPushNoSubscriber  = "push-no-subscriber"
	FindingPaused            = "paused"
	FindingNoLeader          = "no-leader"
	FindingReplicaLagging    = "replica-lagging"
	FindingInterestHeld      = "interest-held-only-here"
)

// Finding is one named diagnosis of a consumer: what is wrong, the numbers
// the server gave that show it, and the command that fixes or
// investigates it.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Stream   string   `json:"stream"`
	Consumer string   `json:"consumer"`
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
	// IdleAfter: a pull consumer with unprocessed messages and no
	// delivery for this long has no worker. Default one minute.
	IdleAfter time.Duration
	// PoisonRedeliveries: this many redeliveries since the ack floor last
	// moved make the message after it a poison message. Default 3.
	PoisonRedeliveries uint64
	// DeadScanLimit bounds how many stored messages are looked at to count
	// those past MaxDeliver. Default 1000.
	DeadScanLimit int
}

// Explanation is the diagnosis of one consumer.
type Explanation struct {
	Stream   string
	Consumer string
	// Info is the consumer's state; nil when the cluster could not give it.
	Info *jetstream.ConsumerInfo
	// Findings, the most serious first; empty when all is well.
	Findings []Finding
}

// Healthy reports whether no finding is at warning or above.
func (e *Explanation) Healthy() bool {
	for _, f := range e.Findings {
		if f.Severity.AtLeastWarning() {
			return false
		}
	}
	return true
}

// explainer holds what one Explain call has read.
type explainer struct {
	cfg     ExplainConfig
	js      jetstream.JetStream
	api     *jsapi.Client
	st      jetstream.Stream
	stream  *jetstream.StreamInfo
	ci      *jetstream.ConsumerInfo
	filters []string
	out     []Finding
	// others are the stream's other consumers, read once (othersRead)
	// for the two interest-stream findings.
	others     []*jetstream.ConsumerInfo
	othersRead bool
}

// Explain reads a consumer and its stream and names what is wrong with it.
// It only reads: it consumes, acknowledges and changes nothing. A stream
// or consumer that does not exist is jetstream.ErrStreamNotFound or
// ErrConsumerNotFound (wrapped); a stream or consumer that the cluster
// cannot answer for is a no-leader finding, not an error.
func Explain(ctx context.Context, js jetstream.JetStream, cfg ExplainConfig) (*Explanation, error) {
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = time.Minute
	}
	if cfg.PoisonRedeliveries == 0 {
		cfg.PoisonRedeliveries = 3
	}
	if cfg.DeadScanLimit <= 0 {
		cfg.DeadScanLimit = 1000
	}
	e := &explainer{cfg: cfg, js: js, api: jsapi.New(js)}
	res := &Explanation{Stream: cfg.Stream, Consumer: cfg.Consumer}

	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("stream %q: %w", cfg.Stream, jetstream.ErrStreamNotFound)
		}
		if leaderless(err) {
			e.noLeader("stream", err)
			res.Findings = e.out
			return res, nil
		}
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	e.st, e.stream = st, st.CachedInfo()
	ci, err := readConsumer(ctx, st, cfg.Consumer)
	if err != nil {
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, jetstream.ErrConsumerNotFound)
		}
		if leaderless(err) {
			e.noLeader("consumer", err)
			res.Findings = e.out
			return res, nil
		}
		return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, err)
	}
	e.ci = ci
	e.filters = FilterSubjects(e.ci.Config)
	res.Info = e.ci

	e.cluster()
	e.paused()
	e.stalled()
	e.pushNoSubscriber()
	if err := e.poison(ctx); err != nil {
		return nil, err
	}
	e.maxDeliverUnlimited()
	if err := e.maxDeliverReached(ctx); err != nil {
		return nil, err
	}
	if err := e.filterNoMatch(ctx); err != nil {
		return nil, err
	}
	e.noWorker()
	if err := e.skippedBacklog(ctx); err != nil {
		return nil, err
	}
	if err := e.interestHeld(ctx); err != nil {
		return nil, err
	}
	rank := map[Severity]int{SeverityCritical: 0, SeverityWarning: 1, SeverityInfo: 2}
	slices.SortStableFunc(e.out, func(a, b Finding) int { return rank[a.Severity] - rank[b.Severity] })
	res.Findings = e.out
	if res.Findings == nil {
		res.Findings = []Finding{}
	}
	return res, nil
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

func (e *explainer) add(id string, sev Severity, summary, command string, evidence map[string]any) {
	e.out = append(e.out, Finding{ID: id, Severity: sev, Stream: e.cfg.Stream, Consumer: e.cfg.Consumer,
		Summary: summary, Evidence: evidence, Command: command})
}

// leaderless reports whether err is the cluster failing to answer for an
// asset: no leader (10008, "JetStream system temporarily unavailable"),
// every replica offline, or no reply at all within the request timeout.
func leaderless(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == 10008 || strings.Contains(strings.ToLower(apiErr.Description), "offline")
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

func (e *explainer) noLeader(what string, err error) {
	reason := strings.TrimPrefix(err.Error(), "nats: ")
	ev := map[string]any{"asset": what}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		reason = apiErr.Description
		ev["error_code"] = apiErr.ErrorCode
	}
	ev["error"] = reason
	e.add(FindingNoLeader, SeverityCritical,
		fmt.Sprintf("the %s has no leader: the cluster did not answer for it (%s); nothing is delivered until a leader is elected", what, reason),
		"jetctl status", ev)
}

// cluster: no leader, or replicas that are offline or behind.
func (e *explainer) cluster() {
	cl := e.ci.Cluster
	if cl == nil || len(cl.Replicas) == 0 && cl.Leader != "" {
		return
	}
	if cl.Leader == "" {
		e.add(FindingNoLeader, SeverityCritical, "the consumer has no leader: nothing is delivered or acknowledged until one is elected",
			"jetctl status", map[string]any{"asset": "consumer", "cluster": cl.Name, "leader": ""})
		return
	}
	for _, r := range cl.Replicas {
		if r.Current && !r.Offline {
			continue
		}
		e.add(FindingReplicaLagging, SeverityWarning,
			fmt.Sprintf("replica %s is %s: the consumer loses its redundancy until it catches up", r.Name, map[bool]string{true: "offline", false: "not current"}[r.Offline]),
			"jetctl status", map[string]any{"replica": r.Name, "current": r.Current, "offline": r.Offline,
				"lag": r.Lag, "last_seen_seconds": r.Active.Seconds(), "leader": cl.Leader})
	}
}

func (e *explainer) paused() {
	if !e.ci.Paused {
		return
	}
	ev := map[string]any{"pause_remaining_seconds": e.ci.PauseRemaining.Seconds(), "num_pending": e.ci.NumPending}
	until := "resumed"
	if e.ci.Config.PauseUntil != nil {
		ev["pause_until"] = e.ci.Config.PauseUntil.UTC().Format(time.RFC3339)
		until = e.ci.Config.PauseUntil.UTC().Format(time.RFC3339)
	}
	e.add(FindingPaused, SeverityWarning,
		fmt.Sprintf("paused until %s: nothing is delivered, %d messages wait", until, e.ci.NumPending),
		fmt.Sprintf("jetctl consumer resume %s %s", e.cfg.Stream, e.cfg.Consumer), ev)
}

func (e *explainer) stalled() {
	max := e.ci.Config.MaxAckPending
	if max <= 0 || e.ci.NumAckPending < max {
		return
	}
	e.add(FindingStalled, SeverityCritical,
		fmt.Sprintf("stalled: %d messages delivered and not acknowledged, the MaxAckPending limit; the server delivers nothing more until workers ack, nak or term them or AckWait (%s) expires",
			e.ci.NumAckPending, e.ci.Config.AckWait),
		fmt.Sprintf("jetctl replay %s --from-seq %d --to-seq %d", e.cfg.Stream, e.ci.AckFloor.Stream+1, e.ci.Delivered.Stream),
		map[string]any{"ack_pending": e.ci.NumAckPending, "max_ack_pending": max, "num_pending": e.ci.NumPending,
			"ack_floor_stream_seq": e.ci.AckFloor.Stream, "delivered_stream_seq": e.ci.Delivered.Stream, "ack_wait_seconds": e.ci.Config.AckWait.Seconds()})
}

func (e *explainer) pushNoSubscriber() {
	if e.ci.Config.DeliverSubject == "" || e.ci.PushBound {
		return
	}
	e.add(FindingPushNoSubscriber, SeverityWarning,
		fmt.Sprintf("push consumer with no subscriber on %s: %d messages wait for one", e.ci.Config.DeliverSubject, e.ci.NumPending),
		fmt.Sprintf("nats sub '%s'", e.ci.Config.DeliverSubject),
		map[string]any{"deliver_subject": e.ci.Config.DeliverSubject, "push_bound": false, "num_pending": e.ci.NumPending})
}

// redeliveriesSinceFloor is a lower bound of the redeliveries since the
// ack floor last moved: every delivery advances the consumer sequence,
// while at most one delivery per stream sequence is a first delivery.
func (e *explainer) redeliveriesSinceFloor() uint64 {
	deliveries := e.ci.Delivered.Consumer - e.ci.AckFloor.Consumer
	distinct := e.ci.Delivered.Stream - e.ci.AckFloor.Stream
	if e.ci.Delivered.Consumer < e.ci.AckFloor.Consumer || e.ci.Delivered.Stream < e.ci.AckFloor.Stream || deliveries <= distinct {
		return 0
	}
	return deliveries - distinct
}

// oldestUnacked is the first stored message after the ack floor that the
// consumer's filters match.
func (e *explainer) oldestUnacked(ctx context.Context) (*envelope.Message, error) {
	return firstMatching(ctx, e.api, e.cfg.Stream, e.filters, e.ci.AckFloor.Stream+1)
}

func (e *explainer) poison(ctx context.Context) error {
	redeliveries := e.redeliveriesSinceFloor()
	if e.ci.NumRedelivered == 0 || e.ci.NumAckPending == 0 || redeliveries < e.cfg.PoisonRedeliveries {
		return nil
	}
	m, err := e.oldestUnacked(ctx)
	if err != nil || m == nil {
		return err
	}
	seq, subject := m.Seq, m.Subject
	e.add(FindingPoison, SeverityCritical,
		fmt.Sprintf("poison message: seq %d (%s) holds the ack floor; at least %d redeliveries since the floor last moved", seq, subject, redeliveries),
		fmt.Sprintf("jetctl replay %s --from-seq %d --to-seq %d", e.cfg.Stream, seq, seq),
		map[string]any{"stream_seq": seq, "subject": subject, "redeliveries_since_ack_floor": redeliveries,
			"num_redelivered": e.ci.NumRedelivered, "ack_pending": e.ci.NumAckPending,
			"ack_floor_stream_seq": e.ci.AckFloor.Stream, "max_deliver": e.ci.Config.MaxDeliver})
	return nil
}

func (e *explainer) maxDeliverUnlimited() {
	redeliveries := e.redeliveriesSinceFloor()
	if e.ci.Config.MaxDeliver > 0 || e.ci.NumRedelivered == 0 || redeliveries < e.cfg.PoisonRedeliveries {
		return
	}
	e.add(FindingMaxDeliverNone, SeverityWarning,
		fmt.Sprintf("MaxDeliver is unlimited while redeliveries climb (%d since the ack floor): a message that always fails is retried forever; set max_deliver and capture dead letters", redeliveries),
		fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s", e.cfg.Stream, e.cfg.Consumer),
		map[string]any{"max_deliver": e.ci.Config.MaxDeliver, "num_redelivered": e.ci.NumRedelivered, "redeliveries_since_ack_floor": redeliveries})
}

// maxDeliverReached finds messages past MaxDeliver still stored in a
// workqueue or interest stream, by the rule `jetctl dlq sweep --scan`
// uses: a stored message the consumer wants at or below its ack floor (or
// below its delivered cursor when nothing is pending) was given up on,
// unless on an interest stream another consumer still needs it.
func (e *explainer) maxDeliverReached(ctx context.Context) error {
	ret := e.stream.Config.Retention
	if e.ci.Config.MaxDeliver <= 0 || ret == jetstream.LimitsPolicy {
		return nil
	}
	upTo := e.ci.AckFloor.Stream
	if e.ci.NumAckPending == 0 {
		upTo = e.ci.Delivered.Stream
	}
	var others []*jetstream.ConsumerInfo
	if ret == jetstream.InterestPolicy {
		var err error
		if others, err = e.otherConsumers(ctx); err != nil {
			return err
		}
	}
	count, first, firstSubject, checked := 0, uint64(0), "", 0
	for seq := max(e.stream.State.FirstSeq, 1); seq <= upTo && checked < e.cfg.DeadScanLimit; {
		m, err := e.api.MsgGet(ctx, e.cfg.Stream, jsapi.MsgGetRequest{Seq: seq, NextFor: singleFilter(e.filters)})
		if errors.Is(err, jsapi.ErrNoMessage) {
			break
		}
		if err != nil {
			return err
		}
		checked++
		seq = m.Seq + 1
		if m.Seq > upTo || !matchesAny(e.filters, m.Subject) {
			continue
		}
		needed := false
		for _, o := range others {
			if matchesAny(FilterSubjects(o.Config), m.Subject) && o.AckFloor.Stream < m.Seq {
				needed = true
			}
		}
		if needed {
			continue
		}
		if first == 0 {
			first, firstSubject = m.Seq, m.Subject
		}
		count++
	}
	if count == 0 {
		return nil
	}
	countText := english.Plural(count, "message", "messages") + " past MaxDeliver"
	verb := map[bool]string{true: "is", false: "are"}[count == 1]
	if checked >= e.cfg.DeadScanLimit {
		countText, verb = "at least "+countText, "are"
	}
	retention := strings.ToLower(ret.String())
	cmd := fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s && jetctl dlq sweep --stream %s --scan", e.cfg.Stream, e.cfg.Consumer, e.cfg.Stream)
	if _, err := dlq.Resolve(ctx, e.js, e.cfg.Stream); err == nil {
		cmd = fmt.Sprintf("jetctl dlq sweep --stream %s --scan", e.cfg.Stream)
	}
	e.add(FindingMaxDeliverReached, SeverityWarning,
		fmt.Sprintf("%s (%d) %s still stored in this %s stream, the first seq %d (%s): nobody will process them",
			countText, e.ci.Config.MaxDeliver, verb, retention, first, firstSubject),
		cmd,
		map[string]any{"dead_messages": count, "scan_complete": checked < e.cfg.DeadScanLimit, "first_stream_seq": first, "first_subject": firstSubject,
			"max_deliver": e.ci.Config.MaxDeliver, "retention": retention})
	return nil
}

func singleFilter(filters []string) string {
	if len(filters) == 1 {
		return filters[0]
	}
	return ">"
}

func matchesAny(filters []string, subject string) bool {
	return len(filters) == 0 || streamread.SubjectMatchesAny(filters, subject)
}

// otherConsumers are the stream's consumers but this one, listed on first
// use only.
func (e *explainer) otherConsumers(ctx context.Context) ([]*jetstream.ConsumerInfo, error) {
	if e.othersRead {
		return e.others, nil
	}
	var out []*jetstream.ConsumerInfo
	l := e.st.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.Name != e.cfg.Consumer {
			out = append(out, ci)
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: consumers: %w", e.cfg.Stream, err)
	}
	e.others, e.othersRead = out, true
	return out, nil
}

// filterNoMatch: a filter that no stored message matches on a consumer
// that never delivered anything; worse, one that no subject of the stream
// can ever match (a typo).
func (e *explainer) filterNoMatch(ctx context.Context) error {
	for _, f := range e.filters {
		canMatch := len(e.stream.Config.Subjects) == 0 // sourced or mirrored: unknown
		for _, s := range e.stream.Config.Subjects {
			if streamread.SubjectsOverlap(f, s) {
				canMatch = true
			}
		}
		stored := false
		if e.stream.State.Msgs > 0 {
			m, err := firstMatching(ctx, e.api, e.cfg.Stream, []string{f}, e.stream.State.FirstSeq)
			if err != nil {
				return err
			}
			stored = m != nil
		}
		// A consumer that has delivered may simply have had its messages
		// removed (a workqueue, limits): only a filter that never matched
		// anything, or never can, is suspect.
		if stored || (canMatch && (e.stream.State.Msgs == 0 || e.ci.Delivered.Consumer > 0)) {
			continue
		}
		summary := fmt.Sprintf("filter %s matches none of the %d messages the stream holds", f, e.stream.State.Msgs)
		if !canMatch {
			summary = fmt.Sprintf("filter %s can never match: the stream takes only %s", f, strings.Join(e.stream.Config.Subjects, ", "))
		}
		e.add(FindingFilterNoMatch, SeverityWarning, summary,
			fmt.Sprintf("jetctl replay %s --last 20 --jq .subject", e.cfg.Stream),
			map[string]any{"filter": f, "stream_subjects": append([]string{}, e.stream.Config.Subjects...), "stream_msgs": e.stream.State.Msgs, "can_match": canMatch})
	}
	return nil
}

func (e *explainer) noWorker() {
	if e.ci.Config.DeliverSubject != "" || e.ci.NumWaiting > 0 || e.ci.NumPending == 0 || e.ci.Paused ||
		(e.ci.Config.MaxAckPending > 0 && e.ci.NumAckPending >= e.ci.Config.MaxAckPending) {
		return
	}
	now := e.ci.TimeStamp
	if now.IsZero() {
		now = time.Now()
	}
	last := "never"
	ev := map[string]any{"num_pending": e.ci.NumPending, "num_waiting": 0, "idle_after_seconds": e.cfg.IdleAfter.Seconds()}
	if e.ci.Delivered.Last != nil {
		idle := now.Sub(*e.ci.Delivered.Last)
		if idle < e.cfg.IdleAfter {
			return
		}
		last = e.ci.Delivered.Last.UTC().Format(time.RFC3339)
		ev["idle_seconds"] = idle.Round(time.Second).Seconds()
	}
	ev["last_delivered"] = last
	e.add(FindingNoWorker, SeverityWarning,
		fmt.Sprintf("no worker is pulling: %d messages wait, no pull request is waiting, last delivery %s", e.ci.NumPending, last),
		fmt.Sprintf("jetctl consumer wait %s %s --caught-up --wait 10m", e.cfg.Stream, e.cfg.Consumer), ev)
}

// skippedBacklog: a deliver policy that started after messages the stream
// still holds and the filters match.
func (e *explainer) skippedBacklog(ctx context.Context) error {
	p := e.ci.Config.DeliverPolicy
	if p == jetstream.DeliverAllPolicy || e.stream.State.Msgs == 0 {
		return nil
	}
	m, err := firstMatching(ctx, e.api, e.cfg.Stream, e.filters, e.stream.State.FirstSeq)
	if err != nil || m == nil {
		return err
	}
	first := m.Seq
	var startSeq uint64
	switch p {
	case jetstream.DeliverByStartSequencePolicy:
		startSeq = e.ci.Config.OptStartSeq
	default:
		start := e.ci.Created
		if p == jetstream.DeliverByStartTimePolicy && e.ci.Config.OptStartTime != nil {
			start = *e.ci.Config.OptStartTime
		}
		start = start.UTC()
		m, err := e.api.MsgGet(ctx, e.cfg.Stream, jsapi.MsgGetRequest{StartTime: &start})
		switch {
		case errors.Is(err, jsapi.ErrNoMessage):
			startSeq = e.stream.State.LastSeq + 1
		case err != nil:
			return err
		default:
			startSeq = m.Seq
		}
	}
	if first >= startSeq {
		return nil
	}
	e.add(FindingSkippedBacklog, SeverityInfo,
		fmt.Sprintf("deliver policy %s skipped the backlog: the stream holds matching messages from seq %d, the consumer started at seq %d", p, first, startSeq),
		fmt.Sprintf("jetctl consumer rewind %s %s --to-start --dry-run", e.cfg.Stream, e.cfg.Consumer),
		map[string]any{"deliver_policy": p.String(), "first_matching_seq": first, "start_seq": startSeq, "stream_first_seq": e.stream.State.FirstSeq})
	return nil
}

// interestHeld: on an interest stream, messages every other consumer has
// acknowledged are kept for this one alone.
func (e *explainer) interestHeld(ctx context.Context) error {
	if e.stream.Config.Retention != jetstream.InterestPolicy {
		return nil
	}
	others, err := e.otherConsumers(ctx)
	if err != nil || len(others) == 0 {
		return err
	}
	minOther := others[0].AckFloor.Stream
	for _, o := range others[1:] {
		minOther = min(minOther, o.AckFloor.Stream)
	}
	from := max(e.ci.AckFloor.Stream+1, e.stream.State.FirstSeq)
	to := min(minOther, e.stream.State.LastSeq)
	if e.stream.State.Msgs == 0 || from > to {
		return nil
	}
	m, err := firstMatching(ctx, e.api, e.cfg.Stream, e.filters, from)
	if err != nil || m == nil || m.Seq > to {
		return err
	}
	first := m.Seq
	e.add(FindingInterestHeld, SeverityInfo,
		fmt.Sprintf("the interest stream keeps seqs %d..%d for this consumer alone: every other consumer has acknowledged them", first, to),
		fmt.Sprintf("jetctl replay %s --from-seq %d --to-seq %d", e.cfg.Stream, first, to),
		map[string]any{"ack_floor_stream_seq": e.ci.AckFloor.Stream, "other_consumers": len(others), "others_min_ack_floor": minOther,
			"held_from_seq": first, "held_to_seq": to})
	return nil
}
