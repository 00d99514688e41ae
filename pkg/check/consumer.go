package check

import (
	"fmt"
	"time"

	"github.com/jetctl/jetctl/pkg/consumer"
)

// ConsumerResult is one consumer's verdict: the health model's (its word,
// severity and findings, as consumer ls gives them) joined with natscli's
// thresholds, and the figures they rest on.
type ConsumerResult struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Status is the worst of the model's severity (critical: CRITICAL,
	// warning: WARNING, info: OK), natscli's checks, and UNKNOWN when
	// something could not be read or parsed (Problems).
	Status Status `json:"status"`
	// Skipped: io.nats.monitor.enabled=false; the model's verdict is
	// shown, and nothing counts.
	Skipped      bool               `json:"skipped"`
	Health       consumer.Health    `json:"health"`
	Severity     consumer.Severity  `json:"severity"`
	HealthReason string             `json:"health_reason"`
	Findings     []consumer.Finding `json:"findings"`
	Checks       []Check            `json:"checks"`
	// Problems say what could not be read or parsed (the lag, a metadata
	// value); [] when none.
	Problems []string `json:"problems"`
	// The figures, as in consumer ls -o json.
	LagSeconds         *float64 `json:"lag_seconds"`
	Unprocessed        uint64   `json:"unprocessed"`
	AckPending         int      `json:"ack_pending"`
	Redelivered        int      `json:"redelivered"`
	WaitingPulls       int      `json:"waiting_pulls"`
	DeadLetters        *int64   `json:"dead_letters"`
	AckFloorAgeSeconds *float64 `json:"ack_floor_age_seconds"`
	// PriorityPolicy and PriorityGroups: each group's pinned client and
	// how long it has been pinned, as in consumer ls -o json.
	PriorityPolicy string                   `json:"priority_policy"`
	PriorityGroups []consumer.PriorityGroup `json:"priority_groups"`
	// Replication is set for the server's own consumer through which a
	// mirror or a sourcing stream reads this stream: its health is
	// replication, its status OK, and none of jetctl's or natscli's
	// consumer thresholds is judged on it (the reading stream's mirror or
	// source check judges the replication).
	Replication *consumer.Replication `json:"replication"`

	// State is the health model's state of the consumer.
	State *consumer.State `json:"-"`
}

func judgeConsumer(s *consumer.State, cfg Config) *ConsumerResult {
	r := &ConsumerResult{Stream: s.Stream, Consumer: s.Consumer, State: s,
		Health: s.Health, Severity: s.Severity, HealthReason: s.HealthReason, Findings: s.Findings,
		Checks: []Check{}, Problems: append([]string{}, s.ReadErrors...),
		LagSeconds: s.LagSeconds, Unprocessed: s.Unprocessed, AckPending: s.AckPending, Redelivered: s.Redelivered,
		WaitingPulls: s.WaitingPulls, DeadLetters: s.DeadLetters, AckFloorAgeSeconds: s.AckFloorAgeSeconds,
		PriorityPolicy: s.PriorityPolicy, PriorityGroups: s.PriorityGroups, Replication: s.Replication}
	if r.Findings == nil {
		r.Findings = []consumer.Finding{}
	}
	if r.PriorityGroups == nil {
		r.PriorityGroups = []consumer.PriorityGroup{}
	}
	if r.Severity == "" {
		r.Severity = consumer.SeverityInfo
	}
	var meta map[string]string
	if s.Info != nil {
		meta = s.Info.Config.Metadata
	}
	on, problem := enabled(meta)
	if problem != "" {
		r.Problems = append(r.Problems, problem)
	}
	if !on {
		r.Skipped = true
		return r
	}
	if s.Replication != nil && s.Health == consumer.HealthReplication {
		// The model judged nothing (replication); nor does natscli here.
		r.Checks = append(r.Checks, Check{Name: "health", By: "jetctl", Status: OfSeverity(s.Severity), Message: s.HealthReason})
	} else {
		r.Checks = append(r.Checks, modelChecks(s, cfg)...)
		r.Checks = append(r.Checks, consumerNatscli(s.Info, effectiveMonitor(ConsumerSettings, meta, cfg.ConsumerMonitor))...)
	}
	for _, c := range r.Checks {
		r.Status = Worst(r.Status, c.Status)
	}
	if len(r.Problems) > 0 {
		r.Status = Worst(r.Status, Unknown)
	}
	return r
}

