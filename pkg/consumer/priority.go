package consumer

import (
	"fmt"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/units"
)

// Priority groups (nats-server 2.11+): a pull consumer with a priority
// policy serves pulls that name one of its groups. With pinned_client the
// server gives every message to one client, the one it pinned the group
// to, until that client stops pulling for priority_timeout; with overflow
// a pull may ask for messages only past a backlog (min_pending,
// min_ack_pending); with prioritized the pull with the lowest priority
// number is served first. What the server reports and does is pinned by
// the TestFact* tests of facts_test.go; docs/consumer.md, "Priority
// groups", says what jetctl reads from it.

// The priority policies, as the server spells them.
const (
	PolicyPinnedClient = "pinned_client"
	PolicyOverflow     = "overflow"
	PolicyPrioritized  = "prioritized"
)

// PriorityGroup is one of a consumer's priority groups with what the
// server reports of it (the figures of consumer ls, explain and check).
type PriorityGroup struct {
	Group string `json:"group"`
	// PinnedClientID is the id the server gave the client it pinned the
	// group to (the Nats-Pin-Id that client's messages carry); "" when no
	// client is pinned. The server (2.11–2.15) keeps one pin per consumer
	// and reports it under the consumer's first group.
	PinnedClientID string `json:"pinned_client_id"`
	// PinnedSince is when the server pinned it (pinned_ts: the client's
	// later pulls do not move it); nil when no client is pinned.
	PinnedSince *time.Time `json:"pinned_since"`
	// PinnedSeconds is how long it had been pinned when the state was
	// read; nil when no client is pinned.
	PinnedSeconds *float64 `json:"pinned_seconds"`
	// UndeliveredSeconds is, for a pinned group and for an overflow
	// consumer's groups, how long messages have waited with nothing
	// delivered: since the latest of the last delivery, the consumer's
	// creation, the arrival of the oldest unprocessed message and, pinned,
	// the pin. 0 when nothing is unprocessed; nil when it does not apply
	// (no pin, another policy) or the oldest message's age could not be
	// read. The pinned-client-gone and overflow-threshold-not-reached
	// findings judge it against the inactive threshold.
	UndeliveredSeconds *float64 `json:"undelivered_seconds"`
}

// priorityPolicy is the policy's name, "" for none.
func priorityPolicy(p jetstream.PriorityPolicy) string {
	switch p {
	case jetstream.PriorityPolicyPinned:
		return PolicyPinnedClient
	case jetstream.PriorityPolicyOverflow:
		return PolicyOverflow
	case jetstream.PriorityPolicyPrioritized:
		return PolicyPrioritized
	}
	return ""
}

// setPriority fills the policy and each configured group with what the
// server reports of it (the pin), at the state's time. The server reports
// the first group only: the others are shown unpinned.
func (s *State) setPriority(info *jetstream.ConsumerInfo) {
	s.PriorityGroups = []PriorityGroup{}
	s.PriorityPolicy = priorityPolicy(info.Config.PriorityPolicy)
	if s.PriorityPolicy == PolicyPinnedClient {
		timeout := info.Config.PinnedTTL.Seconds()
		s.PriorityTimeoutSeconds = &timeout
	}
	for _, name := range info.Config.PriorityGroups {
		g := PriorityGroup{Group: name}
		for _, st := range info.PriorityGroups {
			if st.Group != name || st.PinnedClientID == "" {
				continue
			}
			g.PinnedClientID = st.PinnedClientID
			if !st.PinnedTS.IsZero() {
				at := st.PinnedTS.UTC()
				pinned := max(0, s.Time.Sub(at).Seconds())
				g.PinnedSince, g.PinnedSeconds = &at, &pinned
			}
		}
		s.PriorityGroups = append(s.PriorityGroups, g)
	}
}

// PinnedGroup is the group a client is pinned to, and whether one is.
func (s *State) PinnedGroup() (PriorityGroup, bool) {
	for _, g := range s.PriorityGroups {
		if g.PinnedClientID != "" {
			return g, true
		}
	}
	return PriorityGroup{}, false
}

// undelivered is how long messages have waited with nothing delivered at
// the state's time: since the latest of the last delivery, the creation,
// the oldest unprocessed message's arrival and since (when not nil). 0
// when nothing is unprocessed; false when the oldest message's age is
// unknown.
func (s *State) undelivered(since *time.Time) (time.Duration, bool) {
	if s.Unprocessed == 0 {
		return 0, true
	}
	lag, ok := s.Lag()
	if !ok {
		return 0, false
	}
	from := s.Time.Add(-lag)
	if s.Info != nil {
		from = later2(from, s.Info.Created)
		if d := s.Info.Delivered.Last; d != nil {
			from = later2(from, *d)
		}
	}
	if since != nil {
		from = later2(from, *since)
	}
	return max(0, s.Time.Sub(from)), true
}

// priorityFigures sets each group's UndeliveredSeconds: the health
// model's one computation of it, once the lag is known.
func (ev *evaluation) priorityFigures() {
	s := ev.s
	for i := range s.PriorityGroups {
		g := &s.PriorityGroups[i]
		g.UndeliveredSeconds = nil
		var since *time.Time
		switch {
		case s.PriorityPolicy == PolicyPinnedClient && g.PinnedClientID != "":
			since = g.PinnedSince
		case s.PriorityPolicy == PolicyOverflow:
		default:
			continue
		}
		if d, ok := s.undelivered(since); ok {
			v := d.Seconds()
			g.UndeliveredSeconds = &v
		}
	}
}

