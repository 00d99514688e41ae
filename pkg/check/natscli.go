package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/jsm.go"
	"github.com/nats-io/jsm.go/api"
	"github.com/nats-io/jsm.go/monitor"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/errkind"
)

// This file is natscli's thresholds: the io.nats.monitor.* metadata keys
// that `nats server check stream|consumer` reads, parsed and judged by the
// library natscli itself uses (jsm.go's monitor package), so that a
// team's existing metadata means here what it means there. jetctl only
// decides which values apply (a flag beats metadata, key by key) and
// judges each threshold on its own, so that each has its own line in the
// report.

// MonitorPrefix prefixes natscli's monitoring metadata keys.
const MonitorPrefix = "io.nats.monitor."

// MonitorEnabled is the key that turns natscli's (and jetctl's) checks of
// a stream or consumer off: "false" skips it.
const MonitorEnabled = monitor.MonitorMetaEnabled

// MonitorSetting is one of natscli's thresholds: its metadata key, the
// jetctl flag that sets it, and the check it belongs to.
type MonitorSetting struct {
	// Key is the metadata key, io.nats.monitor.NAME.
	Key string
	// Flag is jetctl's flag, without --: natscli's name, except for the
	// stream's lag-critical (source-lag-critical here: jetctl's
	// --lag-critical is the consumer lag in time).
	Flag string
	// Check names the check the setting feeds.
	Check string
	// Usage is the flag's help.
	Usage string
	// Type names the value in --help: int, duration or bool.
	Type string
}

// ConsumerSettings are natscli's consumer thresholds, in the order their
// checks are reported.
var ConsumerSettings = []MonitorSetting{
	{monitor.ConsumerMonitorMetaOutstandingAckCritical, "outstanding-ack-critical", "outstanding-ack", "natscli: critical from this many messages awaiting an ack", "int"},
	{monitor.ConsumerMonitorMetaWaitingCritical, "waiting-critical", "waiting", "natscli: critical from this many waiting pulls", "int"},
	{monitor.ConsumerMonitorMetaUnprocessedCritical, "unprocessed-critical", "unprocessed", "natscli: critical from this many unprocessed messages", "int"},
	{monitor.ConsumerMonitorMetaLastDeliveredCritical, "last-delivery-critical", "last-delivery", "natscli: critical when nothing was delivered for this long (also when idle: prefer --stall-critical)", "duration"},
	{monitor.ConsumerMonitorMetaLastAckCritical, "last-ack-critical", "last-ack", "natscli: critical when nothing was acknowledged for this long (also when idle: prefer --stall-critical)", "duration"},
	{monitor.ConsumerMonitorMetaRedeliveryCritical, "redelivery-critical", "redelivery", "natscli: critical from this many redelivered messages", "int"},
	{monitor.ConsumerMonitorMetaPinned, "pinned", "pinned", "natscli: critical unless every priority group has a pinned client", "bool"},
}

// StreamSettings are natscli's stream thresholds, in the order their
// checks are reported. msgs-warn and msgs-critical are one check (natscli:
// FEWER messages than these), and so are subjects-warn and
// subjects-critical.
var StreamSettings = []MonitorSetting{
	{monitor.StreamMonitorMetaMessagesWarn, "msgs-warn", "msgs", "natscli: warning when the stream holds this many messages or fewer", "int"},
	{monitor.StreamMonitorMetaMessagesCritical, "msgs-critical", "msgs", "natscli: critical when the stream holds this many messages or fewer", "int"},
	{monitor.StreamMonitorMetaSubjectsWarn, "subjects-warn", "subjects", "natscli: warning level of the number of subjects (below critical: from it up; above: from it down)", "int"},
	{monitor.StreamMonitorMetaSubjectsCritical, "subjects-critical", "subjects", "natscli: critical level of the number of subjects", "int"},
	{monitor.StreamMonitorMetaLagCritical, "source-lag-critical", "source-lag", "natscli's stream --lag-critical: critical when a mirror or source is this many messages behind (also: the stream is neither)", "int"},
	{monitor.StreamMonitorMetaSeenCritical, "seen-critical", "source-seen", "natscli: critical when a mirror or source was last seen this long ago (also: the stream is neither)", "duration"},
	{monitor.StreamMonitorMetaMinSources, "min-sources", "min-sources", "natscli: critical with fewer sources", "int"},
	{monitor.StreamMonitorMetaMaxSources, "max-sources", "max-sources", "natscli: critical with more sources", "int"},
	{monitor.StreamMonitorMetaPeerExpect, "peer-expect", "peer-expect", "natscli: critical unless the stream has this many peers, a leader and no replica offline", "int"},
	{monitor.StreamMonitorMetaPeerLagCritical, "peer-lag-critical", "peer-lag", "natscli: critical when a replica is more than this many operations behind", "int"},
	{monitor.StreamMonitorMetaPeerSeenCritical, "peer-seen-critical", "peer-seen", "natscli: critical when a replica was last seen longer ago than this", "duration"},
}

