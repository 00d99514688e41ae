package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/plan"
	"github.com/jetctl/jetctl/pkg/units"
)

// Sources the rules cite.
const (
	seedConcepts = "\"NATS JetStream: When Events Need to Survive the Moment\" (seed article: \"MaxDeliver is not a dead-letter queue\", \"Always set a durable_name\")"
	seedStreams  = "\"JetStream: Persistent Messaging with NATS\" (seed article: \"Memory (faster but volatile)\", limits \"removes messages when any configured limit ... is exceeded\")"
	docsStreams  = "https://docs.nats.io/nats-concepts/jetstream/streams"
	docsConsumer = "https://docs.nats.io/nats-concepts/jetstream/consumers"
	docsKV       = "https://docs.nats.io/nats-concepts/jetstream/key-value-store"
)

// rules are every rule, in the order of docs/lint.md. ids are stable:
// never rename one.
var rules = []Rule{
	{
		ID: "max-deliver-unlimited", Severity: Warning,
		Summary: "a consumer with acknowledgements redelivers without limit",
		Why:     "With max_deliver unset (-1) a message that always fails (a poison message) is redelivered forever: it holds a slot of max_ack_pending and retries every ack_wait, and no advisory ever marks it as dead.",
		Fix:     "Set max_deliver (5 is common) and capture the dead letters with `jetctl dlq setup --stream STREAM --consumer CONSUMER`.",
		Source:  seedConcepts,
		check:   checkMaxDeliverUnlimited,
	},
	{
		ID: "dead-letters-uncaptured", Severity: Warning, Live: true,
		Summary: "a consumer's dead letters are captured by nothing",
		Why:     "Past max_deliver the server stops redelivering but keeps the message in the stream and says so only in an advisory, a core NATS message that is gone unless a stream captures it. Nobody will know which messages failed.",
		Fix:     "Run `jetctl dlq setup --stream STREAM --consumer CONSUMER` (the command the finding names): it captures the consumer's advisories, and `jetctl dlq sweep --stream STREAM` moves the dead letters to a dead-letter stream.",
		Source:  seedConcepts,
		check:   checkDeadLettersUncaptured,
	},
	{
		ID: "dead-letters-unchecked", Severity: Info, Offline: true,
		Summary: "whether a consumer's dead letters are captured can only be checked live",
		Why:     "A bounded max_deliver makes dead letters; only the server knows whether a DLQ capture covers them.",
		Fix:     "Run `jetctl lint --live` (with or without -f) against the server, or `jetctl dlq setup --stream STREAM --consumer CONSUMER`.",
		Source:  seedConcepts,
		check:   checkDeadLettersUnchecked,
	},
	{
		ID: "backoff-overrides-ack-wait", Severity: Warning,
		Summary: "backoff and ack_wait are both set: backoff decides",
		Why:     "When backoff is set the server replaces ack_wait by backoff[0] and waits backoff[n] after the (n+1)-th delivery (the last value after every later one): the ack_wait written is never used. Handlers tuned to it see redeliveries (and duplicate side effects) sooner than planned.",
		Fix:     "Remove ack_wait and make backoff[0] the time a handler may take, or remove backoff.",
		Source:  "https://github.com/nats-io/nats.docs/issues/828, https://github.com/kannon-email/kannon/issues/427",
		check:   checkBackoffAckWait,
	},
	{
		ID: "backoff-exceeds-max-deliver", Severity: Error,
		Summary: "backoff has more values than max_deliver allows deliveries",
		Why:     "The server refuses a consumer with more backoff values than max_deliver (error 10116): the apply fails.",
		Fix:     "Give max_deliver at least as many deliveries as backoff has values, or shorten backoff.",
		Source:  docsConsumer,
		check:   checkBackoffMaxDeliver,
	},
	{
		ID: "stream-unbounded", Severity: Warning,
		Summary: "a limits stream has no max_age, max_bytes or max_msgs",
		Why:     "A limits stream removes messages only when a limit is reached. With none it grows until the server's disk or account limit is full, and then every publish to every stream there fails.",
		Fix:     "Set max_age (how long anyone needs the messages), max_bytes, or both.",
		Source:  seedStreams,
		check:   checkStreamUnbounded,
	},
	{
		ID: "memory-single-replica", Severity: Warning,
		Summary: "memory storage with one replica",
		Why:     "Memory storage is lost when its server restarts; with one replica there is no other copy, so a restart or an upgrade empties the stream.",
		Fix:     "Use storage: file, or num_replicas: 3 on a cluster.",
		Source:  seedStreams,
		check:   checkMemorySingleReplica,
	},
	{
		ID: "replicas-even", Severity: Warning,
		Summary: "an even number of replicas",
		Why:     "Replicas need a majority: R2 survives no failure (as R1) and R4 one (as R3), for more writes and disk.",
		Fix:     "Use num_replicas 1, 3 or 5.",
		Source:  docsStreams,
		check:   checkReplicasEven,
	},
	{
		ID: "replicas-single-in-cluster", Severity: Warning, Live: true,
		Summary: "one replica on a clustered server",
		Why:     "On a cluster an R1 stream lives on one server: when that server restarts the stream and its consumers are unavailable until it is back (a 27-minute outage in SocialGouv/iterion#592).",
		Fix:     "Use num_replicas: 3.",
		Source:  "https://github.com/SocialGouv/iterion/issues/592",
		check:   checkReplicasSingleInCluster,
	},
	{
		ID: "replicas-above-cluster", Severity: Error, Live: true,
		Summary: "more replicas than the cluster has servers",
		Why:     "The server refuses a stream with more replicas than servers in its cluster (error 10005, no suitable peers; a single server refuses any replicas above 1 with error 10074): the apply fails.",
		Fix:     "Lower num_replicas to the cluster size or less (an odd number).",
		Source:  docsStreams,
		check:   checkReplicasAboveCluster,
	},
	{
		ID: "workqueue-ack-none", Severity: Error,
		Summary: "a consumer of a workqueue stream does not acknowledge",
		Why:     "A workqueue stream removes a message when its consumer acknowledges it, so the server refuses a consumer with ack_policy none or all there. When the stream is declared, plan and lint refuse the file at load time (lint reports it under this rule, exit 2); against a stream only the server has (lint -f --live) it is a finding.",
		Fix:     "Use ack_policy: explicit.",
		Source:  docsStreams,
		check:   checkWorkqueueAckNone,
	},
	{
		ID: "interest-ack-none", Severity: Warning,
		Summary: "a consumer of an interest stream does not acknowledge",
		Why:     "With ack_policy none the server counts a message as acknowledged when it sends it: an interest stream deletes it then, so a subscriber that crashes mid-message loses it for good.",
		Fix:     "Use ack_policy: explicit, or make the stream limits if losing messages is acceptable.",
		Source:  docsConsumer,
		check:   checkInterestAckNone,
	},
	{
		ID: "interest-no-consumers", Severity: Warning,
		Summary: "an interest stream with no consumers",
		Why:     "An interest stream keeps a message only while a consumer has yet to acknowledge it: with no consumer it stores nothing, and whatever is published before the first consumer exists is gone.",
		Fix:     "Declare its consumers in the same files, or use retention: limits.",
		Source:  "\"JetStream: Persistent Messaging with NATS\" (seed article: \"Interest removes a message once all defined consumers have acknowledged it\")",
		check:   checkInterestNoConsumers,
	},
	{
		ID: "kv-history-one", Severity: Info,
		Summary: "a KV bucket keeps one revision per key",
		Why:     "With history 1 (the default) a put replaces the previous value: `jetctl kv history BUCKET KEY` and kv diff have nothing to show, and a bad write cannot be undone from the bucket.",
		Fix:     "Set history (up to 64) where changes must be traced or undone.",
		Source:  docsKV,
		check:   checkKVHistoryOne,
	},
	{
		ID: "consumer-mode-settings", Severity: Error,
		Summary: "max_waiting on a push consumer, or push settings on a pull one",
		Why:     "The server refuses max_waiting on a push consumer (deliver_subject set, error 10080) and flow_control, idle_heartbeat and rate_limit_bps on a pull consumer (errors 10089, 10088, 10086): the apply fails. terraform's provider finds out only at apply (terraform-provider-jetstream#71).",
		Fix:     "Remove the settings of the other mode.",
		Source:  "https://github.com/nats-io/terraform-provider-jetstream/issues/71",
		check:   checkConsumerMode,
	},
	{
		ID: "workqueue-mirrored", Severity: Error,
		Summary: "a mirror or source of a workqueue stream",
		Why:     "A mirror or source reads its origin through a consumer of its own: a workqueue origin then removes every message the copy takes that none of its consumers' filters owns: all of them before the workers' consumers exist, and whatever their filters leave out. The work is gone from the queue before any worker sees it.",
		Fix:     "Copy from a limits or interest stream, or let the workers publish what must be kept.",
		Source:  "jetctl's fact test TestFactMirrorDrainsWorkqueueOrigin (pkg/migrate), found when `jetctl migrate` emptied a workqueue stream this way",
		check:   checkWorkqueueMirrored,
	},
	{
		ID: "durable-inactive-threshold", Severity: Info,
		Summary: "a durable consumer that the server deletes when idle",
		Why:     "With inactive_threshold a durable consumer is deleted after that long without a client, with its position: a consumer whose service is down longer starts again from its deliver_policy.",
		Fix:     "Remove inactive_threshold from durable consumers, or make it longer than any outage.",
		Source:  seedConcepts,
		check:   checkDurableInactive,
	},
	{
		ID: "max-age-before-dead-letter", Severity: Warning,
		Summary: "a stream's max_age removes a failing message before it becomes a dead letter",
		Why:     "A message that keeps failing becomes a dead letter (the max_deliveries advisory a DLQ capture keeps) only after max_deliver deliveries, each followed by its ack_wait, or by its backoff value when backoff is set. A stream whose max_age is shorter removes the message first: it is gone without an advisory, and no sweep ever sees it. Per-message TTLs (Nats-TTL) do the same, where lint cannot see them.",
		Fix:     "Make max_age longer than max_deliver × ack_wait (with backoff: the sum of its values, the last one repeated up to max_deliver) plus the time a message may wait for its first delivery, or lower max_deliver or ack_wait.",
		Source:  "jetctl's fact test TestFactMaxAgeRemovesBeforeMaxDeliver (pkg/lint); jetctl issue 33",
		check:   checkMaxAgeBeforeDeadLetter,
	},
	{
		ID: "priority-timeout-unused", Severity: Warning,
		Summary: "priority_timeout with a priority policy that pins no client",
		Why:     "priority_timeout is how long a pinned client may go without pulling before the server pins another, and only priority_policy pinned_client pins one. With overflow or prioritized the server keeps the value and never uses it: whoever set it expects a failover that does not exist.",
		Fix:     "Remove priority_timeout, or use priority_policy: pinned_client if one client at a time should take the group's messages.",
		Source:  "jetctl's fact test TestFactPriorityTimeoutOnlyPins (pkg/lint); nats-server 2.15 server/consumer.go",
		check:   checkPriorityTimeoutUnused,
	},
	{
		ID: "persist-async", Severity: Warning,
		Summary: "persist_mode async: a publish is acknowledged before it is on disk",
		Why:     "With persist_mode async the server acknowledges a publish before it writes the message to disk, and flushes in the background: a crash of the server or its machine loses the last messages it acknowledged, and their publishers, holding an acknowledgement, never send them again. The stream keeps the mode for life: an update of it is refused (error 10052).",
		Fix:     "Use persist_mode default where acknowledged messages must survive a crash; keep async for data that can be lost or published again, and say so with a jetctl:ignore comment.",
		Source:  "nats-server 2.15 server/stream.go (async persist mode turns off sync_always and flushes asynchronously); jetctl's fact test TestFactAsyncPersistIsForLife (pkg/lint)",
		check:   checkPersistAsync,
	},
	{
		ID: "api-level-above-server", Severity: Error, Live: true,
		Summary: "a setting the server's JetStream API level cannot honour",
		Why:     "Each of the newer settings needs a JetStream API level (allow_msg_ttl 1, allow_msg_counter 2, allow_batched 4, ack_policy flow_control 4, ...). An older server refuses a field it does not know when the request reaches it (nats-server 2.12.4 answers allow_batched with error 10025), or, with strict mode off, drops it without a word.",
		Fix:     "Upgrade the server, or remove the setting. plan refuses such a file against that server before it changes anything.",
		Source:  "nats-server 2.15 server/jetstream_versioning.go; jetctl's fact tests TestFactRequiredAPILevel (pkg/jsapi) and TestFactOldServerRefusesNewerFields (pkg/plan)",
		check:   checkAPILevel,
	},
	{
		ID: "ignore-invalid", Severity: Error,
		Summary: "a jetctl:ignore comment with an unknown rule, no reason, or on no resource",
		Why:     "A silence must say which rule and why, so that a reviewer can judge it, and be on the resource it silences.",
		Fix:     "Write `# jetctl:ignore RULE-ID the reason`, with a rule id from `jetctl lint --rules`, directly above the resource's list item or on one of its lines.",
		Source:  "jetctl",
	},
	{
		ID: "ignore-unused", Severity: Warning,
		Summary: "a jetctl:ignore comment that silences nothing",
		Why:     "A silence left after the configuration was fixed hides the rule if the mistake comes back.",
		Fix:     "Remove the comment.",
		Source:  "jetctl",
	},
	{
		ID: "plan-file-invalid", Severity: Error,
		Summary: "a plan file that does not load",
		Why:     "A plan file that cannot be read, is not valid YAML, names an unknown field, declares a resource twice or holds a value the server would refuse is not checked by any rule: plan and apply refuse it before contacting anything, as they refuse files that declare nothing (without --allow-empty). lint exits 2 and reports each problem at its file:line:column in every output format, so that code scanning shows it on its line; a problem another rule names (workqueue-ack-none) is reported under that rule instead.",
		Fix:     "Fix what the message names, at its place; plan reports the same problems. Files that are meant to declare nothing take --allow-empty.",
		Source:  "jetctl",
	},
}

