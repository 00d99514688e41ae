package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// This file is jetctl's one health model. Every command that says how a
// consumer is (consumer ls, status, watch, wait, explain, and check) asks
// evaluate: it produces the findings, each with its severity, and the
// consumer's severity and health word are those of the most urgent one.
// Commands decide from State.Severity, so a consumer is never "ok" in one
// command and critical in another.

// Health is a consumer's condition in one word: the word of its most
// urgent finding, or ok. The words, most urgent first, are the constants
// below; docs/consumer.md lists which findings give each.
type Health string

// The health words, most urgent first.
const (
	// Critical: messages are not being processed.
	HealthNoLeader Health = "no-leader"
	HealthStalled  Health = "stalled"
	HealthFailing  Health = "failing"
	HealthPoison   Health = "poison"
	// Warning: needs a look.
	HealthPaused        Health = "paused"
	HealthBehind        Health = "behind"
	HealthDeadLetters   Health = "dead-letters"
	HealthDegraded      Health = "degraded"
	HealthMisconfigured Health = "misconfigured"
	// Info: worth knowing.
	HealthIdle Health = "idle"
	// HealthReplication: the server's own consumer, through which a
	// mirror or a sourcing stream reads this stream; never judged like a
	// worker's.
	HealthReplication Health = "replication"
	HealthOK          Health = "ok"
)

// healthOrder is every word, most urgent first.
var healthOrder = []Health{HealthNoLeader, HealthStalled, HealthFailing, HealthPoison,
	HealthPaused, HealthBehind, HealthDeadLetters, HealthDegraded, HealthMisconfigured,
	HealthIdle, HealthReplication, HealthOK}

// Severity orders health words for sorting: 0 is the most urgent.
func (h Health) Severity() int {
	if i := slices.Index(healthOrder, h); i >= 0 {
		return i
	}
	return len(healthOrder)
}

// Level is the word's usual severity: critical, warning or info (ok and
// idle), the severity of its findings unless a threshold sets another (a
// lag past lag-critical is critical; an ack floor frozen for less than
// stall-critical is a warning with the word stalled). A consumer's
// severity is State.Severity, not its word's Level.
func (h Health) Level() Severity {
	switch h {
	case HealthNoLeader, HealthStalled, HealthFailing, HealthPoison:
		return SeverityCritical
	case HealthPaused, HealthBehind, HealthDeadLetters, HealthDegraded, HealthMisconfigured:
		return SeverityWarning
	}
	return SeverityInfo
}

// findingWord is the health word each finding gives; its severity is the
// word's Level unless a threshold sets it (behind, dead-letters,
// ack-floor-frozen).
var findingWord = map[string]Health{
	FindingNoLeader:           HealthNoLeader,
	FindingStalled:            HealthStalled,
	FindingNoWorker:           HealthStalled,
	FindingPushNoSubscriber:   HealthStalled,
	FindingAckFloorFrozen:     HealthStalled,
	FindingPinnedClientGone:   HealthStalled,
	FindingOverflowNotReached: HealthStalled,
	FindingNothingAcked:       HealthFailing,
	FindingPoison:             HealthPoison,
	FindingPaused:             HealthPaused,
	FindingBehind:             HealthBehind,
	FindingDeadLetters:        HealthDeadLetters,
	FindingMaxDeliverReached:  HealthDeadLetters,
	FindingReplicaLagging:     HealthDegraded,
	FindingFilterNoMatch:      HealthMisconfigured,
	FindingMaxDeliverNone:     HealthMisconfigured,
	FindingIdle:               HealthIdle,
	FindingSkippedBacklog:     HealthOK,
	FindingInterestHeld:       HealthOK,
	FindingReplication:        HealthReplication,
}

// WordOf is the health word a finding gives.
func WordOf(findingID string) Health {
	if w, ok := findingWord[findingID]; ok {
		return w
	}
	return HealthOK
}

// evaluation holds what the rules look at for one consumer: its state,
// its stream and the stream's other consumers. api may be nil: the rules
// that need to read messages are then skipped (unit tests).
type evaluation struct {
	// t are the command's thresholds; evaluate lays the consumer's
	// metadata over them, except for those named in fixed.
	t      Thresholds
	fixed  map[string]bool
	cache  *LagCache
	s      *State
	ci     *jetstream.ConsumerInfo
	api    *jsapi.Client
	stream *jetstream.StreamInfo
	// others are the stream's other consumers (nil when not read).
	others  []*State
	filters []string
	out     []Finding
	// dlq names the dead-letter stream, for the dead-letters command.
	dlq string
}

