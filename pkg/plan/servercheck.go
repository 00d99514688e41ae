package plan

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/units"
)

// maxReplicas is the most replicas the server keeps of anything
// (nats-server's StreamMaxReplicas).
const maxReplicas = 5

// ServerLimits is what planning knows of the server's limits before
// changing anything: there is no server-side dry run, so whatever the
// server would refuse and can be known ahead is checked against these.
type ServerLimits struct {
	// Clustered is false for a single server, which keeps one replica only.
	Clustered bool
	// Cluster is the name of the cluster the client is connected to.
	Cluster string
	// Servers is how many servers the client knows in that cluster (the
	// URLs it was given and those the cluster advertised); 0 when it knows
	// only one, which may be all there is or a cluster that does not
	// advertise.
	Servers int
	// MaxPayload is the server's max_payload.
	MaxPayload int64
	// MaxAckPending is the account's limit on a consumer's max_ack_pending
	// (0: none).
	MaxAckPending int
	// APILevel is the server's JetStream API level (0 before 2.11): a
	// field that needs a higher one (jsapi.StreamLevelFeatures) is one
	// the server cannot honour.
	APILevel int
}

// FetchServerLimits reads ServerLimits from the connection's server info
// and the account info ($JS.API.INFO, one request: its limits and its
// api.level).
func FetchServerLimits(ctx context.Context, js jetstream.JetStream) (ServerLimits, error) {
	lim := ServerLimits{}
	if nc := js.Conn(); nc != nil {
		lim.Cluster = nc.ConnectedClusterName()
		lim.Clustered = lim.Cluster != ""
		lim.MaxPayload = nc.MaxPayload()
		if n := len(nc.Servers()); n > 1 {
			lim.Servers = n
		}
	}
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		return lim, fmt.Errorf("reading the account's JetStream limits: %w", err)
	}
	lim.MaxAckPending = ai.Limits.MaxAckPending
	lim.APILevel = ai.API.Level
	return lim, nil
}

// RefusedError lists what the server would refuse, found before anything
// was changed.
type RefusedError struct {
	Problems []Problem
}

func (e *RefusedError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].String()
	}
	return fmt.Sprintf("%s (and %d more problems)", e.Problems[0], len(e.Problems)-1)
}

// CheckServer reports, before anything is changed, what in p the server
// would refuse: fields above the server's API level, more replicas than
// a single server or the cluster has,
// consumers that break the rules of their stream's retention or replicas,
// filters on a workqueue stream that overlap a consumer that stays on the
// server, a max_ack_pending above the account's limit. It adds warnings
// for what the server accepts but cannot work (max_msg_size above
// max_payload).
func CheckServer(p *Plan, live *Live, lim ServerLimits) []Problem {
	var problems []Problem
	add := func(r *Resource, path, format string, args ...any) {
		problems = append(problems, Problem{Pos: r.at(path), Message: r.Label() + ": " + fmt.Sprintf(format, args...)})
	}
	declaredStreams := map[string]*Resource{}
	byStream := map[string]*ResourcePlan{}
	for _, rp := range p.Resources {
		if rp.Kind != KindConsumer {
			byStream[streamNameOf(rp.Kind, "", rp.Name)] = rp
			if rp.res != nil {
				declaredStreams[rp.res.StreamName()] = rp.res
			}
		}
	}
	for _, rp := range p.Resources {
		r := rp.res
		if r != nil && r.Kind != KindConsumer && rp.Action != ActionMigrate {
			if temp, ok := interrupted(live, r.StreamName()); ok {
				add(r, "", "stream %q, left by an interrupted migration, holds its data: finish the migration with jetctl apply --migrate first", temp)
			}
		}
		if r == nil || rp.Action == ActionNone || rp.Action == ActionDelete {
			continue
		}
		for _, fp := range levelProblems(r, lim.APILevel) {
			add(r, fp.path, "%s", fp.msg)
		}
		if r.Kind != KindConsumer {
			replicas, placement := r.replicasAndPlacement()
			if msg := replicasProblem(replicas, placement, lim); msg != "" {
				add(r, "num_replicas", "%s", msg)
			}
			if size, field := maxMessageSize(r); lim.MaxPayload > 0 && size > lim.MaxPayload {
				rp.Warnings = append(rp.Warnings, fmt.Sprintf("%s %s is above the server's max_payload %s: the server refuses larger messages anyway",
					field, units.FormatSize(size), units.FormatSize(lim.MaxPayload)))
			}
			if rp.Action == ActionMigrate && r.Kind == KindStream {
				for _, msg := range migratedConsumerProblems(r.StreamConfig, p, live) {
					add(r, "retention", "%s", msg)
				}
			}
			continue
		}
		if ci := live.Consumers[r.Stream][r.Name]; ci != nil {
			if target, mirror := jsapi.ReplicationTarget(ci.Config.Metadata); target != "" {
				add(r, "", "the server's own consumer, through which stream %s %s %q: jetctl leaves it to the server (remove it from the plan files)", target, copyVerb(mirror), r.Stream)
				continue
			}
		}
		stream := effectiveStream(r.Stream, declaredStreams, live)
		if stream == nil {
			continue
		}
		for _, fp := range consumerRules(stream, r.ConsumerConfig) {
			problems = append(problems, Problem{Pos: r.at(fp.path), Message: r.Label() + ": " + fp.msg, Rule: fp.rule})
		}
		if lim.MaxAckPending > 0 && r.ConsumerConfig.MaxAckPending > lim.MaxAckPending {
			add(r, "max_ack_pending", "max_ack_pending: %d is above the account's limit of %d", r.ConsumerConfig.MaxAckPending, lim.MaxAckPending)
		}
		if stream.Retention == jetstream.WorkQueuePolicy {
			for _, other := range stayingConsumers(r.Stream, p, byStream[r.Stream], live) {
				if other.Name == r.Name {
					continue
				}
				if mine, theirs, ok := overlappingFilters(r.ConsumerConfig, &other.Config); ok {
					add(r, filterPath(r), "filter %q overlaps %q of consumer %q, which stays on the server: workqueue stream %q allows one consumer per subject",
						mine, theirs, other.Name, r.Stream)
				}
			}
		}
	}
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i].Pos, problems[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return problems
}