// LoadFailed is the result of linting plan files that do not load: each
// problem a finding at its place, of the rule that names it
// (plan-file-invalid unless another rule does), with error severity.
func LoadFailed(problems []plan.Problem) *Result {
	res := &Result{Findings: []Finding{}, Suppressed: []Finding{}, Skipped: []string{}}
	for _, p := range problems {
		rule, ok := RuleByID(p.Rule)
		if !ok {
			rule, _ = RuleByID("plan-file-invalid")
		}
		res.Findings = append(res.Findings, Finding{Rule: rule.ID, Severity: Error, Message: p.Message, Pos: p.Pos})
	}
	return res
}

// explicitAcks reports whether a consumer waits for acknowledgements.
func explicitAcks(c *jetstream.ConsumerConfig) bool {
	return c.AckPolicy == jetstream.AckExplicitPolicy || c.AckPolicy == jetstream.AckAllPolicy
}

// streamOf is the config of a consumer's stream: declared, or the
// server's; nil when unknown.
func (c *linter) streamOf(r *plan.Resource) *jetstream.StreamConfig {
	if s := c.streams[r.Stream]; s != nil {
		return s.StreamConfig
	}
	if c.env.Server != nil {
		for _, s := range c.env.Server.Resources {
			if s.Kind == plan.KindStream && s.Name == r.Stream {
				return s.StreamConfig
			}
		}
	}
	return nil
}