// modelChecks are the health model's verdict as checks: jetctl's
// thresholds each with its figure, levels and their sources, judged by
// the finding the threshold gives, then the health word (the most urgent
// of every finding). They never disagree with the word: they are read
// from the same findings.
func modelChecks(s *consumer.State, cfg Config) []Check {
	health := Check{Name: "health", By: "jetctl", Status: OfSeverity(s.Severity), Message: s.HealthReason}
	if health.Message == "" {
		health.Message = string(s.Health)
	}
	t := consumer.DefaultThresholds
	if s.Thresholds != nil {
		t = *s.Thresholds
	}
	seconds := func(d time.Duration) *float64 {
		if d <= 0 {
			return nil
		}
		v := d.Seconds()
		return &v
	}
	level := func(c *Check, warning, critical string) {
		if c.Warning != nil {
			c.WarningSource, c.WarningSetting = thresholdSetting(s, warning)
		}
		if c.Critical != nil {
			c.CriticalSource, c.CriticalSetting = thresholdSetting(s, critical)
		}
	}
	lag := Check{Name: "lag", By: "jetctl", Value: s.LagSeconds, Unit: "seconds", Warning: seconds(t.Behind), Critical: seconds(t.BehindCritical)}
	level(&lag, consumer.ThresholdLagWarning, consumer.ThresholdLagCritical)
	judgeBy(&lag, s, consumer.FindingBehind, func() string {
		if v, ok := s.Lag(); ok && s.Unprocessed > 0 {
			return fmt.Sprintf("oldest unprocessed message %s old", consumer.ShortDuration(v))
		}
		if s.Unprocessed > 0 {
			return "lag unknown"
		}
		return "nothing unprocessed"
	})

	stall := Check{Name: "stall", By: "jetctl", Value: s.AckFloorAgeSeconds, Unit: "seconds", Warning: seconds(t.Stall), Critical: seconds(t.StallCritical)}
	level(&stall, consumer.ThresholdStallWarning, consumer.ThresholdStallCritical)
	judgeBy(&stall, s, consumer.FindingAckFloorFrozen, func() string {
		if s.Unprocessed == 0 && s.AckPending == 0 {
			return "nothing pending: never stalled"
		}
		if s.AckFloorAgeSeconds != nil {
			return fmt.Sprintf("work pending, ack floor moved %s ago", consumer.ShortDuration(time.Duration(*s.AckFloorAgeSeconds*float64(time.Second))))
		}
		if s.LastAckUnknown {
			return "work pending, " + consumer.LastAckUnknownText
		}
		return "work pending"
	})

	checks := []Check{lag, stall}
	if s.DeadLetters != nil {
		var value, any float64 = float64(*s.DeadLetters), 1
		dead := Check{Name: "dead-letters", By: "jetctl", Value: &value, Unit: "messages", Warning: &any,
			WarningSource: consumer.SourceDefault, WarningSetting: "any"}
		if t.DeadLettersCritical > 0 {
			c := float64(t.DeadLettersCritical)
			dead.Critical = &c
			dead.CriticalSource, dead.CriticalSetting = thresholdSetting(s, consumer.ThresholdDeadLettersCritical)
		}
		judgeBy(&dead, s, consumer.FindingDeadLetters, func() string { return fmt.Sprintf("%d dead letters wait", *s.DeadLetters) })
		checks = append(checks, dead)
	}
	if c, ok := priorityCheck(s, t, cfg); ok {
		checks = append(checks, c)
	}
	return append(checks, health)
}

// FlagInactive is the flag of the inactive threshold: Config.Fixed names
// it when given.
const FlagInactive = "inactive"

// priorityCheck is a pinned_client or overflow consumer's check: how long
// messages have waited undelivered (PriorityGroup.UndeliveredSeconds),
// critical from the inactive threshold, judged by the finding that
// threshold gives (pinned-client-gone, overflow-threshold-not-reached).
func priorityCheck(s *consumer.State, t consumer.Thresholds, cfg Config) (Check, bool) {
	var name, findingID string
	var g consumer.PriorityGroup
	switch s.PriorityPolicy {
	case consumer.PolicyPinnedClient:
		name, findingID = "pinned-client", consumer.FindingPinnedClientGone
		g, _ = s.PinnedGroup()
	case consumer.PolicyOverflow:
		name, findingID = "overflow", consumer.FindingOverflowNotReached
		if len(s.PriorityGroups) > 0 {
			g = s.PriorityGroups[0]
		}
	default:
		return Check{}, false
	}
	critical := t.Inactive.Seconds()
	c := Check{Name: name, By: "jetctl", Value: g.UndeliveredSeconds, Unit: "seconds", Critical: &critical,
		CriticalSource: SourceDefault, CriticalSetting: "--" + FlagInactive}
	if cfg.Fixed[FlagInactive] {
		c.CriticalSource = SourceFlag
	}
	judgeBy(&c, s, findingID, func() string {
		switch {
		case name == "pinned-client" && g.PinnedClientID == "":
			return "no client pinned"
		case name == "pinned-client" && g.PinnedSeconds != nil:
			return fmt.Sprintf("group %s pinned to client %s for %s", g.Group, g.PinnedClientID,
				consumer.ShortDuration(time.Duration(*g.PinnedSeconds*float64(time.Second))))
		case name == "pinned-client":
			return fmt.Sprintf("group %s pinned to client %s", g.Group, g.PinnedClientID)
		case s.Unprocessed == 0:
			return "nothing unprocessed"
		}
		return "messages are delivered"
	})
	return c, true
}

// judgeBy sets a check's status and message from the finding the
// threshold gives (OK without it).
func judgeBy(c *Check, s *consumer.State, findingID string, otherwise func() string) {
	for _, f := range s.Findings {
		if f.ID == findingID {
			c.Status, c.Message = OfSeverity(f.Severity), f.Summary
			return
		}
	}
	c.Status, c.Message = OK, otherwise()
}

// thresholdSetting says where a consumer's threshold came from and the
// flag or metadata key that sets it.
func thresholdSetting(s *consumer.State, name string) (source, setting string) {
	source = consumer.SourceDefault
	if src, ok := s.ThresholdSource[name]; ok {
		source = src
	}
	if source == consumer.SourceMetadata {
		return source, consumer.MetaThresholdPrefix + name
	}
	return source, "--" + name
}
