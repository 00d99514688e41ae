package jsapi

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LevelFeature is a setting that only a server of a JetStream API level
// or above honours. A server reports its level in the account info
// ($JS.API.INFO's api.level; 0 before 2.11) and stores the level each
// config needs in its _nats.req.level metadata. An older server refuses
// a field it does not know (strict JSON, the default from 2.11), or
// drops it without a word (strict mode off, servers before 2.11):
// either way the config is not what was asked for.
type LevelFeature[C any] struct {
	// Field is the config field, as plan files and the server name it.
	Field string
	// Value is the value of Field that needs the level ("async" for
	// persist_mode); "" when any value but the default does.
	Value string
	// Level is the API level the feature needs.
	Level int
	// Uses reports whether a config uses the feature.
	Uses func(*C) bool
}

// String names the feature as a plan file writes it: "allow_batched",
// "persist_mode async".
func (f LevelFeature[C]) String() string {
	if f.Value == "" {
		return f.Field
	}
	return f.Field + " " + f.Value
}

// The features that need an API level, for streams, consumers and KV
// buckets: the one list of them in jetctl, as nats-server 2.15
// computes _nats.req.level (server/jetstream_versioning.go,
// setStaticStreamMetadata and setStaticConsumerMetadata), each level
// pinned by TestFactRequiredAPILevel.
var (
	StreamLevelFeatures = []LevelFeature[jetstream.StreamConfig]{
		{Field: "allow_msg_ttl", Level: 1, Uses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgTTL }},
		{Field: "subject_delete_marker_ttl", Level: 1, Uses: func(c *jetstream.StreamConfig) bool { return c.SubjectDeleteMarkerTTL > 0 }},
		{Field: "allow_msg_counter", Level: 2, Uses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgCounter }},
		{Field: "allow_atomic", Level: 2, Uses: func(c *jetstream.StreamConfig) bool { return c.AllowAtomicPublish }},
		{Field: "allow_msg_schedules", Level: 2, Uses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgSchedules }},
		{Field: "persist_mode", Value: "async", Level: 2, Uses: func(c *jetstream.StreamConfig) bool { return c.PersistMode == jetstream.AsyncPersistMode }},
		{Field: "allow_batched", Level: 4, Uses: func(c *jetstream.StreamConfig) bool { return c.AllowBatchPublish }},
	}
	ConsumerLevelFeatures = []LevelFeature[jetstream.ConsumerConfig]{
		{Field: "pause_until", Level: 1, Uses: func(c *jetstream.ConsumerConfig) bool { return c.PauseUntil != nil && !c.PauseUntil.IsZero() }},
		{Field: "priority_policy", Level: 1, Uses: func(c *jetstream.ConsumerConfig) bool { return c.PriorityPolicy != jetstream.PriorityPolicyNone }},
		{Field: "priority_groups", Level: 1, Uses: func(c *jetstream.ConsumerConfig) bool { return len(c.PriorityGroups) > 0 }},
		{Field: "priority_timeout", Level: 1, Uses: func(c *jetstream.ConsumerConfig) bool { return c.PinnedTTL != 0 }},
		{Field: "ack_policy", Value: "flow_control", Level: 4, Uses: func(c *jetstream.ConsumerConfig) bool { return c.AckPolicy == jetstream.AckFlowControlPolicy }},
	}
	// KVLevelFeatures are a bucket's settings that become its stream's
	// features above (limit_marker_ttl is subject_delete_marker_ttl).
	KVLevelFeatures = []LevelFeature[jetstream.KeyValueConfig]{
		{Field: "limit_marker_ttl", Level: 1, Uses: func(c *jetstream.KeyValueConfig) bool { return c.LimitMarkerTTL > time.Duration(0) }},
	}
)

// AboveLevel lists the features cfg uses that a server of API level
// have cannot honour, in the order of features.
func AboveLevel[C any](features []LevelFeature[C], cfg *C, have int) []LevelFeature[C] {
	var out []LevelFeature[C]
	for _, f := range features {
		if f.Level > have && f.Uses(cfg) {
			out = append(out, f)
		}
	}
	return out
}

// RequiredLevel is the API level cfg needs: the highest of the features
// it uses, 0 for none (what the server stores as _nats.req.level).
func RequiredLevel[C any](features []LevelFeature[C], cfg *C) int {
	level := 0
	for _, f := range features {
		if f.Uses(cfg) {
			level = max(level, f.Level)
		}
	}
	return level
}