func checkMaxDeliverUnlimited(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer || !explicitAcks(r.ConsumerConfig) || r.ConsumerConfig.MaxDeliver > 0 {
		return
	}
	c.report(r, "max_deliver", "max_deliver is unlimited with ack_policy %s: a message that always fails is redelivered forever", plan.EnumName(r.ConsumerConfig.AckPolicy))
}

// boundedDeliveries reports whether a consumer makes dead letters.
func boundedDeliveries(r *plan.Resource) bool {
	return r.Kind == plan.KindConsumer && explicitAcks(r.ConsumerConfig) && r.ConsumerConfig.MaxDeliver > 0
}

func checkDeadLettersUncaptured(c *linter, r *plan.Resource) {
	if !boundedDeliveries(r) || c.env.Captured == nil || c.env.Captured(r.Stream, r.Name) {
		return
	}
	c.reportWith(r, "max_deliver", dlqSetupCommand(r.Stream, r.Name), "max_deliver %d, but no DLQ capture keeps its dead letters: a message past it stays in the stream unnoticed", r.ConsumerConfig.MaxDeliver)
}

// dlqSetupCommand is the command that captures a consumer's dead
// letters.
func dlqSetupCommand(stream, consumer string) string {
	return fmt.Sprintf("jetctl dlq setup --stream %s --consumer %s", stream, consumer)
}

