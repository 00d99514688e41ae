package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// Migration is what migrating a resource instead of replacing it keeps:
// the stream behind it is replaced by one of the same name with the
// declared config, keeping every message, sequence and consumer position
// (pkg/migrate). Plan sets it on every replaced stream, KV bucket and
// object store, whether or not the plan migrates it.
type Migration struct {
	// Migratable is false when the data cannot be kept; Reason says why.
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
	// Stream is the stream migrated (KV_x for a bucket, OBJ_x for an object
	// store); Via the temporary stream the data passes through.
	Stream string `json:"stream"`
	Via    string `json:"via,omitempty"`
	// Messages, Bytes and Consumers are what the stream holds: what a
	// migration copies and re-seats, and what a replacement loses.
	Messages  uint64 `json:"messages"`
	Bytes     uint64 `json:"bytes"`
	Consumers int    `json:"consumers"`
	// CopyTime and Outage are the engine's estimates of the copy's duration
	// and of the write outage at the cutover; null unless the plan migrates
	// the resource and the estimate succeeded (EstimateError says why not).
	CopyTime      *time.Duration `json:"copy_time_ns"`
	Outage        *time.Duration `json:"outage_ns"`
	EstimateError string         `json:"estimate_error,omitempty"`
	// KeptForGood is, for a migration to workqueue retention, how many of
	// the messages are at or below their consumer's ack floor: the
	// workqueue stream keeps them, as nothing acknowledges them again (see
	// assessWorkqueueKeep); 0 otherwise. KeptForGoodExact is false when it
	// is an upper bound: a consumer has deliveries above its ack floor
	// (pending, or acknowledged out of order: those are delivered again).
	KeptForGood      uint64 `json:"kept_for_good"`
	KeptForGoodExact bool   `json:"kept_for_good_exact"`
}

// ReseatedFromKey marks a consumer that a migration re-seated with
// deliver_policy by_start_sequence, from the first message it had left,
// because the server resets no consumer with its own policy (new, last,
// last_per_subject); the value is that policy. Plan compares the consumer
// as having it, so that its declared config still matches and it keeps
// its position.
const ReseatedFromKey = "io.jetctl.reseated_from"

// reseatedFrom is the deliver policy a re-seated consumer had.
func reseatedFrom(c *jetstream.ConsumerConfig) (jetstream.DeliverPolicy, bool) {
	from, ok := c.Metadata[ReseatedFromKey]
	if !ok || c.DeliverPolicy != jetstream.DeliverByStartSequencePolicy {
		return 0, false
	}
	var p jetstream.DeliverPolicy
	if err := p.UnmarshalJSON([]byte(strconv.Quote(from))); err != nil {
		return 0, false
	}
	return p, true
}

// reseatWarnings say which consumers a migration will re-seat by start
// sequence (see ReseatedFromKey): those whose policy the server does not
// reset and that have messages left.
func reseatWarnings(live *Live, name string, si *jetstream.StreamInfo) []string {
	var out []string
	for _, cname := range slices.Sorted(maps.Keys(live.Consumers[name])) {
		ci := live.Consumers[name][cname]
		if !migratesConsumer(&ci.Config) || !resetRefused(ci.Config.DeliverPolicy) || ci.AckFloor.Stream >= si.State.LastSeq {
			continue
		}
		policy, _ := ci.Config.DeliverPolicy.MarshalJSON()
		out = append(out, fmt.Sprintf("consumer %q is re-seated with deliver_policy by_start_sequence from seq %d, the first it has left: the server resets no consumer with deliver_policy %s (plan keeps comparing it as %[3]s)",
			cname, ci.AckFloor.Stream+1, strings.Trim(string(policy), `"`)))
	}
	return out
}

// resetRefused reports whether the server refuses to reset a consumer
// with that deliver policy, so that a migration re-seats it by start
// sequence when it has messages left.
func resetRefused(p jetstream.DeliverPolicy) bool {
	return p == jetstream.DeliverNewPolicy || p == jetstream.DeliverLastPolicy || p == jetstream.DeliverLastPerSubjectPolicy
}