// levelProblems are the fields of r that a server of API level have
// cannot honour.
func levelProblems(r *Resource, have int) []fieldProblem {
	var out []fieldProblem
	add := func(feature fmt.Stringer, field string, level int) {
		out = append(out, fieldProblem{path: field, msg: fmt.Sprintf("%s needs API level %d; the server has %d", feature, level, have)})
	}
	switch r.Kind {
	case KindStream:
		for _, f := range jsapi.AboveLevel(jsapi.StreamLevelFeatures, r.StreamConfig, have) {
			add(f, f.Field, f.Level)
		}
	case KindConsumer:
		for _, f := range jsapi.AboveLevel(jsapi.ConsumerLevelFeatures, r.ConsumerConfig, have) {
			add(f, f.Field, f.Level)
		}
	case KindKV:
		for _, f := range jsapi.AboveLevel(jsapi.KVLevelFeatures, r.KeyValueConfig, have) {
			add(f, f.Field, f.Level)
		}
	}
	return out
}

// FieldProblem is what the server would refuse in one field of a
// resource.
type FieldProblem struct {
	// Path is the field (a Resource FieldPos key).
	Path string
	// Message says what, without the resource's label.
	Message string
}

// LevelProblems are the fields of r that a server of API level have
// cannot honour: the check planning makes, for lint.
func LevelProblems(r *Resource, have int) []FieldProblem {
	var out []FieldProblem
	for _, fp := range levelProblems(r, have) {
		out = append(out, FieldProblem{Path: fp.path, Message: fp.msg})
	}
	return out
}

// replicasProblem says why the server would refuse replicas, or "".
func replicasProblem(replicas int, placement *jetstream.Placement, lim ServerLimits) string {
	switch {
	case replicas > maxReplicas:
		return fmt.Sprintf("num_replicas: %d, but the server keeps at most %d", replicas, maxReplicas)
	case replicas > 1 && !lim.Clustered:
		return fmt.Sprintf("num_replicas: %d, but the server is not clustered: a single server keeps 1 replica", replicas)
	case replicas > lim.Servers && lim.Servers > 0 && (placement == nil || placement.Cluster == "" || placement.Cluster == lim.Cluster):
		return fmt.Sprintf("num_replicas: %d, but cluster %q has %d servers", replicas, lim.Cluster, lim.Servers)
	}
	return ""
}

// maxMessageSize is the declared largest message size and its field.
func maxMessageSize(r *Resource) (int64, string) {
	switch r.Kind {
	case KindStream:
		return int64(r.StreamConfig.MaxMsgSize), "max_msg_size"
	case KindKV:
		return int64(r.KeyValueConfig.MaxValueSize), "max_value_size"
	}
	return 0, ""
}

// effectiveStream is the config a consumer's stream will have when the
// consumer is created: the declared one, or the live one.
func effectiveStream(name string, declared map[string]*Resource, live *Live) *jetstream.StreamConfig {
	if r := declared[name]; r != nil && r.Kind == KindStream {
		return r.StreamConfig
	}
	if si := live.Streams[name]; si != nil {
		return &si.Config
	}
	return nil
}

// stayingConsumers are the live consumers of a stream that apply leaves in
// place and does not redeclare: none when the stream is created or
// replaced, only those a migration re-seats, and not those the plan
// deletes. A mirror's or a sourcing stream's consumer is not one: the
// server leaves it out of a workqueue stream's one-consumer-per-subject
// rule (TestFactWorkqueueIgnoresReplicationConsumers).
func stayingConsumers(stream string, p *Plan, streamPlan *ResourcePlan, live *Live) []*jetstream.ConsumerInfo {
	if streamPlan != nil && (streamPlan.Action == ActionCreate || streamPlan.Action == ActionReplace || streamPlan.Action == ActionDelete) {
		return nil
	}
	planned := map[string]bool{}
	for _, rp := range p.Resources {
		if rp.Kind == KindConsumer && rp.Stream == stream {
			planned[rp.Name] = true
		}
	}
	var out []*jetstream.ConsumerInfo
	names := make([]string, 0, len(live.Consumers[stream]))
	for name := range live.Consumers[stream] {
		names = append(names, name)
	}
	sort.Strings(names)
	migrated := streamPlan != nil && streamPlan.Action == ActionMigrate
	for _, name := range names {
		ci := live.Consumers[stream][name]
		// A migration leaves behind the consumers it does not re-seat.
		if !planned[name] && !jsapi.ReplicationConsumer(ci.Config.Metadata) && (!migrated || migratesConsumer(&ci.Config)) {
			out = append(out, ci)
		}
	}
	return out
}