func checkDeadLettersUnchecked(c *linter, r *plan.Resource) {
	if !boundedDeliveries(r) {
		return
	}
	c.report(r, "max_deliver", "max_deliver %d: whether a DLQ capture keeps its dead letters can only be checked with --live", r.ConsumerConfig.MaxDeliver)
}

func checkBackoffAckWait(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer {
		return
	}
	cc := r.ConsumerConfig
	if len(cc.BackOff) == 0 || cc.AckWait == 0 || cc.AckWait == cc.BackOff[0] {
		return
	}
	c.report(r, "ack_wait", "ack_wait %s is never used: with backoff the server waits %s for the first ack, then %s", units.FormatDuration(cc.AckWait), units.FormatDuration(cc.BackOff[0]), durations(cc.BackOff[1:]))
}

func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "the same again for every redelivery"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = units.FormatDuration(d)
	}
	return strings.Join(parts, ", ") + " (the last for every later redelivery)"
}

func checkBackoffMaxDeliver(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer {
		return
	}
	cc := r.ConsumerConfig
	if len(cc.BackOff) == 0 || cc.MaxDeliver <= 0 || cc.MaxDeliver >= len(cc.BackOff) {
		return
	}
	c.report(r, "backoff", "backoff has %d values but max_deliver is %d: the server refuses it (max_deliver must be at least as many)", len(cc.BackOff), cc.MaxDeliver)
}