// ValidateMonitor parses natscli settings given as flags (key → value as
// written) the way their metadata is parsed, before anything connects: a
// value that does not parse is an invalid-input error naming the flag.
func ValidateMonitor(settings []MonitorSetting, given map[string]string) error {
	for _, s := range settings {
		v, ok := given[s.Key]
		if !ok {
			continue
		}
		if _, err := parseMonitor(settings, map[string]string{s.Key: v}); err != nil {
			return errkind.New(errkind.Invalid, fmt.Sprintf("invalid --%s %q: %v", s.Flag, v, err))
		}
	}
	return nil
}

// parseMonitor parses meta with jsm.go, for the stream or the consumer
// settings.
func parseMonitor(settings []MonitorSetting, meta map[string]string) (any, error) {
	if isStream(settings) {
		return monitor.ExtractStreamHealthCheckOptions(meta)
	}
	return monitor.ExtractConsumerHealthCheckOptions(meta)
}

func isStream(settings []MonitorSetting) bool {
	return len(settings) > 0 && settings[0].Key == StreamSettings[0].Key
}

// effective is the natscli settings that apply to one stream or consumer:
// its metadata, with each key given as a flag replaced.
type effective struct {
	values map[string]string
	source map[string]string
}

func effectiveMonitor(settings []MonitorSetting, meta, flags map[string]string) effective {
	e := effective{values: map[string]string{}, source: map[string]string{}}
	for _, s := range settings {
		if v, ok := flags[s.Key]; ok {
			e.values[s.Key], e.source[s.Key] = v, SourceFlag
		} else if v, ok := meta[s.Key]; ok {
			e.values[s.Key], e.source[s.Key] = v, SourceMetadata
		}
	}
	return e
}

// Where a threshold came from: the health model's words.
const (
	SourceFlag     = consumer.SourceFlag
	SourceMetadata = consumer.SourceMetadata
	SourceDefault  = consumer.SourceDefault
)

// enabled reads io.nats.monitor.enabled: false skips the item. A value
// that does not parse is a problem, and the item is checked.
func enabled(meta map[string]string) (bool, string) {
	v, ok := meta[MonitorEnabled]
	if !ok {
		return true, ""
	}
	opts, err := monitor.ExtractConsumerHealthCheckOptions(map[string]string{MonitorEnabled: v})
	if err != nil {
		return true, fmt.Sprintf("metadata %s=%q: %v", MonitorEnabled, v, err)
	}
	return opts.Enabled, ""
}

// nopLogger is the api.Logger jsm.go's checks log to: jetctl reports
// their results, not their logs.
type nopLogger struct{}

func (nopLogger) Tracef(string, ...any) {}
func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}

var _ api.Logger = nopLogger{}

// resultStatus is the status of one jsm.go check result, and its message.
func resultStatus(r *monitor.Result) (Status, string) {
	switch {
	case len(r.Criticals) > 0:
		return Critical, strings.Join(r.Criticals, "; ")
	case len(r.Warnings) > 0:
		return Warning, strings.Join(r.Warnings, "; ")
	}
	return OK, strings.Join(r.OKs, "; ")
}

