package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamResult is one stream's verdict and the figures it rests on.
type StreamResult struct {
	Stream string `json:"stream"`
	Status Status `json:"status"`
	// Skipped: io.nats.monitor.enabled=false; nothing was judged.
	Skipped bool    `json:"skipped"`
	Checks  []Check `json:"checks"`
	// Problems say why the status is unknown: metadata that does not
	// parse. [] when none.
	Problems []string `json:"problems"`
	// Messages and Bytes stored; MaxMessages and MaxBytes are the
	// stream's limits (-1: none); Discard is old or new.
	Messages    uint64 `json:"messages"`
	Bytes       uint64 `json:"bytes"`
	MaxMessages int64  `json:"max_messages"`
	MaxBytes    int64  `json:"max_bytes"`
	Discard     string `json:"discard"`
	Consumers   int    `json:"consumers"`
	// Replicas is the configured number; Leader the server leading it
	// (on a single server the server; "" when none); ReplicasCurrent how
	// many peers (the leader included) are current.
	Replicas        int    `json:"replicas"`
	Leader          string `json:"leader"`
	ReplicasCurrent int    `json:"replicas_current"`
	// Sources are its mirror (Mirror true) and its sources.
	Sources []SourceResult `json:"sources"`

	// Info is what the server said (nil for a stream it could not read).
	Info *jetstream.StreamInfo `json:"-"`
}

// SourceResult is a mirror or a source of a stream as the server reports
// it.
type SourceResult struct {
	Name   string `json:"name"`
	Mirror bool   `json:"mirror"`
	// Lag is how many messages the copy is behind its origin.
	Lag uint64 `json:"lag"`
	// ActiveSeconds is how long ago the origin was last seen.
	ActiveSeconds float64 `json:"active_seconds"`
	// Error is the server's error for it, "" when none.
	Error string `json:"error"`
}

func judgeStream(sr *streamRead, cfg Config) *StreamResult {
	si := sr.info
	r := &StreamResult{Stream: sr.name, Checks: []Check{}, Problems: []string{}, Sources: []SourceResult{}, Info: si,
		MaxMessages: -1, MaxBytes: -1}
	if si != nil && !sr.offline {
		r.Messages, r.Bytes = si.State.Msgs, si.State.Bytes
		r.MaxMessages, r.MaxBytes = si.Config.MaxMsgs, si.Config.MaxBytes
		r.Discard = "old"
		if si.Config.Discard == jetstream.DiscardNew {
			r.Discard = "new"
		}
		r.Consumers = si.State.Consumers
		r.Replicas = max(si.Config.Replicas, 1)
		if si.Mirror != nil {
			r.Sources = append(r.Sources, sourceResult(si.Mirror, true))
		}
		for _, s := range si.Sources {
			r.Sources = append(r.Sources, sourceResult(s, false))
		}
		if si.Cluster != nil {
			r.Leader = si.Cluster.Leader
			if r.Leader != "" {
				r.ReplicasCurrent = 1
			}
			for _, p := range si.Cluster.Replicas {
				if p.Current && !p.Offline {
					r.ReplicasCurrent++
				}
			}
		} else {
			r.ReplicasCurrent = r.Replicas
		}
	}
	var meta map[string]string
	if si != nil {
		meta = si.Config.Metadata
	}
	on, problem := enabled(meta)
	if problem != "" {
		r.Problems = append(r.Problems, problem)
	}
	if !on {
		r.Skipped = true
		return r
	}
	r.Checks = append(r.Checks, leaderCheck(sr, cfg))
	if !sr.leaderless() && si != nil {
		if c, ok := replicasCheck(si); ok {
			r.Checks = append(r.Checks, c)
		}
		for _, c := range []struct {
			name        string
			used, limit float64
		}{
			{"limit-messages", float64(si.State.Msgs), float64(si.Config.MaxMsgs)},
			{"limit-bytes", float64(si.State.Bytes), float64(si.Config.MaxBytes)},
		} {
			if c.limit > 0 {
				r.Checks = append(r.Checks, limitCheck(c.name, c.used, c.limit, si.Config.Discard, cfg))
			}
		}
		for _, s := range r.Sources {
			r.Checks = append(r.Checks, sourceCheck(s))
		}
		r.Checks = append(r.Checks, streamNatscli(si, effectiveMonitor(StreamSettings, meta, cfg.StreamMonitor))...)
	}
	for _, c := range r.Checks {
		r.Status = Worst(r.Status, c.Status)
	}
	if len(r.Problems) > 0 {
		r.Status = Worst(r.Status, Unknown)
	}
	return r
}

func sourceResult(s *jetstream.StreamSourceInfo, mirror bool) SourceResult {
	out := SourceResult{Name: s.Name, Mirror: mirror, Lag: s.Lag, ActiveSeconds: s.Active.Seconds()}
	if s.Error != nil {
		out.Error = s.Error.Description
		if out.Error == "" {
			out.Error = s.Error.Error()
		}
	}
	return out
}