// markReseated marks, after a migration, each consumer the engine re-seated
// by start sequence with the deliver policy it had (ReseatedFromKey).
func markReseated(ctx context.Context, js jetstream.JetStream, stream string, sum *migrate.Summary, before map[string]*jetstream.ConsumerInfo) error {
	for _, cm := range sum.Consumers {
		orig := before[cm.Name]
		if cm.Changed == "" || orig == nil || !resetRefused(orig.Config.DeliverPolicy) {
			continue
		}
		c, err := js.Consumer(ctx, stream, cm.Name)
		if err != nil {
			return fmt.Errorf("consumer %q: %w", cm.Name, err)
		}
		cfg := c.CachedInfo().Config
		if cfg.DeliverPolicy != jetstream.DeliverByStartSequencePolicy {
			continue
		}
		from, _ := orig.Config.DeliverPolicy.MarshalJSON()
		md := map[string]string{}
		for k, v := range cfg.Metadata {
			md[k] = v
		}
		md[ReseatedFromKey] = strings.Trim(string(from), `"`)
		cfg.Metadata = md
		if _, err := js.UpdateConsumer(ctx, stream, cfg); err != nil {
			return fmt.Errorf("consumer %q: marking it re-seated: %w", cm.Name, err)
		}
	}
	return nil
}

// migrateStateKey is the metadata key in which pkg/migrate keeps a move's
// state on its streams until the move is done (unexported there).
const migrateStateKey = "jetctl.migrate"

// migrationTempSuffix is what migrate.TempName appends to a stream's name.
var migrationTempSuffix = migrate.TempName("")

// migrationTemp is the temporary stream a migration of stream passes
// through.
func migrationTemp(stream string) string { return migrate.TempName(stream) }

// interrupted returns the temporary stream of a migration of stream that
// has not finished: one that holds the engine's state (the temporary
// stream while either move runs or between them, or the stream itself
// during the second move). A stream that only has the temporary name is
// not a migration's: it is in the way (see planMigration).
func interrupted(live *Live, stream string) (string, bool) {
	temp := migrationTemp(stream)
	ti := live.Streams[temp]
	if ti == nil {
		return "", false
	}
	if _, ok := ti.Config.Metadata[migrateStateKey]; ok {
		return temp, true
	}
	if si := live.Streams[stream]; si != nil {
		if _, ok := si.Config.Metadata[migrateStateKey]; ok {
			return temp, true
		}
	}
	return "", false
}

// migrationTempOf returns the stream whose migration passes through the
// temporary stream name, if name is one.
func migrationTempOf(name string) (string, bool) {
	if migrationTempSuffix == "" || !strings.HasSuffix(name, migrationTempSuffix) || name == migrationTempSuffix {
		return "", false
	}
	orig := strings.TrimSuffix(name, migrationTempSuffix)
	return orig, migrate.TempName(orig) == name
}