// evaluate runs every rule on s and sets its Findings, Severity, Health
// and HealthReason, the thresholds it was judged by (Thresholds,
// ThresholdSource: the command's with the consumer's metadata laid over
// them) and AckFloorAgeSeconds. A read that fails leaves its rule out and
// is noted in s.ReadErrors, as is a threshold metadata value ignored;
// only an interruption (ctx) is returned.
func evaluate(ctx context.Context, ev *evaluation) error {
	s := ev.s
	ev.ci = s.Info
	ev.out = nil
	var meta map[string]string
	if ev.ci != nil {
		ev.filters = FilterSubjects(ev.ci.Config)
		meta = ev.ci.Config.Metadata
	}
	eff, source, notes := ev.t.With(meta, ev.fixed)
	ev.t = eff
	s.Thresholds, s.ThresholdSource = &eff, source
	s.ReadErrors = append(s.ReadErrors, notes...)
	s.thresholdNotes = notes
	if s.Replication != nil && ev.ci != nil {
		// The server's own: never judged like a worker's consumer.
		ev.replication()
		return ev.finish()
	}
	if s.NoLeader || ev.ci == nil {
		ev.add(FindingNoLeader, "no server leads this consumer: nothing is delivered or acknowledged until one is elected",
			"jetctl status", map[string]any{"asset": "consumer", "leader": ""})
		return ev.finish()
	}
	if err := ev.ackFloorAge(ctx); err != nil {
		return err
	}
	ev.priorityFigures()
	ev.cluster()
	ev.paused()
	ev.stalled()
	ev.pushNoSubscriber()
	ev.noWorker()
	ev.pinnedClientGone()
	ev.overflowNotReached()
	ev.ackFloorFrozen()
	ev.behind()
	ev.deadLetters()
	ev.maxDeliverUnlimited()
	ev.idle()
	for _, rule := range []struct {
		what string
		run  func(context.Context) error
	}{
		{"redeliveries", ev.redelivering},
		{"messages past MaxDeliver", ev.maxDeliverReached},
		{"filter", ev.filterNoMatch},
		{"deliver policy", ev.skippedBacklog},
		{"interest", ev.interestHeld},
	} {
		if ev.api == nil {
			break
		}
		if err := rule.run(ctx); err != nil {
			if natsconn.Interrupted(ctx) {
				return ctx.Err()
			}
			s.ReadErrors = append(s.ReadErrors, rule.what+": "+readError(ctx, err))
		}
	}
	return ev.finish()
}

// finish sorts the findings, the most urgent first (by severity, then by
// word), and sets the consumer's severity and word: the first finding's.
func (ev *evaluation) finish() error {
	SortFindings(ev.out)
	s := ev.s
	s.Findings = ev.out
	if s.Findings == nil {
		s.Findings = []Finding{}
	}
	if s.ReadErrors == nil {
		s.ReadErrors = []string{}
	}
	s.Health, s.HealthReason, s.Severity = HealthOK, "", SeverityInfo
	if len(s.Findings) > 0 {
		s.Severity = s.Findings[0].Severity
		if w := WordOf(s.Findings[0].ID); w != HealthOK {
			s.Health, s.HealthReason = w, s.Findings[0].Summary
		}
	}
	return nil
}

// SortFindings orders findings the most urgent first: by severity
// (critical, warning, info), then by the order of their words
// (healthOrder), keeping the rules' order otherwise.
func SortFindings(findings []Finding) {
	slices.SortStableFunc(findings, func(a, b Finding) int {
		if ra, rb := a.Severity.rank(), b.Severity.rank(); ra != rb {
			return ra - rb
		}
		return WordOf(a.ID).Severity() - WordOf(b.ID).Severity()
	})
}

// add records a finding at its word's usual severity.
func (ev *evaluation) add(id, summary, command string, evidence map[string]any) {
	ev.addAt(WordOf(id).Level(), id, summary, command, evidence)
}

// addAt records a finding at the severity a threshold gave it.
func (ev *evaluation) addAt(severity Severity, id, summary, command string, evidence map[string]any) {
	ev.out = append(ev.out, Finding{ID: id, Severity: severity, Health: WordOf(id), Stream: ev.s.Stream, Consumer: ev.s.Consumer,
		Summary: summary, Evidence: evidence, Command: command})
}

// inactive reports whether the consumer saw no delivery or ack (or was
// created) within the threshold, and a phrase saying since when.
func (ev *evaluation) inactive() (bool, string) { return ev.s.inactiveFor(ev.t.Inactive) }

// noWorkerSeen: a pull consumer with no waiting pull and no activity for
// the threshold; a push consumer without a subscriber.
func (ev *evaluation) noWorkerSeen() (bool, string) {
	if ev.s.Kind == KindPush {
		return !ev.s.PushBound, "no subscriber"
	}
	inactive, since := ev.inactive()
	return ev.s.WaitingPulls == 0 && inactive, "no waiting pulls, " + since
}

func (ev *evaluation) atMaxAckPending() bool {
	max := ev.ci.Config.MaxAckPending
	return max > 0 && ev.ci.NumAckPending >= max
}