// leaderCheck: a stream without a leader (after the election wait) takes
// and serves nothing: critical.
func leaderCheck(sr *streamRead, cfg Config) Check {
	c := Check{Name: "leader", By: "jetctl", Status: OK}
	if sr.leaderless() {
		c.Status = Critical
		c.Message = fmt.Sprintf("no leader (read again for %s): the stream takes and serves no message until one is elected", cfg.ElectionWait)
		if sr.offline {
			c.Message = "offline: no server holding the stream is up; it takes and serves no message"
		}
		return c
	}
	c.Message = "has a leader"
	if sr.info != nil && sr.info.Cluster != nil && sr.info.Cluster.Leader != "" {
		c.Message = "leader " + sr.info.Cluster.Leader
	}
	return c
}

// replicasCheck: replicas offline or not current leave the stream with
// less redundancy than configured: a warning.
func replicasCheck(si *jetstream.StreamInfo) (Check, bool) {
	if si.Cluster == nil || si.Config.Replicas <= 1 {
		return Check{}, false
	}
	current := 1
	var behind []string
	for _, p := range si.Cluster.Replicas {
		switch {
		case p.Offline:
			behind = append(behind, p.Name+" offline")
		case !p.Current:
			behind = append(behind, fmt.Sprintf("%s not current (%d operations behind)", p.Name, p.Lag))
		default:
			current++
		}
	}
	missing := si.Config.Replicas - 1 - len(si.Cluster.Replicas)
	for i := 0; i < missing; i++ {
		behind = append(behind, "a replica not placed")
	}
	v, want := float64(current), float64(si.Config.Replicas)
	c := Check{Name: "replicas", By: "jetctl", Value: &v, Unit: "peers", Warning: &want, WarningSource: SourceDefault,
		WarningSetting: "replicas"}
	sort.Strings(behind)
	if len(behind) > 0 {
		c.Status = Warning
		c.Message = fmt.Sprintf("%d of %d replicas current: %s", current, si.Config.Replicas, strings.Join(behind, ", "))
		return c, true
	}
	c.Message = fmt.Sprintf("%d of %d replicas current", current, si.Config.Replicas)
	return c, true
}

// limitCheck judges how full a limit is. A stream with discard new
// refuses new messages when full: warning and critical from the
// percentages. One with discard old makes room by dropping its oldest
// messages, which is what its limit is for: never more than OK.
func limitCheck(name string, used, limit float64, discard jetstream.DiscardPolicy, cfg Config) Check {
	pct := 100 * used / limit
	c := Check{Name: name, By: "jetctl", Value: &pct, Unit: "percent", Status: OK}
	what := map[string]string{"limit-messages": "max_msgs", "limit-bytes": "max_bytes"}[name]
	if discard != jetstream.DiscardNew {
		c.Message = fmt.Sprintf("%.0f%% of %s %.0f; discard old drops the oldest messages to make room", pct, what, limit)
		return c
	}
	if cfg.LimitsWarning > 0 {
		w := cfg.LimitsWarning
		c.Warning, c.WarningSource, c.WarningSetting = &w, sourceOf(cfg.Fixed, FlagLimitsWarning), "--"+FlagLimitsWarning
		if pct >= w {
			c.Status = Warning
		}
	}
	if cfg.LimitsCritical > 0 {
		cr := cfg.LimitsCritical
		c.Critical, c.CriticalSource, c.CriticalSetting = &cr, sourceOf(cfg.Fixed, FlagLimitsCritical), "--"+FlagLimitsCritical
		if pct >= cr {
			c.Status = Critical
		}
	}
	c.Message = fmt.Sprintf("%.0f%% of %s %.0f; discard new refuses messages when full", pct, what, limit)
	return c
}

// sourceCheck: a mirror or source the server reports an error for is not
// copying: a warning (natscli's lag and seen thresholds judge how far
// behind it may be).
func sourceCheck(s SourceResult) Check {
	name := "source"
	if s.Mirror {
		name = "mirror"
	}
	lag := float64(s.Lag)
	c := Check{Name: name, By: "jetctl", Value: &lag, Unit: "messages", Status: OK,
		Message: fmt.Sprintf("%s %s: %d behind, last seen %.1fs ago", name, s.Name, s.Lag, s.ActiveSeconds)}
	if s.Error != "" {
		c.Status = Warning
		c.Message = fmt.Sprintf("%s %s: %s", name, s.Name, s.Error)
	}
	return c
}

// The flags of the limits percentages, as Config.Fixed names them when
// given.
const (
	FlagLimitsWarning  = "limits-warning"
	FlagLimitsCritical = "limits-critical"
)

// sourceOf says whether a setting was given as a flag or is the default.
func sourceOf(fixed map[string]bool, flag string) string {
	if fixed[flag] {
		return SourceFlag
	}
	return SourceDefault
}