// deliveryBlocked reports whether something other than the priority
// groups keeps the server from delivering: a pause, or MaxAckPending
// reached (their own findings say so).
func (ev *evaluation) deliveryBlocked() bool { return ev.ci.Paused || ev.atMaxAckPending() }

// pinnedClientGone: a group is pinned to a client that has taken nothing
// for the inactive threshold while messages wait. The server keeps the
// group pinned until priority_timeout passes with no pull from that
// client, and delivers to nobody else meanwhile: other clients' pulls
// wait (TestFactPinnedClientGoneHoldsGroup). Unpinning ends it at once
// (TestFactUnpin).
func (ev *evaluation) pinnedClientGone() {
	s, ci := ev.s, ev.ci
	if s.PriorityPolicy != PolicyPinnedClient || ci.NumPending == 0 || ev.deliveryBlocked() {
		return
	}
	g, ok := s.PinnedGroup()
	if !ok || g.UndeliveredSeconds == nil {
		return
	}
	waited := time.Duration(*g.UndeliveredSeconds * float64(time.Second))
	if waited < ev.t.Inactive {
		return
	}
	timeout := time.Duration(*s.PriorityTimeoutSeconds * float64(time.Second))
	since, pinnedFor := "", ""
	evidence := map[string]any{"group": g.Group, "pinned_client_id": g.PinnedClientID, "undelivered_seconds": *g.UndeliveredSeconds,
		"priority_timeout_seconds": *s.PriorityTimeoutSeconds, "num_pending": ci.NumPending, "num_waiting": ci.NumWaiting,
		"inactive_after_seconds": ev.t.Inactive.Seconds()}
	if g.PinnedSince != nil {
		since = g.PinnedSince.Format(time.RFC3339Nano)
		pinnedFor = fmt.Sprintf(" since %s (%s)", g.PinnedSince.Format(time.RFC3339), ShortDuration(time.Duration(*g.PinnedSeconds*float64(time.Second))))
		evidence["pinned_since"], evidence["pinned_seconds"] = since, *g.PinnedSeconds
	}
	others := "no other client is pulling"
	if ci.NumWaiting > 0 {
		others = english.Plural(ci.NumWaiting, "pull waits", "pulls wait") + " for it to let go"
	}
	ev.add(FindingPinnedClientGone,
		fmt.Sprintf("group %s is pinned to client %s%s, which has taken nothing for %s while %d messages wait (%s): the server delivers to nobody else until it has not pulled for priority_timeout (%s)",
			g.Group, g.PinnedClientID, pinnedFor, ShortDuration(waited), ci.NumPending, others, units.FormatDuration(timeout)),
		UnpinCommand(s.Stream, s.Consumer, g.Group), evidence)
}

// UnpinCommand is the command a pinned-client-gone finding names.
func UnpinCommand(stream, consumer, group string) string {
	return fmt.Sprintf("jetctl consumer unpin %s %s --group %s --dry-run", stream, consumer, group)
}

// overflowNotReached: an overflow consumer with pulls waiting and messages
// waiting has delivered nothing for the inactive threshold. The server
// holds a pull whose min_pending or min_ack_pending is above what the
// consumer has, and reports the pull (num_waiting) but never its
// threshold (TestFactOverflowBelowMinPendingWaits): every waiting pull
// asks for a backlog the consumer has not reached, and no pull without a
// threshold (a primary worker) is waiting.
func (ev *evaluation) overflowNotReached() {
	s, ci := ev.s, ev.ci
	if s.PriorityPolicy != PolicyOverflow || ci.NumPending == 0 || ci.NumWaiting == 0 || ev.deliveryBlocked() || len(s.PriorityGroups) == 0 {
		return
	}
	g := s.PriorityGroups[0]
	if g.UndeliveredSeconds == nil {
		return
	}
	waited := time.Duration(*g.UndeliveredSeconds * float64(time.Second))
	if waited < ev.t.Inactive {
		return
	}
	groups := make([]string, len(s.PriorityGroups))
	for i, g := range s.PriorityGroups {
		groups[i] = g.Group
	}
	ev.add(FindingOverflowNotReached,
		fmt.Sprintf("%s and %d messages wait, yet nothing was delivered for %s: the waiting pulls ask for a backlog (min_pending or min_ack_pending) above what the consumer has (%d unprocessed, %d awaiting an ack), and no pull without a threshold is waiting",
			english.Plural(ci.NumWaiting, "pull", "pulls"), ci.NumPending, ShortDuration(waited), ci.NumPending, ci.NumAckPending),
		fmt.Sprintf("jetctl consumer wait %s %s --caught-up --wait 10m", s.Stream, s.Consumer),
		map[string]any{"groups": groups, "num_waiting": ci.NumWaiting, "num_pending": ci.NumPending, "ack_pending": ci.NumAckPending,
			"undelivered_seconds": *g.UndeliveredSeconds, "inactive_after_seconds": ev.t.Inactive.Seconds()})
}