func checkStreamUnbounded(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindStream {
		return
	}
	s := r.StreamConfig
	if s.Retention != jetstream.LimitsPolicy || s.MaxAge > 0 || s.MaxBytes > 0 || s.MaxMsgs > 0 {
		return
	}
	c.report(r, "", "a limits stream with no max_age, max_bytes or max_msgs grows until the disk is full")
}

// storageAndReplicas are a stream's, bucket's or object store's.
func storageAndReplicas(r *plan.Resource) (jetstream.StorageType, int, bool) {
	switch r.Kind {
	case plan.KindStream:
		return r.StreamConfig.Storage, r.StreamConfig.Replicas, true
	case plan.KindKV:
		return r.KeyValueConfig.Storage, r.KeyValueConfig.Replicas, true
	case plan.KindObjectStore:
		return r.ObjectStoreConfig.Storage, r.ObjectStoreConfig.Replicas, true
	}
	return 0, 0, false
}

func checkMemorySingleReplica(c *linter, r *plan.Resource) {
	storage, replicas, ok := storageAndReplicas(r)
	if !ok || storage != jetstream.MemoryStorage || replicas > 1 {
		return
	}
	c.report(r, "storage", "memory storage with one replica: everything in it is lost when its server restarts")
}

func checkReplicasEven(c *linter, r *plan.Resource) {
	_, replicas, ok := storageAndReplicas(r)
	if !ok || replicas < 2 || replicas%2 != 0 {
		return
	}
	c.report(r, "num_replicas", "%d replicas survive no more server failures than %d", replicas, replicas-1)
}

func checkReplicasSingleInCluster(c *linter, r *plan.Resource) {
	_, replicas, ok := storageAndReplicas(r)
	if !ok || replicas > 1 || !(c.env.Clustered || c.env.ClusterSize > 1) {
		return
	}
	where := "a clustered server"
	if c.env.ClusterSize > 1 {
		where = fmt.Sprintf("a %d-server cluster", c.env.ClusterSize)
	}
	c.report(r, "num_replicas", "one replica on %s: it is unavailable whenever its server restarts", where)
}

// checkReplicasAboveCluster asks what plan asks before it applies.
func checkReplicasAboveCluster(c *linter, r *plan.Resource) {
	if c.env.ClusterSize == 0 && !c.env.Clustered {
		return
	}
	lim := plan.ServerLimits{Clustered: c.env.Clustered || c.env.ClusterSize > 1, Cluster: c.env.Cluster, Servers: c.env.ClusterSize}
	problem := lim.ReplicasProblem(r)
	if problem == "" {
		return
	}
	c.report(r, "num_replicas", "%s: the server refuses it", problem)
}