// planMigration sets rp.Migration on a replaced stream, bucket or object
// store, and when the plan migrates (Options.Migrate) and the data can be
// kept, turns the replacement into a migration: not destructive by itself,
// but the changes that lose data in place (lowered limits, → interest)
// lose it in the migration too.
func planMigration(rp *ResourcePlan, live *Live, migrating bool) {
	if rp.Action != ActionReplace || rp.Kind == KindConsumer || rp.res == nil {
		return
	}
	name := rp.res.StreamName()
	si := live.Streams[name]
	if si == nil {
		return
	}
	m := &Migration{Stream: name, Via: migrate.TempName(name), Messages: si.State.Msgs, Bytes: si.State.Bytes, Consumers: reseated(live, name, si)}
	rp.Migration = m
	if reason := unmigratable(rp); reason != "" {
		m.Reason = reason
	} else if temp := live.Streams[migrate.TempName(name)]; temp != nil && live.StandIns[name] == "" && !hasState(temp) && !hasState(si) {
		m.Reason = fmt.Sprintf("stream %q, which is not a migration's, has the name the migration passes through", temp.Config.Name)
	} else if target, err := migrationTarget(rp.res, si); err != nil {
		m.Reason = err.Error()
	} else if err := migrate.Migratable(si.Config, *target); err != nil {
		m.Reason = err.Error()
	} else {
		m.Migratable = true
	}
	if !m.Migratable {
		m.Via = ""
		return
	}
	if !migrating {
		return
	}
	rp.Action = ActionMigrate
	rp.Destructive = false
	rp.Warnings = append(rp.Warnings, reseatWarnings(live, name, si)...)
	for i := range rp.Changes {
		c := &rp.Changes[i]
		if c.ForcesReplacement {
			continue
		}
		// planResource dropped what a replacement makes moot; a migration
		// keeps the data, so a change that loses some in place loses it here.
		*c = FieldChange{Path: c.Path, Before: c.Before, After: c.After}
		classify(rp.Kind, c, nil, si)
		rp.Destructive = rp.Destructive || c.Destructive
	}
}

// unmigratable is why the plan itself knows a replacement cannot keep the
// data, or "": what pkg/migrate does not check because it holds for any
// migration.
func unmigratable(rp *ResourcePlan) string {
	for _, c := range rp.Changes {
		if c.ForcesReplacement && c.Path == "first_seq" {
			return "a migration keeps the sequences, so first_seq cannot change"
		}
	}
	return ""
}

// migrationTarget is the stream config a migration replaces the live
// stream with. A stream gets its declared config at once. A bucket or an
// object store gets its live stream's config with the fields that forced
// the replacement changed (nats.go alone knows how a bucket's config maps
// to its stream's): apply updates the bucket to its declared config right
// after.
func migrationTarget(r *Resource, si *jetstream.StreamInfo) (*jetstream.StreamConfig, error) {
	switch r.Kind {
	case KindStream:
		cfg := *r.StreamConfig
		return &cfg, nil
	case KindKV, KindObjectStore:
		cfg := si.Config
		cfg.Metadata = nil
		for k, v := range si.Config.Metadata {
			// The server's keys are the server's to set, and the state of an
			// interrupted migration the engine's to read where it keeps it.
			if !strings.HasPrefix(k, "_nats.") && k != migrateStateKey {
				if cfg.Metadata == nil {
					cfg.Metadata = map[string]string{}
				}
				cfg.Metadata[k] = v
			}
		}
		if r.Kind == KindKV {
			cfg.Storage = r.KeyValueConfig.Storage
			if r.KeyValueConfig.LimitMarkerTTL == 0 && cfg.SubjectDeleteMarkerTTL > 0 {
				cfg.SubjectDeleteMarkerTTL, cfg.AllowMsgTTL = 0, false
			}
		} else {
			cfg.Storage = r.ObjectStoreConfig.Storage
		}
		return &cfg, nil
	}
	return nil, fmt.Errorf("a %s is not a stream", r.Kind)
}

// resumeView is live as a plan must see it while a migration of a declared
// stream, bucket or object store is interrupted between its two hops:
// when the stream is gone, or is only the mirror the second hop copies
// into, the temporary stream holds the data, the subjects and the
// consumers, and stands for the stream. live itself is not changed.
func resumeView(live *Live, desired *Desired) *Live {
	out := &Live{Streams: make(map[string]*jetstream.StreamInfo, len(live.Streams)), Consumers: make(map[string]map[string]*jetstream.ConsumerInfo, len(live.Consumers)),
		StandIns: map[string]string{}}
	for k, v := range live.Streams {
		out.Streams[k] = v
	}
	for k, v := range live.Consumers {
		out.Consumers[k] = v
	}
	for _, r := range desired.Resources {
		if r.Kind == KindConsumer {
			continue
		}
		name := r.StreamName()
		tempName, ok := interrupted(live, name)
		if si := live.Streams[name]; !ok || (si != nil && si.Config.Mirror == nil) {
			continue
		}
		temp := live.Streams[tempName]
		alias := *temp
		alias.Config.Name = name
		out.Streams[name] = &alias
		out.Consumers[name] = live.Consumers[temp.Config.Name]
		out.StandIns[name] = temp.Config.Name
	}
	return out
}

