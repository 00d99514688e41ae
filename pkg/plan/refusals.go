package plan

import (
	"regexp"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// refusal is one of the server's rules for a config on its own: what it
// refuses when a stream or consumer is created or updated, and the
// error code of its answer. The loader checks every one, so that plan,
// apply and lint report them with the file's position before anything
// is contacted, instead of apply meeting them one at a time. Each code
// is pinned by TestFactServerRefusals against the embedded server.
type refusal[C any] struct {
	// Path is the field the problem is reported at.
	Path string
	// Code is the server's error code for it (nats-server 2.15.2:
	// server/stream.go checkStreamCfg, server/consumer.go
	// checkConsumerCfg).
	Code int
	// Refuses reports whether the server refuses cfg for this rule.
	Refuses func(cfg *C) bool
	// Message says what the server refuses, after the resource's label.
	Message string
}

// streamRefusals are the server's rules for a stream's settings, in the
// order of its checks.
var streamRefusals = []refusal[jetstream.StreamConfig]{
	{Path: "max_age", Code: 10052, Message: "max_age: at least 100ms",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.MaxAge > 0 && c.MaxAge < minWindow }},
	{Path: "duplicate_window", Code: 10052, Message: "duplicate_window: at least 100ms",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Duplicates > 0 && c.Duplicates < minWindow }},
	{Path: "allow_rollup_hdrs", Code: 10052, Message: "allow_rollup_hdrs needs purges: it cannot be combined with deny_purge",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.DenyPurge && c.AllowRollup }},
	{Path: "allow_msg_counter", Code: 10052, Message: "allow_msg_counter cannot be combined with discard: new (a counter must take every increment)",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgCounter && c.Discard == jetstream.DiscardNew }},
	{Path: "allow_msg_counter", Code: 10052, Message: "allow_msg_counter cannot be combined with allow_msg_ttl",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgCounter && c.AllowMsgTTL }},
	{Path: "allow_msg_counter", Code: 10052, Message: "allow_msg_counter cannot be combined with allow_msg_schedules",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgCounter && c.AllowMsgSchedules }},
	{Path: "allow_msg_counter", Code: 10052, Message: "allow_msg_counter needs retention: limits",
		Refuses: func(c *jetstream.StreamConfig) bool {
			return c.AllowMsgCounter && c.Retention != jetstream.LimitsPolicy
		}},
	{Path: "discard_new_per_subject", Code: 10052, Message: "discard_new_per_subject needs discard: new and max_msgs_per_subject > 0",
		Refuses: func(c *jetstream.StreamConfig) bool {
			return c.DiscardNewPerSubject && (c.Discard != jetstream.DiscardNew || c.MaxMsgsPerSubject <= 0)
		}},
	{Path: "subject_delete_marker_ttl", Code: 10052, Message: "subject_delete_marker_ttl: at least 1s",
		Refuses: func(c *jetstream.StreamConfig) bool {
			return c.SubjectDeleteMarkerTTL > 0 && c.SubjectDeleteMarkerTTL < minMarkerTTL
		}},
	{Path: "allow_msg_schedules", Code: 10052, Message: "allow_msg_schedules cannot be combined with discard: new",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.AllowMsgSchedules && c.Discard == jetstream.DiscardNew }},
	{Path: "persist_mode", Code: 10052, Message: "persist_mode async needs storage: file",
		Refuses: func(c *jetstream.StreamConfig) bool {
			return c.PersistMode == jetstream.AsyncPersistMode && c.Storage != jetstream.FileStorage
		}},
	{Path: "persist_mode", Code: 10052, Message: "persist_mode async needs num_replicas: 1",
		Refuses: func(c *jetstream.StreamConfig) bool {
			return c.PersistMode == jetstream.AsyncPersistMode && c.Replicas > 1
		}},
	{Path: "persist_mode", Code: 10052, Message: "persist_mode async cannot be combined with allow_atomic",
		Refuses: func(c *jetstream.StreamConfig) bool {
			return c.PersistMode == jetstream.AsyncPersistMode && c.AllowAtomicPublish
		}},
	{Path: "first_seq", Code: 10143, Message: "a mirror cannot have first_seq",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && c.FirstSeq > 0 }},
	{Path: "subjects", Code: 10034, Message: "a mirror cannot have subjects",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && len(c.Subjects) > 0 }},
	{Path: "sources", Code: 10031, Message: "a mirror cannot have sources",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && len(c.Sources) > 0 }},
	{Path: "allow_msg_counter", Code: 10173, Message: "a mirror cannot have allow_msg_counter",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && c.AllowMsgCounter }},
	{Path: "allow_atomic", Code: 10198, Message: "a mirror cannot have allow_atomic",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && c.AllowAtomicPublish }},
	{Path: "allow_batched", Code: 10209, Message: "a mirror cannot have allow_batched",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && c.AllowBatchPublish }},
	{Path: "allow_msg_schedules", Code: 10186, Message: "a mirror cannot have allow_msg_schedules",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && c.AllowMsgSchedules }},
	{Path: "subject_delete_marker_ttl", Code: 10052, Message: "a mirror cannot have subject_delete_marker_ttl (its markers would take sequences the origin does not have)",
		Refuses: func(c *jetstream.StreamConfig) bool { return c.Mirror != nil && c.SubjectDeleteMarkerTTL > 0 }},
	{Path: "allow_msg_schedules", Code: 10187, Message: "a stream with sources cannot have allow_msg_schedules",
		Refuses: func(c *jetstream.StreamConfig) bool { return len(c.Sources) > 0 && c.AllowMsgSchedules }},
}