func filterPath(r *Resource) string {
	if len(r.ConsumerConfig.FilterSubjects) > 0 {
		return "filter_subjects"
	}
	return "filter_subject"
}

// fieldProblem is a problem with one field of a resource; rule is the
// lint rule of the same mistake, if any (Problem.Rule).
type fieldProblem struct {
	path, msg string
	rule      string
}

// consumerRules are the server's rules for a consumer of a stream with
// that config, as nats-server checks them when the consumer is created.
func consumerRules(stream *jetstream.StreamConfig, c *jetstream.ConsumerConfig) []fieldProblem {
	var out []fieldProblem
	streamReplicas := max(stream.Replicas, 1)
	switch {
	case c.Replicas > streamReplicas:
		out = append(out, fieldProblem{path: "num_replicas", msg: fmt.Sprintf("num_replicas: %d is more than its stream's %d", c.Replicas, streamReplicas)})
	case stream.Retention != jetstream.LimitsPolicy && c.Replicas != 0 && c.Replicas != streamReplicas:
		out = append(out, fieldProblem{path: "num_replicas", msg: fmt.Sprintf("num_replicas: %d, but a consumer of %s stream %q has the stream's replicas (%d)", c.Replicas, EnumName(stream.Retention), stream.Name, streamReplicas)})
	}
	if stream.Retention == jetstream.WorkQueuePolicy {
		if c.AckPolicy != jetstream.AckExplicitPolicy && c.AckPolicy != jetstream.AckFlowControlPolicy {
			out = append(out, fieldProblem{path: "ack_policy", msg: fmt.Sprintf("ack_policy: %s, but a consumer of workqueue stream %q must use ack_policy explicit (the stream removes a message when it is acked)", EnumName(c.AckPolicy), stream.Name), rule: "workqueue-ack-none"})
		}
		if c.DeliverPolicy != jetstream.DeliverAllPolicy {
			out = append(out, fieldProblem{path: "deliver_policy", msg: fmt.Sprintf("deliver_policy: %s, but a consumer of workqueue stream %q must use deliver_policy all", EnumName(c.DeliverPolicy), stream.Name)})
		}
	}
	return out
}

// EnumName is an enum value as plan files and the server write it
// (ack_policy explicit, retention workqueue).
func EnumName[T ~int](v T) string {
	if names := enumValues[reflect.TypeOf(v)]; int(v) >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprint(int(v))
}

// migratedConsumerProblems are the consumers a migration would recreate
// on the new stream (every live one the plan neither deletes nor
// replaces: the engine recreates them as they are, and the plan's own
// changes come after) that the server would refuse there.
func migratedConsumerProblems(target *jetstream.StreamConfig, p *Plan, live *Live) []string {
	gone := map[string]bool{}
	for _, rp := range p.Resources {
		if rp.Kind == KindConsumer && rp.Stream == target.Name && (rp.Action == ActionDelete || rp.Action == ActionReplace) {
			gone[rp.Name] = true
		}
	}
	names := make([]string, 0, len(live.Consumers[target.Name]))
	for name, ci := range live.Consumers[target.Name] {
		if !gone[name] && migratesConsumer(&ci.Config) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []string
	for i, name := range names {
		ci := live.Consumers[target.Name][name]
		for _, fp := range consumerRules(target, &ci.Config) {
			out = append(out, fmt.Sprintf("consumer %q, which the migration recreates as it is on the server: %s", name, fp.msg))
		}
		if target.Retention != jetstream.WorkQueuePolicy {
			continue
		}
		for _, other := range names[i+1:] {
			if mine, theirs, ok := overlappingFilters(&ci.Config, &live.Consumers[target.Name][other].Config); ok {
				out = append(out, fmt.Sprintf("consumers %q and %q, which the migration recreates as they are on the server: filter %q overlaps %q, but workqueue stream %q allows one consumer per subject",
					name, other, mine, theirs, target.Name))
			}
		}
	}
	return out
}

// ReplicasProblem says why the server would refuse the replicas of a
// stream, bucket or object store (""; also for a consumer): the check
// planning makes, for lint.
func (lim ServerLimits) ReplicasProblem(r *Resource) string {
	if r.Kind == KindConsumer {
		return ""
	}
	replicas, placement := r.replicasAndPlacement()
	return replicasProblem(replicas, placement, lim)
}