// hasState reports whether a stream holds a migration's state.
func hasState(si *jetstream.StreamInfo) bool {
	_, ok := si.Config.Metadata[migrateStateKey]
	return ok
}

// reseated counts the consumers a migration of the stream re-seats: its
// durable ones, not the ephemeral ones (they belong to a live client and
// end with it) nor the server's own (a mirror's or a source's reader), as
// pkg/migrate chooses them. A stream whose consumers were not listed (a
// bucket's) counts all of them.
func reseated(live *Live, name string, si *jetstream.StreamInfo) int {
	consumers, ok := live.Consumers[name]
	if !ok {
		return si.State.Consumers
	}
	n := 0
	for _, ci := range consumers {
		if migratesConsumer(&ci.Config) {
			n++
		}
	}
	return n
}

// migratesConsumer says whether a migration re-seats the consumer (see
// reseated).
func migratesConsumer(c *jetstream.ConsumerConfig) bool {
	if c.Durable == "" {
		return false
	}
	return !jsapi.ReplicationConsumer(c.Metadata)
}

// planResume plans a resource whose migration was interrupted (the
// temporary stream exists): with --migrate, a migration that finishes it,
// whatever else changes; without, a warning, and CheckServer refuses the
// plan, since creating or updating the stream now could strand the data.
func planResume(rp *ResourcePlan, live *Live, temp string, migrating bool) {
	rp.Warnings = append(rp.Warnings, fmt.Sprintf("stream %q, left by an interrupted migration, holds data of this one: apply --migrate finishes the migration", temp))
	if !migrating {
		return
	}
	// What differs is the migration's own doing, not a change outside jetctl.
	rp.Drift = false
	if rp.Action == ActionMigrate {
		return
	}
	rp.Action = ActionMigrate
	rp.Destructive = false
	rp.Reason = "finishes the interrupted migration"
	name := streamNameOf(rp.Kind, "", rp.Name)
	m := &Migration{Migratable: true, Stream: name, Via: temp}
	if si := live.Streams[name]; si != nil {
		m.Messages, m.Bytes, m.Consumers = si.State.Msgs, si.State.Bytes, reseated(live, name, si)
	}
	rp.Migration = m
}

// estimateMigrations asks the engine how long each migration in p copies
// and how long the writes stop. An estimate that fails leaves the numbers
// null and says why: the estimate informs the plan, it does not decide it.
func estimateMigrations(ctx context.Context, js jetstream.JetStream, p *Plan, live *Live) {
	for _, rp := range p.Resources {
		m := rp.Migration
		if rp.Action != ActionMigrate || m == nil {
			continue
		}
		name := m.Stream
		if standIn := live.StandIns[name]; standIn != "" {
			name = standIn // it holds the data now
		}
		est, err := estimateReplace(ctx, js, name)
		if err != nil {
			m.EstimateError = strings.TrimPrefix(err.Error(), "nats: ")
			rp.Warnings = append(rp.Warnings, "copy time and write outage not estimated: "+m.EstimateError)
			continue
		}
		m.Messages, m.Bytes, m.Consumers = est.Messages, est.Bytes, est.Consumers
		copyTime, outage := est.CopyTime, est.Outage
		m.CopyTime, m.Outage = &copyTime, &outage
	}
}

// estimateReplace is migrate.EstimateReplace; tests replace it.
var estimateReplace = migrate.EstimateReplace

// replaceStream is migrate.Replace; tests replace it.
var replaceStream = migrate.Replace