func checkWorkqueueAckNone(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer || c.streams[r.Stream] != nil {
		return // a declared stream's consumers are checked when loading
	}
	s := c.streamOf(r)
	ack := r.ConsumerConfig.AckPolicy
	if s == nil || s.Retention != jetstream.WorkQueuePolicy || ack == jetstream.AckExplicitPolicy || ack == jetstream.AckFlowControlPolicy {
		return // the server takes flow_control too (as plan's load-time check does)
	}
	c.report(r, "ack_policy", "ack_policy %s on workqueue stream %q: the server refuses it (use explicit)", plan.EnumName(r.ConsumerConfig.AckPolicy), r.Stream)
}

func checkInterestAckNone(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer || r.ConsumerConfig.AckPolicy != jetstream.AckNonePolicy {
		return
	}
	s := c.streamOf(r)
	if s == nil || s.Retention != jetstream.InterestPolicy {
		return
	}
	c.report(r, "ack_policy", "ack_policy none on interest stream %q: a message is deleted once sent, and lost if the subscriber fails", r.Stream)
}

func checkInterestNoConsumers(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindStream || r.StreamConfig.Retention != jetstream.InterestPolicy || len(c.consumers[r.Name]) > 0 {
		return
	}
	if c.env.Server != nil {
		for _, s := range c.env.Server.Resources {
			if s.Kind == plan.KindConsumer && s.Stream == r.Name {
				return
			}
		}
	}
	if c.copied(r.Name) {
		return // the copy's consumer, the server's own, is an interest
	}
	field := ""
	if _, ok := r.FieldPos["retention"]; ok {
		field = "retention"
	}
	c.report(r, field, "an interest stream with no consumers keeps nothing: every message is removed as it is stored")
}

// copied reports whether a declared stream or one on the server mirrors
// or sources stream (on this server): it then has the server's consumer
// through which the copy reads it.
func (c *linter) copied(stream string) bool {
	local := func(src *jetstream.StreamSource) bool {
		return src != nil && src.Name == stream && src.Domain == "" && src.External == nil
	}
	copies := func(r *plan.Resource) bool {
		if r.Kind != plan.KindStream {
			return false
		}
		return local(r.StreamConfig.Mirror) || slices.ContainsFunc(r.StreamConfig.Sources, local)
	}
	if slices.ContainsFunc(c.desired.Resources, copies) {
		return true
	}
	return c.env.Server != nil && slices.ContainsFunc(c.env.Server.Resources, copies)
}

func checkKVHistoryOne(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindKV || r.KeyValueConfig.History > 1 {
		return
	}
	c.report(r, "history", "history 1 keeps only the latest value: kv history and kv diff have no revisions to show")
}

// modeSetting is a consumer setting of one mode (pull or push) only.
type modeSetting struct {
	key   string
	isSet func(*jetstream.ConsumerConfig) bool
}

// pullOnlySettings are refused on a push consumer, pushOnlySettings on a
// pull one (TestFactConsumerModeSettings). A push consumer's max_batch,
// max_expires and max_bytes are accepted (and unused); so is a pull
// consumer's deliver_group, which the plan loader refuses.
var (
	pullOnlySettings = []modeSetting{
		{"max_waiting", func(c *jetstream.ConsumerConfig) bool { return c.MaxWaiting > 0 }},
	}
	pushOnlySettings = []modeSetting{
		{"flow_control", func(c *jetstream.ConsumerConfig) bool { return c.FlowControl }},
		{"idle_heartbeat", func(c *jetstream.ConsumerConfig) bool { return c.IdleHeartbeat > 0 }},
		{"rate_limit_bps", func(c *jetstream.ConsumerConfig) bool { return c.RateLimit > 0 }},
	}
)

func checkConsumerMode(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer {
		return
	}
	cc := r.ConsumerConfig
	if cc.DeliverSubject != "" {
		for _, s := range pullOnlySettings {
			if s.isSet(cc) {
				c.report(r, s.key, "%s is a pull setting, but deliver_subject makes this a push consumer: the server refuses it", s.key)
			}
		}
		return
	}
	for _, s := range pushOnlySettings {
		if s.isSet(cc) {
			c.report(r, s.key, "%s is a push setting, but without deliver_subject this is a pull consumer: the server refuses it", s.key)
		}
	}
}