// cluster: replicas that are offline or behind.
func (ev *evaluation) cluster() {
	cl := ev.ci.Cluster
	if cl == nil || cl.Leader == "" {
		return
	}
	for _, r := range cl.Replicas {
		if r.Current && !r.Offline {
			continue
		}
		ev.add(FindingReplicaLagging,
			fmt.Sprintf("replica %s is %s: the consumer loses its redundancy until it catches up", r.Name, map[bool]string{true: "offline", false: "not current"}[r.Offline]),
			"jetctl status", map[string]any{"replica": r.Name, "current": r.Current, "offline": r.Offline,
				"lag": r.Lag, "last_seen_seconds": r.Active.Seconds(), "leader": cl.Leader})
	}
}

func (ev *evaluation) paused() {
	if !ev.ci.Paused {
		return
	}
	ev2 := map[string]any{"pause_remaining_seconds": ev.ci.PauseRemaining.Seconds(), "num_pending": ev.ci.NumPending}
	until := "resumed"
	if ev.s.PausedUntil != nil {
		until = ev.s.PausedUntil.UTC().Format(time.RFC3339)
		ev2["pause_until"] = until
	}
	ev.add(FindingPaused,
		fmt.Sprintf("paused until %s: nothing is delivered, %d messages wait", until, ev.ci.NumPending),
		fmt.Sprintf("jetctl consumer resume %s %s", ev.s.Stream, ev.s.Consumer), ev2)
}

func (ev *evaluation) stalled() {
	if !ev.atMaxAckPending() {
		return
	}
	ci := ev.ci
	ev.add(FindingStalled,
		fmt.Sprintf("stalled: %d messages delivered and not acknowledged, the MaxAckPending limit; the server delivers nothing more until workers ack, nak or term them or AckWait (%s) expires",
			ci.NumAckPending, ci.Config.AckWait),
		fmt.Sprintf("jetctl replay %s --from-seq %d --to-seq %d", ev.s.Stream, ci.AckFloor.Stream+1, ci.Delivered.Stream),
		map[string]any{"ack_pending": ci.NumAckPending, "max_ack_pending": ci.Config.MaxAckPending, "num_pending": ci.NumPending,
			"ack_floor_stream_seq": ci.AckFloor.Stream, "delivered_stream_seq": ci.Delivered.Stream, "ack_wait_seconds": ci.Config.AckWait.Seconds()})
}

// floorReadAfter: an ack floor that has stood still for less than this
// with messages pending acknowledgement is not read further (the first
// pending message's arrival); the figure is then the time since the last
// ack, which can only be larger, by less than this.
const floorReadAfter = time.Second

// ackFloorAge sets s.AckFloorAgeSeconds: how long the ack floor has
// stood still while work waits. The floor last moved with the last ack
// (the last delivery for an ack policy none consumer, the creation when
// there was none), but it had nothing to move for before the oldest
// pending message arrived: that of the oldest unprocessed message (the
// lag) when nothing awaits an ack, else the first message after the
// floor, read (one get, kept in the LagCache while the floor stands).
// A read that fails leaves the figure unknown (nil) and says why.
func (ev *evaluation) ackFloorAge(ctx context.Context) error {
	s, ci := ev.s, ev.ci
	s.AckFloorAgeSeconds = nil
	if ci.NumPending == 0 && ci.NumAckPending == 0 {
		zero := 0.0
		s.AckFloorAgeSeconds = &zero
		return nil
	}
	var moved time.Time
	switch {
	case ci.Config.AckPolicy == jetstream.AckNonePolicy && ci.Delivered.Last != nil:
		moved = *ci.Delivered.Last
	case ci.AckFloor.Last != nil:
		moved = *ci.AckFloor.Last
	case LastAckUnknown(ci):
		// Something was acknowledged, and the server no longer says when:
		// it forgets at a restart (TestFactRestartForgetsLastActive). The
		// floor's age is unknown until the next ack; creation would call
		// every consumer stalled for its whole life after each restart.
		return nil
	case !ci.Created.IsZero():
		moved = ci.Created
	default:
		return nil
	}
	if ci.NumAckPending == 0 {
		// The floor is the delivered cursor: work waits since the oldest
		// unprocessed message arrived. Its age unknown (read_errors says
		// why), so is the floor's: no stall is called on a guess.
		lag, ok := s.Lag()
		if !ok {
			return nil
		}
		moved = later2(moved, s.Time.Add(-lag))
	} else if ev.api != nil && s.Time.Sub(moved) >= floorReadAfter {
		arrived, ok, err := ev.firstPendingArrival(ctx)
		if err != nil {
			if natsconn.Interrupted(ctx) {
				return ctx.Err()
			}
			s.ReadErrors = append(s.ReadErrors, "ack floor: "+readError(ctx, err))
			return nil
		}
		if ok {
			moved = later2(moved, arrived)
		}
	}
	age := max(0, s.Time.Sub(moved).Seconds())
	s.AckFloorAgeSeconds = &age
	return nil
}

// LastAckUnknownText says LastAckUnknown for people.
const LastAckUnknownText = "last ack time unknown: the server forgets it when it restarts, and knows it again at the next ack"