// minMarkerTTL is the shortest subject_delete_marker_ttl the server
// takes, minWindow the shortest max_age and duplicate_window.
const (
	minMarkerTTL = time.Second
	minWindow    = 100 * time.Millisecond
)

// priorityGroupName is the server's pattern for a priority group's name.
var priorityGroupName = regexp.MustCompile(`^[a-zA-Z0-9/_=-]{1,16}$`)

// consumerRefusals are the server's rules for a consumer's settings of
// its own (those of its stream are consumerRules'), in the order of its
// checks.
var consumerRefusals = []refusal[jetstream.ConsumerConfig]{
	{Path: "ack_policy", Code: 10218, Message: "ack_policy flow_control needs a push consumer (deliver_subject)",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.AckPolicy == jetstream.AckFlowControlPolicy && c.DeliverSubject == ""
		}},
	{Path: "ack_policy", Code: 10221, Message: "ack_policy flow_control cannot be combined with ack_wait or backoff",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.AckPolicy == jetstream.AckFlowControlPolicy && (c.AckWait != 0 || len(c.BackOff) > 0)
		}},
	{Path: "ack_policy", Code: 10222, Message: "ack_policy flow_control cannot be combined with max_deliver",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.AckPolicy == jetstream.AckFlowControlPolicy && c.MaxDeliver > 0
		}},
	{Path: "priority_policy", Code: 10178, Message: "priority_policy needs a pull consumer: priority groups cannot be used with deliver_subject",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.PriorityPolicy != jetstream.PriorityPolicyNone && c.DeliverSubject != ""
		}},
	{Path: "priority_policy", Code: 10159, Message: "priority_policy needs priority_groups (at least one group)",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.PriorityPolicy != jetstream.PriorityPolicyNone && c.DeliverSubject == "" && len(c.PriorityGroups) == 0
		}},
	{Path: "priority_groups", Code: 10161, Message: "priority_groups: a group name cannot be empty",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.PriorityPolicy != jetstream.PriorityPolicyNone && slices.Contains(c.PriorityGroups, "")
		}},
	{Path: "priority_groups", Code: 10162, Message: "priority_groups: a group name is 1 to 16 of A-Z, a-z, 0-9, -, _, / and =",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.PriorityPolicy != jetstream.PriorityPolicyNone && slices.ContainsFunc(c.PriorityGroups, func(g string) bool {
				return g != "" && !priorityGroupName.MatchString(g)
			})
		}},
	{Path: "priority_groups", Code: 10196, Message: "priority_groups needs a priority_policy (overflow, pinned_client or prioritized)",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.PriorityPolicy == jetstream.PriorityPolicyNone && len(c.PriorityGroups) > 0
		}},
	{Path: "priority_timeout", Code: 10197, Message: "priority_timeout needs a priority_policy (it is pinned_client's)",
		Refuses: func(c *jetstream.ConsumerConfig) bool {
			return c.PriorityPolicy == jetstream.PriorityPolicyNone && c.PinnedTTL > 0
		}},
}

// refusedBy lists the rules that refuse cfg.
func refusedBy[C any](rules []refusal[C], cfg *C) []refusal[C] {
	var out []refusal[C]
	for _, r := range rules {
		if r.Refuses(cfg) {
			out = append(out, r)
		}
	}
	return out
}