func checkWorkqueueMirrored(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindStream {
		return
	}
	s := r.StreamConfig
	check := func(path, origin string) {
		o := c.streamOf(&plan.Resource{Stream: origin})
		if o == nil || o.Retention != jetstream.WorkQueuePolicy {
			return
		}
		c.report(r, path, "copies workqueue stream %q: each message it copies that no consumer of %q owns is removed from %q", origin, origin, origin)
	}
	if s.Mirror != nil && s.Mirror.Domain == "" && s.Mirror.External == nil {
		check("mirror", s.Mirror.Name)
	}
	for i, src := range s.Sources {
		if src != nil && src.Domain == "" && src.External == nil {
			check(fmt.Sprintf("sources[%d]", i), src.Name)
		}
	}
}

func checkDurableInactive(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer || r.ConsumerConfig.InactiveThreshold <= 0 {
		return
	}
	c.report(r, "inactive_threshold", "inactive_threshold %s: the server deletes this durable consumer, and its position, after that long without a client", units.FormatDuration(r.ConsumerConfig.InactiveThreshold))
}

// ackWaitDefault is the server's ack_wait for a consumer that sets none.
const ackWaitDefault = 30 * time.Second

// redeliveryWindow is how long after its first delivery a message that
// fails every time becomes a dead letter: the wait after each of
// max_deliver deliveries, ack_wait or, with backoff, backoff[n] after the
// (n+1)-th (the last value after every later one), as the server waits
// (TestFactBackoffReplacesAckWait).
func redeliveryWindow(c *jetstream.ConsumerConfig) time.Duration {
	var total time.Duration
	for n := range c.MaxDeliver {
		switch {
		case len(c.BackOff) > 0:
			total += c.BackOff[min(n, len(c.BackOff)-1)]
		case c.AckWait > 0:
			total += c.AckWait
		default:
			total += ackWaitDefault
		}
	}
	return total
}

func checkMaxAgeBeforeDeadLetter(c *linter, r *plan.Resource) {
	if !boundedDeliveries(r) {
		return
	}
	s := c.streamOf(r)
	if s == nil || s.MaxAge <= 0 {
		return
	}
	cc := r.ConsumerConfig
	window := redeliveryWindow(cc)
	if s.MaxAge >= window {
		return
	}
	waits := "ack_wait " + units.FormatDuration(cmp.Or(cc.AckWait, ackWaitDefault))
	if len(cc.BackOff) > 0 {
		waits = "backoff " + durationList(cc.BackOff)
	}
	c.report(r, "max_deliver", "max_deliver %d with %s: a failing message is retried for %s, but stream %q removes it after max_age %s, before it becomes a dead letter",
		cc.MaxDeliver, waits, units.FormatDuration(window), r.Stream, units.FormatDuration(s.MaxAge))
}

// durationList writes durations as a plan file does: "1s, 5s, 30s".
func durationList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = units.FormatDuration(d)
	}
	return strings.Join(parts, ", ")
}

func checkPriorityTimeoutUnused(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindConsumer {
		return
	}
	cc := r.ConsumerConfig
	// Without a policy the server refuses it, and the plan loader says so.
	if cc.PinnedTTL <= 0 || cc.PriorityPolicy == jetstream.PriorityPolicyNone || cc.PriorityPolicy == jetstream.PriorityPolicyPinned {
		return
	}
	c.report(r, "priority_timeout", "priority_timeout %s with priority_policy %s: only pinned_client pins a client, so nothing ever times out",
		units.FormatDuration(cc.PinnedTTL), plan.EnumName(cc.PriorityPolicy))
}

func checkPersistAsync(c *linter, r *plan.Resource) {
	if r.Kind != plan.KindStream || r.StreamConfig.PersistMode != jetstream.AsyncPersistMode {
		return
	}
	c.report(r, "persist_mode", "persist_mode async: publishes are acknowledged before they are on disk, and a crash loses the last of them")
}

func checkAPILevel(c *linter, r *plan.Resource) {
	for _, p := range plan.LevelProblems(r, c.env.APILevel) {
		c.report(r, p.Path, "%s: the server cannot honour it", p.Message)
	}
}