// LastAckUnknown reports whether the server no longer says when the
// consumer's ack floor last moved though it has moved (the floor, or for
// an ack policy none consumer the delivered cursor, is past 0): a server
// forgets ack_floor.last_active and delivered.last_active when it
// restarts, and keeps the floor (TestFactRestartForgetsLastActive).
func LastAckUnknown(ci *jetstream.ConsumerInfo) bool {
	if ci.Config.AckPolicy == jetstream.AckNonePolicy {
		return ci.Delivered.Last == nil && ci.Delivered.Stream > 0
	}
	return ci.AckFloor.Last == nil && ci.AckFloor.Stream > 0
}

// firstPendingArrival reads when the first message after the ack floor
// (matching the filters, delivered and not acknowledged) was stored;
// false when it is gone.
func (ev *evaluation) firstPendingArrival(ctx context.Context) (time.Time, bool, error) {
	s, ci := ev.s, ev.ci
	key := s.Key() + " floor"
	filters := strings.Join(s.FilterSubjects, " ")
	if e, ok := ev.cache.lookup(key, ci.AckFloor.Stream, filters); ok {
		return e.at, e.seq > 0, nil
	}
	m, err := firstMatching(ctx, ev.api, s.Stream, ev.filters, ci.AckFloor.Stream+1)
	if err != nil {
		return time.Time{}, false, err
	}
	if m == nil || m.Seq > ci.Delivered.Stream {
		ev.cache.store(key, ci.AckFloor.Stream, filters, 0, time.Time{})
		return time.Time{}, false, nil
	}
	ev.cache.store(key, ci.AckFloor.Stream, filters, m.Seq, m.Time)
	return m.Time, true, nil
}