// monitorGroups are the checks of settings, each with its keys, in order.
func monitorGroups(settings []MonitorSetting) (names []string, keys map[string][]string) {
	keys = map[string][]string{}
	for _, s := range settings {
		if _, ok := keys[s.Check]; !ok {
			names = append(names, s.Check)
		}
		keys[s.Check] = append(keys[s.Check], s.Key)
	}
	return names, keys
}

// setting finds a setting by key.
func setting(settings []MonitorSetting, key string) MonitorSetting {
	i := slices.IndexFunc(settings, func(s MonitorSetting) bool { return s.Key == key })
	return settings[i]
}

// natscliChecks judges each check whose settings apply, on info converted
// to jsm.go's type (the same JSON), with only that check's settings, so
// that each result is that threshold's alone. judge runs jsm.go's check;
// value gives the figure the check looks at.
func natscliChecks(settings []MonitorSetting, e effective, judge func(meta map[string]string, r *monitor.Result) error,
	value func(check string) (*float64, string)) []Check {
	var out []Check
	names, keys := monitorGroups(settings)
	for _, name := range names {
		meta := map[string]string{}
		c := Check{Name: name, By: "natscli"}
		for _, key := range keys[name] {
			v, ok := e.values[key]
			if !ok {
				continue
			}
			meta[key] = v
			s := setting(settings, key)
			lvl := &c.Critical
			src := &c.CriticalSource
			set := &c.CriticalSetting
			if strings.HasSuffix(key, "-warn") {
				lvl, src, set = &c.Warning, &c.WarningSource, &c.WarningSetting
			}
			*src = e.source[key]
			*set = key
			if e.source[key] == SourceFlag {
				*set = "--" + s.Flag
			}
			if f, ok := monitorLevel(v); ok {
				*lvl = &f
			}
		}
		if len(meta) == 0 {
			continue
		}
		c.Value, c.Unit = value(name)
		var bad []string
		for key, v := range meta {
			if _, err := parseMonitor(settings, map[string]string{key: v}); err != nil {
				bad = append(bad, fmt.Sprintf("%s %s=%q: %v", e.source[key], key, v, err))
			}
		}
		if len(bad) > 0 {
			slices.Sort(bad)
			c.Status, c.Message = Unknown, strings.Join(bad, "; ")
			out = append(out, c)
			continue
		}
		r := &monitor.Result{}
		if err := judge(meta, r); err != nil {
			c.Status, c.Message = Unknown, err.Error()
		} else {
			c.Status, c.Message = resultStatus(r)
		}
		out = append(out, c)
	}
	return out
}

// monitorLevel is a setting's value as a number for the report: counts as
// they are, durations in seconds; false when it is neither (pinned).
func monitorLevel(v string) (float64, bool) {
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
		return f, true
	}
	if d, err := jsm.ParseDuration(v); err == nil {
		return d.Seconds(), true
	}
	return 0, false
}

// asJSM converts a nats.go type to jsm.go's through JSON: both are the
// server's wire format.
func asJSM[T any](v any) (*T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// consumerNatscli judges natscli's consumer thresholds on info.
func consumerNatscli(info *jetstream.ConsumerInfo, e effective) []Check {
	if len(e.values) == 0 || info == nil {
		return nil
	}
	var converted *api.ConsumerInfo
	judge := func(meta map[string]string, r *monitor.Result) error {
		opts, err := monitor.ExtractConsumerHealthCheckOptions(meta)
		if err != nil {
			return err
		}
		if converted == nil {
			if converted, err = asJSM[api.ConsumerInfo](info); err != nil {
				return fmt.Errorf("reading the consumer info: %w", err)
			}
		}
		monitor.CheckConsumerInfoHealth(converted, r, *opts, nopLogger{})
		return nil
	}
	value := func(check string) (*float64, string) {
		f := func(v float64) *float64 { return &v }
		switch check {
		case "outstanding-ack":
			return f(float64(info.NumAckPending)), "messages"
		case "waiting":
			return f(float64(info.NumWaiting)), "pulls"
		case "unprocessed":
			return f(float64(info.NumPending)), "messages"
		case "redelivery":
			return f(float64(info.NumRedelivered)), "messages"
		case "last-delivery":
			if info.Delivered.Last != nil {
				return f(time.Since(*info.Delivered.Last).Seconds()), "seconds"
			}
			return nil, "seconds"
		case "last-ack":
			if info.AckFloor.Last != nil {
				return f(time.Since(*info.AckFloor.Last).Seconds()), "seconds"
			}
			return nil, "seconds"
		}
		return nil, ""
	}
	return natscliChecks(ConsumerSettings, e, judge, value)
}

// streamNatscli judges natscli's stream thresholds on info. natscli
// judges a replica's lag and last seen only together with the expected
// number of peers; without io.nats.monitor.peer-expect jetctl expects the
// stream's configured replicas.
func streamNatscli(info *jetstream.StreamInfo, e effective) []Check {
	if len(e.values) == 0 || info == nil {
		return nil
	}
	var converted *api.StreamInfo
	judge := func(meta map[string]string, r *monitor.Result) error {
		opts, err := monitor.ExtractStreamHealthCheckOptions(meta)
		if err != nil {
			return err
		}
		if opts.ClusterLagCritical > 0 || opts.ClusterSeenCritical > 0 {
			opts.ClusterExpectedPeers = info.Config.Replicas
			if v, ok := e.values[monitor.StreamMonitorMetaPeerExpect]; ok {
				if expect, err := monitor.ExtractStreamHealthCheckOptions(map[string]string{monitor.StreamMonitorMetaPeerExpect: v}); err == nil {
					opts.ClusterExpectedPeers = expect.ClusterExpectedPeers
				}
			}
		}
		if converted == nil {
			if converted, err = asJSM[api.StreamInfo](info); err != nil {
				return fmt.Errorf("reading the stream info: %w", err)
			}
		}
		monitor.CheckStreamInfoHealth(converted, r, *opts, nopLogger{})
		return nil
	}
	value := func(check string) (*float64, string) {
		f := func(v float64) *float64 { return &v }
		sources := info.Sources
		if info.Mirror != nil {
			sources = append([]*jetstream.StreamSourceInfo{info.Mirror}, sources...)
		}
		switch check {
		case "msgs":
			return f(float64(info.State.Msgs)), "messages"
		case "subjects":
			return f(float64(info.State.NumSubjects)), "subjects"
		case "min-sources", "max-sources":
			return f(float64(len(info.Sources))), "sources"
		case "source-lag", "source-seen":
			if len(sources) == 0 {
				return nil, map[bool]string{true: "messages", false: "seconds"}[check == "source-lag"]
			}
			worst := 0.0
			for _, s := range sources {
				if check == "source-lag" {
					worst = max(worst, float64(s.Lag))
				} else {
					worst = max(worst, s.Active.Seconds())
				}
			}
			return f(worst), map[bool]string{true: "messages", false: "seconds"}[check == "source-lag"]
		case "peer-expect":
			if info.Cluster == nil {
				return f(0), "peers"
			}
			n := len(info.Cluster.Replicas)
			if info.Cluster.Leader != "" {
				n++
			}
			return f(float64(n)), "peers"
		case "peer-lag", "peer-seen":
			worst := 0.0
			if info.Cluster != nil {
				for _, p := range info.Cluster.Replicas {
					if check == "peer-lag" {
						worst = max(worst, float64(p.Lag))
					} else {
						worst = max(worst, p.Active.Seconds())
					}
				}
			}
			return f(worst), map[bool]string{true: "operations", false: "seconds"}[check == "peer-lag"]
		}
		return nil, ""
	}
	return natscliChecks(StreamSettings, e, judge, value)
}