func later2(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ackFloorFrozen: work is pending, the consumer is not paused, and the
// ack floor has not moved for the stall thresholds (AckFloorAgeSeconds):
// a warning from stall-warning, critical from stall-critical. Whatever
// holds the floor (a hung worker, a lost ack, a bug that never acks),
// every other signal can read fine meanwhile. A consumer with nothing
// pending is never stalled, however long it has been idle.
func (ev *evaluation) ackFloorFrozen() {
	s, ci := ev.s, ev.ci
	if ci.Paused || (ci.NumPending == 0 && ci.NumAckPending == 0) || s.AckFloorAgeSeconds == nil {
		return
	}
	age := time.Duration(*s.AckFloorAgeSeconds * float64(time.Second))
	if age < ev.t.Stall {
		return
	}
	severity := SeverityWarning
	if age >= ev.t.StallCritical {
		severity = SeverityCritical
	}
	var lastAck any
	note := "nothing ever acknowledged"
	last := ci.AckFloor.Last
	if ci.Config.AckPolicy == jetstream.AckNonePolicy {
		// Its floor follows its deliveries.
		last, note = ci.Delivered.Last, "nothing ever delivered"
	}
	if last != nil {
		lastAck = last.UTC().Format(time.RFC3339)
		note = "last ack at " + lastAck.(string)
		if ci.Config.AckPolicy == jetstream.AckNonePolicy {
			note = "ack policy none, last delivery at " + lastAck.(string)
		}
	}
	since := s.Time.Add(-age).UTC().Format(time.RFC3339)
	ev.addAt(severity, FindingAckFloorFrozen,
		fmt.Sprintf("the ack floor (seq %d) has not moved for %s (since %s) while work waits: %d unprocessed, %d awaiting an ack; %s",
			ci.AckFloor.Stream, ShortDuration(age), since, ci.NumPending, ci.NumAckPending, note),
		fmt.Sprintf("jetctl consumer explain %s %s", s.Stream, s.Consumer),
		map[string]any{"ack_floor_age_seconds": *s.AckFloorAgeSeconds, "last_ack": lastAck, "ack_floor_stream_seq": ci.AckFloor.Stream,
			"unprocessed": ci.NumPending, "ack_pending": ci.NumAckPending,
			"stall_warning_seconds": ev.t.Stall.Seconds(), "stall_critical_seconds": ev.t.StallCritical.Seconds()})
}

// pushNoSubscriber: a push consumer nobody subscribes to while messages
// wait (with nothing pending it is idle).
func (ev *evaluation) pushNoSubscriber() {
	ci := ev.ci
	if ci.Config.DeliverSubject == "" || ci.PushBound || ci.Paused || ci.NumPending == 0 && ci.NumAckPending == 0 {
		return
	}
	ev.add(FindingPushNoSubscriber,
		fmt.Sprintf("push consumer with no subscriber on %s: %d messages wait for one", ci.Config.DeliverSubject, ci.NumPending),
		fmt.Sprintf("nats sub '%s'", ci.Config.DeliverSubject),
		map[string]any{"deliver_subject": ci.Config.DeliverSubject, "push_bound": false, "num_pending": ci.NumPending})
}

// noWorker: a pull consumer with unprocessed messages, no waiting pull and
// no activity (delivery, ack, or its creation) for the threshold.
func (ev *evaluation) noWorker() {
	ci := ev.ci
	if ev.s.Kind != KindPull || ci.NumPending == 0 || ci.Paused || ev.atMaxAckPending() {
		return
	}
	none, since := ev.noWorkerSeen()
	if !none {
		return
	}
	last := "never"
	evidence := map[string]any{"num_pending": ci.NumPending, "num_waiting": 0, "inactive_after_seconds": ev.t.Inactive.Seconds()}
	if ev.s.LastActive != nil {
		last = ev.s.LastActive.UTC().Format(time.RFC3339)
		evidence["inactive_seconds"] = ev.s.Time.Sub(*ev.s.LastActive).Round(time.Second).Seconds()
	}
	evidence["last_active"] = last
	ev.add(FindingNoWorker,
		fmt.Sprintf("no worker is pulling: %d messages wait, %s", ci.NumPending, since),
		fmt.Sprintf("jetctl consumer wait %s %s --caught-up --wait 10m", ev.s.Stream, ev.s.Consumer), evidence)
}

// behind: the oldest unprocessed message is at least the threshold old;
// critical from lag-critical, when set. An age that could not be read is
// no finding (s.ReadErrors says why).
func (ev *evaluation) behind() {
	lag, ok := ev.s.Lag()
	if ev.s.Unprocessed == 0 || !ok || lag < ev.t.Behind {
		return
	}
	evidence := map[string]any{"lag_seconds": lag.Seconds(), "oldest_unprocessed_seq": ev.s.OldestUnprocessedSeq,
		"unprocessed": ev.s.Unprocessed, "behind_after_seconds": ev.t.Behind.Seconds()}
	severity := WordOf(FindingBehind).Level()
	if c := ev.t.BehindCritical; c > 0 {
		evidence["behind_critical_seconds"] = c.Seconds()
		if lag >= c {
			severity = SeverityCritical
		}
	}
	ev.addAt(severity, FindingBehind,
		fmt.Sprintf("behind: the oldest unprocessed message (seq %d) is %s old; %d messages wait", ev.s.OldestUnprocessedSeq, ShortDuration(lag), ev.s.Unprocessed),
		fmt.Sprintf("jetctl consumer watch %s --count 5", ev.s.Stream), evidence)
}

// deadLetters: dead letters of this consumer wait (dead.go), in the DLQ
// (not yet redriven or purged), in the capture (not yet swept), or in the
// recorder alone (no capture took them; their messages still stored).
func (ev *evaluation) deadLetters() {
	d := ev.s.DeadLetters
	if d == nil || *d == 0 {
		return
	}
	w := ev.s.dead
	s := ev.s
	cmd := fmt.Sprintf("jetctl dlq ls --stream %s --consumer %s", s.Stream, s.Consumer)
	var where []string
	switch {
	case w.unswept > 0:
		cmd = fmt.Sprintf("jetctl dlq sweep --stream %s", s.Stream)
		where = append(where, fmt.Sprintf("%d not yet swept, %d in the DLQ", w.unswept, w.inDLQ))
	case w.covered || w.inDLQ > 0:
		where = append(where, fmt.Sprintf("%d in the DLQ", w.inDLQ))
	}
	if w.recorded > 0 {
		where = append(where, fmt.Sprintf("%d recorded in %s only", w.recorded, w.recorder))
		switch {
		case w.unswept > 0:
		case !w.covered:
			// Setup captures the recorder's history: the sweep takes them.
			cmd = fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s && jetctl dlq sweep --stream %s", s.Stream, s.Consumer, s.Stream)
		case w.inDLQ == 0:
			cmd = fmt.Sprintf("jetctl events timeline --stream %s --consumer %s --type max_deliveries,terminated", s.Stream, s.Consumer)
		}
	}
	evidence := map[string]any{"dead_letters": *d, "unswept": w.unswept, "in_dlq": w.inDLQ, "dlq_stream": w.dlq, "in_dlq_exact": w.exact,
		"recorded": w.recorded}
	if w.recorder != "" {
		evidence["recorder"] = w.recorder
	}
	severity := WordOf(FindingDeadLetters).Level()
	if c := ev.t.DeadLettersCritical; c > 0 {
		evidence["dead_letters_critical"] = c
		if *d >= c {
			severity = SeverityCritical
		}
	}
	ev.addAt(severity, FindingDeadLetters,
		fmt.Sprintf("%s wait (%s): messages this consumer gave up on", english.Plural(int(*d), "dead letter", "dead letters"), strings.Join(where, "; ")),
		cmd, evidence)
}

// redeliveriesSinceFloor is a lower bound of the redeliveries since the
// ack floor last moved: every delivery advances the consumer sequence,
// while at most one delivery per stream sequence is a first delivery.
func (ev *evaluation) redeliveriesSinceFloor() uint64 {
	ci := ev.ci
	deliveries := ci.Delivered.Consumer - ci.AckFloor.Consumer
	distinct := ci.Delivered.Stream - ci.AckFloor.Stream
	if ci.Delivered.Consumer < ci.AckFloor.Consumer || ci.Delivered.Stream < ci.AckFloor.Stream || deliveries <= distinct {
		return 0
	}
	return deliveries - distinct
}

// redelivering tells a poison message (one message redelivered again and
// again while later ones are acknowledged) from a consumer whose workers
// acknowledge nothing (every message delivered since the ack floor is
// still pending and redelivered).
func (ev *evaluation) redelivering(ctx context.Context) error {
	ci := ev.ci
	redeliveries := ev.redeliveriesSinceFloor()
	if ci.NumRedelivered == 0 || ci.NumAckPending == 0 || redeliveries < ev.t.PoisonRedeliveries {
		return nil
	}
	m, err := firstMatching(ctx, ev.api, ev.s.Stream, ev.filters, ci.AckFloor.Stream+1)
	if err != nil || m == nil {
		return err
	}
	// Acknowledged since the floor: more messages delivered since it than
	// are pending. Counted with one get per message for a filtered
	// consumer, so up to maxCountedSinceFloor; past it, a consumer whose
	// pending messages are all redelivered counts as acknowledging nothing.
	delivered, err := ev.deliveredSinceFloor(ctx, min(ci.NumAckPending+1, maxCountedSinceFloor))
	if err != nil {
		return err
	}
	if delivered == maxCountedSinceFloor && ci.NumAckPending >= maxCountedSinceFloor {
		// Not counted to the end: decided by the redeliveries.
		delivered = ci.NumAckPending
		if ci.NumRedelivered < ci.NumAckPending {
			delivered++
		}
	}
	evidence := map[string]any{"stream_seq": m.Seq, "subject": m.Subject, "redeliveries_since_ack_floor": redeliveries,
		"num_redelivered": ci.NumRedelivered, "ack_pending": ci.NumAckPending,
		"ack_floor_stream_seq": ci.AckFloor.Stream, "delivered_stream_seq": ci.Delivered.Stream, "max_deliver": ci.Config.MaxDeliver}
	if ci.NumAckPending >= 2 && delivered <= ci.NumAckPending {
		// Nothing delivered since the floor was acknowledged.
		ev.add(FindingNothingAcked,
			fmt.Sprintf("nothing is acknowledged: the %d messages delivered since the ack floor (seq %d) are all pending, %d of them redelivered, at least %d redeliveries; the workers fail or do not ack every message",
				ci.NumAckPending, ci.AckFloor.Stream, ci.NumRedelivered, redeliveries),
			fmt.Sprintf("jetctl replay %s --from-seq %d --to-seq %d", ev.s.Stream, m.Seq, ci.Delivered.Stream), evidence)
		return nil
	}
	ev.add(FindingPoison,
		fmt.Sprintf("poison message: seq %d (%s) holds the ack floor; at least %d redeliveries since the floor last moved (read it: jetctl replay %s --from-seq %d --to-seq %d)",
			m.Seq, m.Subject, redeliveries, ev.s.Stream, m.Seq, m.Seq),
		PoisonCommand(ev.s.Stream, ev.s.Consumer, m.Seq, ev.dlq != ""), evidence)
	return nil
}

// PoisonCommand is the command a poison-message finding names: take the
// message out of the consumer's way into the DLQ (other consumers of a
// limits stream still get it), setting the DLQ up first where there is
// none.
func PoisonCommand(stream, consumer string, seq uint64, haveDLQ bool) string {
	take := fmt.Sprintf("jetctl dlq take --stream %s --consumer %s --seq %d --dry-run", stream, consumer, seq)
	if haveDLQ {
		return take
	}
	return fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s && %s", stream, consumer, take)
}

// maxCountedSinceFloor bounds the gets that tell a poison message from a
// consumer acknowledging nothing.
const maxCountedSinceFloor = 256

// deliveredSinceFloor counts the stored messages matching the filters in
// (ack floor, delivered], up to limit (one get each).
func (ev *evaluation) deliveredSinceFloor(ctx context.Context, limit int) (int, error) {
	ci := ev.ci
	if len(ev.filters) == 0 {
		return int(min(ci.Delivered.Stream-ci.AckFloor.Stream, uint64(limit))), nil
	}
	n := 0
	for seq := ci.AckFloor.Stream + 1; seq <= ci.Delivered.Stream && n < limit; {
		m, err := firstMatching(ctx, ev.api, ev.s.Stream, ev.filters, seq)
		if err != nil {
			return 0, err
		}
		if m == nil || m.Seq > ci.Delivered.Stream {
			break
		}
		n++
		seq = m.Seq + 1
	}
	return n, nil
}

func (ev *evaluation) maxDeliverUnlimited() {
	ci := ev.ci
	redeliveries := ev.redeliveriesSinceFloor()
	if ci.Config.MaxDeliver > 0 || ci.NumRedelivered == 0 || ci.NumAckPending == 0 || redeliveries < ev.t.PoisonRedeliveries {
		return
	}
	ev.add(FindingMaxDeliverNone,
		fmt.Sprintf("MaxDeliver is unlimited while redeliveries climb (%d since the ack floor): a message that always fails is retried forever; set max_deliver and capture dead letters", redeliveries),
		fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s", ev.s.Stream, ev.s.Consumer),
		map[string]any{"max_deliver": ci.Config.MaxDeliver, "num_redelivered": ci.NumRedelivered, "redeliveries_since_ack_floor": redeliveries})
}

// idle: nothing pending and no worker seen (info).
func (ev *evaluation) idle() {
	ci := ev.ci
	if ci.NumPending > 0 || ci.NumAckPending > 0 || ci.Paused {
		return
	}
	none, since := ev.noWorkerSeen()
	if !none {
		return
	}
	ev.add(FindingIdle, "idle: nothing pending, "+since,
		fmt.Sprintf("jetctl consumer watch %s --count 5", ev.s.Stream),
		map[string]any{"waiting_pulls": ci.NumWaiting, "push_bound": ci.PushBound, "kind": ev.s.Kind, "inactive_after_seconds": ev.t.Inactive.Seconds()})
}

// maxDeliverReached finds messages past MaxDeliver still stored in a
// workqueue or interest stream, by the rule `jetctl dlq sweep --scan`
// uses: a stored message the consumer wants at or below its ack floor (or
// below its delivered cursor when nothing is pending) was given up on,
// unless on an interest stream another consumer still needs it.
func (ev *evaluation) maxDeliverReached(ctx context.Context) error {
	ci := ev.ci
	if ev.stream == nil {
		return nil
	}
	ret := ev.stream.Config.Retention
	if ci.Config.MaxDeliver <= 0 || ret == jetstream.LimitsPolicy || ev.stream.State.Msgs == 0 {
		return nil
	}
	upTo := ci.AckFloor.Stream
	if ci.NumAckPending == 0 {
		upTo = ci.Delivered.Stream
	}
	var others []*State
	if ret == jetstream.InterestPolicy {
		for _, o := range ev.others {
			if o.Info == nil || !filtersOverlap(ev.filters, o.FilterSubjects) {
				continue
			}
			others = append(others, o)
			// Nothing another consumer has not acknowledged is dead.
			upTo = min(upTo, o.AckFloorStreamSeq)
		}
	}
	count, first, firstSubject, checked := 0, uint64(0), "", 0
	for seq := max(ev.stream.State.FirstSeq, 1); seq <= upTo && checked < ev.t.DeadScanLimit; {
		m, err := ev.api.MsgGet(ctx, ev.s.Stream, jsapi.MsgGetRequest{Seq: seq, NextFor: singleFilter(ev.filters)})
		if errors.Is(err, jsapi.ErrNoMessage) {
			break
		}
		if err != nil {
			return err
		}
		checked++
		seq = m.Seq + 1
		if m.Seq > upTo || !matchesAny(ev.filters, m.Subject) {
			continue
		}
		needed := false
		for _, o := range others {
			if matchesAny(o.FilterSubjects, m.Subject) && o.AckFloorStreamSeq < m.Seq {
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
	if checked >= ev.t.DeadScanLimit {
		countText, verb = "at least "+countText, "are"
	}
	retention := strings.ToLower(ret.String())
	cmd := fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s && jetctl dlq sweep --stream %s --scan", ev.s.Stream, ev.s.Consumer, ev.s.Stream)
	if ev.dlq != "" {
		cmd = fmt.Sprintf("jetctl dlq sweep --stream %s --scan", ev.s.Stream)
	}
	ev.add(FindingMaxDeliverReached,
		fmt.Sprintf("%s (%d) %s still stored in this %s stream, the first seq %d (%s): nobody will process them",
			countText, ci.Config.MaxDeliver, verb, retention, first, firstSubject),
		cmd,
		map[string]any{"dead_messages": count, "scan_complete": checked < ev.t.DeadScanLimit, "first_stream_seq": first, "first_subject": firstSubject,
			"max_deliver": ci.Config.MaxDeliver, "retention": retention})
	return nil
}

// filtersOverlap reports whether two consumers' filters (none: every
// subject) can take a common subject.
func filtersOverlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if streamread.SubjectsOverlap(x, y) {
				return true
			}
		}
	}
	return false
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

// filterNoMatch: a filter that no stored message matches on a consumer
// that never delivered anything; worse, one that no subject of the stream
// can ever match (a typo). It reads only for a consumer that never
// delivered, on a stream holding messages.
func (ev *evaluation) filterNoMatch(ctx context.Context) error {
	if ev.stream == nil {
		return nil
	}
	st := ev.stream
	for _, f := range ev.filters {
		// The retry subject of `dlq setup --retry-subject` is empty until
		// a redrive: not a filter that matches nothing.
		if f == dlq.RetryFilter(ev.s.Stream, ev.s.Consumer) {
			continue
		}
		canMatch := len(st.Config.Subjects) == 0 // sourced or mirrored: unknown
		for _, s := range st.Config.Subjects {
			if streamread.SubjectsOverlap(f, s) {
				canMatch = true
			}
		}
		// A consumer that has delivered may simply have had its messages
		// removed (a workqueue, limits): only a filter that never matched
		// anything, or never can, is suspect.
		if canMatch && (st.State.Msgs == 0 || ev.ci.Delivered.Consumer > 0 || len(ev.filters) == 1 && ev.ci.NumPending > 0) {
			continue
		}
		if canMatch {
			m, err := firstMatching(ctx, ev.api, ev.s.Stream, []string{f}, st.State.FirstSeq)
			if err != nil {
				return err
			}
			if m != nil {
				continue
			}
		}
		summary := fmt.Sprintf("filter %s matches none of the %d messages the stream holds", f, st.State.Msgs)
		if !canMatch {
			summary = fmt.Sprintf("filter %s can never match: the stream takes only %s", f, strings.Join(st.Config.Subjects, ", "))
		}
		ev.add(FindingFilterNoMatch, summary,
			fmt.Sprintf("jetctl replay %s --last 20 --jq .subject", ev.s.Stream),
			map[string]any{"filter": f, "stream_subjects": append([]string{}, st.Config.Subjects...), "stream_msgs": st.State.Msgs, "can_match": canMatch})
	}
	return nil
}

// skippedBacklog: a deliver policy that started after messages the stream
// still holds and the filters match.
func (ev *evaluation) skippedBacklog(ctx context.Context) error {
	ci := ev.ci
	p := ci.Config.DeliverPolicy
	if ev.stream == nil || p == jetstream.DeliverAllPolicy || ev.stream.State.Msgs == 0 {
		return nil
	}
	m, err := firstMatching(ctx, ev.api, ev.s.Stream, ev.filters, ev.stream.State.FirstSeq)
	if err != nil || m == nil {
		return err
	}
	first := m.Seq
	var startSeq uint64
	switch p {
	case jetstream.DeliverByStartSequencePolicy:
		startSeq = ci.Config.OptStartSeq
	default:
		start := ci.Created
		if p == jetstream.DeliverByStartTimePolicy && ci.Config.OptStartTime != nil {
			start = *ci.Config.OptStartTime
		}
		start = start.UTC()
		m, err := ev.api.MsgGet(ctx, ev.s.Stream, jsapi.MsgGetRequest{StartTime: &start})
		switch {
		case errors.Is(err, jsapi.ErrNoMessage):
			startSeq = ev.stream.State.LastSeq + 1
		case err != nil:
			return err
		default:
			startSeq = m.Seq
		}
	}
	if first >= startSeq {
		return nil
	}
	ev.add(FindingSkippedBacklog,
		fmt.Sprintf("deliver policy %s skipped the backlog: the stream holds matching messages from seq %d, the consumer started at seq %d", p, first, startSeq),
		fmt.Sprintf("jetctl consumer rewind %s %s --to-start --dry-run", ev.s.Stream, ev.s.Consumer),
		map[string]any{"deliver_policy": p.String(), "first_matching_seq": first, "start_seq": startSeq, "stream_first_seq": ev.stream.State.FirstSeq})
	return nil
}

// interestHeld: on an interest stream, messages every other consumer has
// acknowledged are kept for this one alone.
func (ev *evaluation) interestHeld(ctx context.Context) error {
	if ev.stream == nil || ev.stream.Config.Retention != jetstream.InterestPolicy || ev.stream.State.Msgs == 0 {
		return nil
	}
	var others []*State
	for _, o := range ev.others {
		if o.Info != nil {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return nil
	}
	minOther := others[0].AckFloorStreamSeq
	for _, o := range others[1:] {
		minOther = min(minOther, o.AckFloorStreamSeq)
	}
	from := max(ev.ci.AckFloor.Stream+1, ev.stream.State.FirstSeq)
	to := min(minOther, ev.stream.State.LastSeq)
	if from > to {
		return nil
	}
	m, err := firstMatching(ctx, ev.api, ev.s.Stream, ev.filters, from)
	if err != nil || m == nil || m.Seq > to {
		return err
	}
	first := m.Seq
	ev.add(FindingInterestHeld,
		fmt.Sprintf("the interest stream keeps seqs %d..%d for this consumer alone: every other consumer has acknowledged them", first, to),
		fmt.Sprintf("jetctl replay %s --from-seq %d --to-seq %d", ev.s.Stream, first, to),
		map[string]any{"ack_floor_stream_seq": ev.ci.AckFloor.Stream, "other_consumers": len(others), "others_min_ack_floor": minOther,
			"held_from_seq": first, "held_to_seq": to})
	return nil
}
