package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/migrate"
	"github.com/jetctl/jetctl/pkg/retry"
)

// Step is one change apply makes to the server.
type Step struct {
	// Resource is the resource's label: `stream "ORDERS"`.
	Resource string `json:"resource"`
	Op       Action `json:"op"`
	Error    string `json:"error,omitempty"`
	// Migration is what a migrate step did (pkg/migrate's summary).
	Migration *migrate.Summary `json:"migration,omitempty"`

	run func(ctx context.Context, st *Step) error
}

// ApplyResult says what apply did.
type ApplyResult struct {
	Done    []Step `json:"done"`
	Failed  *Step  `json:"failed,omitempty"`
	NotDone []Step `json:"not_done"`
}

// PartialError is a failure midway: Result lists what was done, what
// failed and what was not done. Running apply again converges.
type PartialError struct {
	Result *ApplyResult
	Err    error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("%s: %s failed: %v", e.Result.Failed.Resource, e.Result.Failed.Op, e.Err)
}

func (e *PartialError) Unwrap() error { return e.Err }

// VerifyError lists the fields that do not match the files when read
// back after apply.
type VerifyError struct {
	Mismatches []string
}

func (e *VerifyError) Error() string {
	msg := "after apply, " + e.Mismatches[0]
	if len(e.Mismatches) > 1 {
		msg += fmt.Sprintf(" (and %d more mismatches)", len(e.Mismatches)-1)
	}
	return msg
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// OnStep is called after each step, successful or not.
	OnStep func(Step)
	// LeaderWait bounds the wait, when reading back, for a stream or
	// consumer whose group is still electing a leader (see FetchLive).
	LeaderWait time.Duration
	// Progress, if set, is called while a migration copies, with the
	// migrated resource's label.
	Progress func(resource string, p migrate.Progress)
	// AtStep, if set, is called at each step of a migration
	// (migrate.ReplaceOptions.AtStep): the kill-and-rerun tests die there.
	AtStep func(step string)
}

// Apply makes the server match p: deletions first (consumers before their
// streams, readers before the streams they mirror or source), then stream
// creates and updates (origins before the streams that read them), then
// consumers. It stops at the first failure with a *PartialError, and
// after success reads everything back: a difference is a *VerifyError.
func Apply(ctx context.Context, js jetstream.JetStream, p *Plan, live *Live, opts ApplyOptions) (*ApplyResult, error) {
	steps, err := buildSteps(js, p, live, opts)
	if err != nil {
		return nil, err
	}
	res := &ApplyResult{Done: []Step{}, NotDone: []Step{}}
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			st.Error = "not started: interrupted"
			res.NotDone = append(res.NotDone, steps[i:]...)
			return res, &PartialError{Result: res, Err: err}
		}
		if err := st.run(ctx, &st); err != nil {
			st.Error = strings.TrimPrefix(err.Error(), "nats: ")
			failed := st
			res.Failed = &failed
			res.NotDone = append(res.NotDone, steps[i+1:]...)
			if opts.OnStep != nil {
				opts.OnStep(st)
			}
			return res, &PartialError{Result: res, Err: err}
		}
		res.Done = append(res.Done, st)
		if opts.OnStep != nil {
			opts.OnStep(st)
		}
	}
	return res, verify(ctx, js, p, opts.LeaderWait)
}

// verify plans again and reports every field that still differs.
func verify(ctx context.Context, js jetstream.JetStream, p *Plan, leaderWait time.Duration) error {
	desired, err := DesiredFromPlan(p)
	if err != nil {
		return err
	}
	again, _, err := Make(ctx, js, desired, Options{Prune: p.Prune, LeaderWait: leaderWait})
	if err != nil {
		return fmt.Errorf("reading back after apply: %w", err)
	}
	var mismatches []string
	for _, rp := range again.Resources {
		switch rp.Action {
		case ActionNone:
		case ActionCreate:
			mismatches = append(mismatches, rp.Label()+" does not exist")
		case ActionDelete:
			mismatches = append(mismatches, rp.Label()+" still exists")
		default:
			for _, c := range rp.Changes {
				mismatches = append(mismatches, fmt.Sprintf("%s: %s is %s on the server, want %s",
					rp.Label(), c.Path, DisplayValue(rp.Kind, c.Path, c.Before), DisplayValue(rp.Kind, c.Path, c.After)))
			}
		}
	}
	if len(mismatches) > 0 {
		return &VerifyError{Mismatches: mismatches}
	}
	return nil
}

// DesiredFromPlan rebuilds the declared resources a plan carries, e.g. a
// plan saved with plan -o json.
func DesiredFromPlan(p *Plan) (*Desired, error) {
	d := &Desired{}
	for _, rp := range p.Resources {
		if rp.res != nil {
			d.Resources = append(d.Resources, rp.res)
			continue
		}
		if rp.Action == ActionDelete {
			continue
		}
		r := &Resource{Kind: rp.Kind, Name: rp.Name, Stream: rp.Stream, FieldPos: map[string]Pos{}}
		var err error
		switch rp.Kind {
		case KindStream:
			r.StreamConfig = &jetstream.StreamConfig{}
			err = json.Unmarshal(rp.Config, r.StreamConfig)
		case KindConsumer:
			r.ConsumerConfig = &jetstream.ConsumerConfig{}
			err = json.Unmarshal(rp.Config, r.ConsumerConfig)
		case KindKV:
			r.KeyValueConfig = &jetstream.KeyValueConfig{}
			err = json.Unmarshal(rp.Config, r.KeyValueConfig)
		case KindObjectStore:
			r.ObjectStoreConfig = &jetstream.ObjectStoreConfig{}
			err = json.Unmarshal(rp.Config, r.ObjectStoreConfig)
		default:
			return nil, fmt.Errorf("plan file: unknown resource kind %q", rp.Kind)
		}
		if err != nil || len(rp.Config) == 0 {
			return nil, fmt.Errorf("plan file: %s: invalid config", rp.Label())
		}
		d.Resources = append(d.Resources, r)
	}
	return d, nil
}

// withMarks adds jetctl's metadata to a declared config's metadata.
func withMarks(md map[string]string, managed bool, hash string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		out[k] = v
	}
	if managed {
		out[ManagedKey] = "true"
	}
	out[AppliedKey] = hash
	return out
}

func buildSteps(js jetstream.JetStream, p *Plan, live *Live, opts ApplyOptions) ([]Step, error) {
	desired, err := DesiredFromPlan(p)
	if err != nil {
		return nil, err
	}
	streamCfg := func(stream string) *jetstream.StreamConfig {
		if r := desired.find(KindStream, "", stream); r != nil {
			return r.StreamConfig
		}
		if si := live.Streams[stream]; si != nil {
			return &si.Config
		}
		return nil
	}
	byStream := map[string]*ResourcePlan{}
	var streamLevel, consumers []*ResourcePlan
	for _, rp := range p.Resources {
		if rp.Kind == KindConsumer {
			consumers = append(consumers, rp)
			continue
		}
		byStream[streamNameOf(rp.Kind, "", rp.Name)] = rp
		streamLevel = append(streamLevel, rp)
	}
	resourceOf := func(rp *ResourcePlan) *Resource {
		return desired.find(rp.Kind, rp.Stream, rp.Name)
	}

	var steps []Step
	// 1. Consumers go first: pruned ones, and the old half of a replace
	// whose stream stays.
	for _, rp := range consumers {
		parent := byStream[rp.Stream]
		streamGoes := parent != nil && (parent.Action == ActionReplace || parent.Action == ActionDelete)
		if (rp.Action == ActionDelete || rp.Action == ActionReplace) && !streamGoes {
			steps = append(steps, deleteStep(js, rp))
		}
	}
	// 2. Streams, buckets and object stores that go, readers first.
	var going []*ResourcePlan
	for _, rp := range streamLevel {
		if rp.Action == ActionDelete || rp.Action == ActionReplace {
			going = append(going, rp)
		}
	}
	liveDeps := func(rp *ResourcePlan) []string {
		if si := live.Streams[streamNameOf(rp.Kind, "", rp.Name)]; si != nil {
			return streamDeps(&si.Config)
		}
		return nil
	}
	ordered := topoOrder(going, liveDeps)
	for i := len(ordered) - 1; i >= 0; i-- {
		steps = append(steps, deleteStep(js, ordered[i]))
	}
	// 3. Streams, buckets and object stores that are created, updated or
	// migrated, origins first. A migration recreates the stream's live
	// consumers (but those step 1 deleted) with their positions; the
	// plan's own consumer changes follow in step 4.
	var coming []*ResourcePlan
	for _, rp := range streamLevel {
		if rp.Action == ActionCreate || rp.Action == ActionUpdate || rp.Action == ActionReplace || rp.Action == ActionMigrate {
			coming = append(coming, rp)
		}
	}
	declaredDeps := func(rp *ResourcePlan) []string {
		r := resourceOf(rp)
		switch {
		case r == nil:
			return nil
		case r.StreamConfig != nil:
			return streamDeps(r.StreamConfig)
		case r.KeyValueConfig != nil:
			var deps []string
			if m := r.KeyValueConfig.Mirror; m != nil {
				deps = append(deps, "KV_"+strings.TrimPrefix(m.Name, "KV_"))
			}
			for _, s := range r.KeyValueConfig.Sources {
				deps = append(deps, "KV_"+strings.TrimPrefix(s.Name, "KV_"))
			}
			return deps
		}
		return nil
	}
	for _, rp := range topoOrder(coming, declaredDeps) {
		r := resourceOf(rp)
		if r == nil {
			return nil, fmt.Errorf("%s: no declared config to apply", rp.Label())
		}
		if rp.Action == ActionMigrate {
			st, err := migrateStep(js, rp, r, live, opts)
			if err != nil {
				return nil, err
			}
			steps = append(steps, st)
			if r.Kind == KindStream {
				continue // migrated straight into its declared config
			}
			// A bucket's stream was migrated with only what forced it
			// changed; the bucket's declared config is an update away.
		}
		steps = append(steps, putStep(js, rp, r, live, nil))
	}
	// 4. Consumers, created or updated with the explicit action.
	for _, rp := range consumers {
		if rp.Action == ActionCreate || rp.Action == ActionUpdate || rp.Action == ActionReplace {
			r := resourceOf(rp)
			if r == nil {
				return nil, fmt.Errorf("%s: no declared config to apply", rp.Label())
			}
			st := putStep(js, rp, r, live, streamCfg(rp.Stream))
			if parent := byStream[rp.Stream]; parent != nil && parent.Action == ActionMigrate && rp.Action == ActionUpdate {
				managed := live.metadata(r.Kind, r.Stream, r.Name)[ManagedKey] == "true"
				st = keepReseat(js, st, r, managed, hashView(view(r.Kind, r.config(), streamCfg(rp.Stream))))
			}
			steps = append(steps, st)
		}
	}
	return steps, nil
}

func streamDeps(c *jetstream.StreamConfig) []string {
	var deps []string
	if c.Mirror != nil && c.Mirror.External == nil {
		deps = append(deps, c.Mirror.Name)
	}
	for _, s := range c.Sources {
		if s != nil && s.External == nil {
			deps = append(deps, s.Name)
		}
	}
	return deps
}

// topoOrder orders resources so that each comes after the streams it
// depends on (within the set), keeping the plan's order otherwise.
func topoOrder(rps []*ResourcePlan, deps func(*ResourcePlan) []string) []*ResourcePlan {
	index := map[string]*ResourcePlan{}
	for _, rp := range rps {
		index[streamNameOf(rp.Kind, "", rp.Name)] = rp
	}
	done := map[*ResourcePlan]bool{}
	visiting := map[*ResourcePlan]bool{}
	var out []*ResourcePlan
	var visit func(rp *ResourcePlan)
	visit = func(rp *ResourcePlan) {
		if done[rp] || visiting[rp] {
			return
		}
		visiting[rp] = true
		d := deps(rp)
		sort.Strings(d)
		for _, name := range d {
			if dep := index[name]; dep != nil {
				visit(dep)
			}
		}
		visiting[rp] = false
		done[rp] = true
		out = append(out, rp)
	}
	for _, rp := range rps {
		visit(rp)
	}
	return out
}

func deleteStep(js jetstream.JetStream, rp *ResourcePlan) Step {
	st := Step{Resource: rp.Label(), Op: ActionDelete}
	st.run = func(ctx context.Context, _ *Step) error {
		var err error
		switch rp.Kind {
		case KindConsumer:
			err = js.DeleteConsumer(ctx, rp.Stream, rp.Name)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				err = nil
			}
		case KindKV:
			err = js.DeleteKeyValue(ctx, rp.Name)
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				err = nil
			}
		case KindObjectStore:
			err = js.DeleteObjectStore(ctx, rp.Name)
			if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				err = nil
			}
		default:
			err = js.DeleteStream(ctx, rp.Name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				err = nil
			}
		}
		return err
	}
	return st
}

// putStep creates or updates a resource. A replaced resource was deleted
// by an earlier step, so it is created; a migrated one is updated.
func putStep(js jetstream.JetStream, rp *ResourcePlan, r *Resource, live *Live, streamCfg *jetstream.StreamConfig) Step {
	create := rp.Action == ActionCreate || rp.Action == ActionReplace
	op := ActionUpdate
	if create {
		op = ActionCreate
	}
	st := Step{Resource: rp.Label(), Op: op}
	managed := create || live.metadata(r.Kind, r.Stream, r.Name)[ManagedKey] == "true"
	hash := hashView(view(r.Kind, r.config(), streamCfg))
	put := func(ctx context.Context) error {
		var err error
		switch r.Kind {
		case KindStream:
			cfg := *r.StreamConfig
			cfg.Metadata = withMarks(cfg.Metadata, managed, hash)
			if create {
				_, err = js.CreateStream(ctx, cfg)
			} else {
				_, err = js.UpdateStream(ctx, cfg)
			}
		case KindConsumer:
			cfg := *r.ConsumerConfig
			// Declared consumers are durable: without durable_name the server
			// would remove them after inactive_threshold.
			cfg.Name, cfg.Durable = r.Name, r.Name
			cfg.Metadata = withMarks(cfg.Metadata, managed, hash)
			// A consumer a migration re-seated keeps its start (the server
			// refuses to change deliver_policy) and its mark.
			if ci := live.Consumers[r.Stream][r.Name]; !create && ci != nil {
				if from, ok := reseatedFrom(&ci.Config); ok && from == cfg.DeliverPolicy {
					cfg.DeliverPolicy, cfg.OptStartSeq = ci.Config.DeliverPolicy, ci.Config.OptStartSeq
					cfg.Metadata[ReseatedFromKey] = ci.Config.Metadata[ReseatedFromKey]
				}
			}
			if create {
				_, err = js.CreateConsumer(ctx, r.Stream, cfg)
			} else {
				_, err = js.UpdateConsumer(ctx, r.Stream, cfg)
			}
		case KindKV:
			cfg := *r.KeyValueConfig
			cfg.Metadata = withMarks(cfg.Metadata, managed, hash)
			if create {
				_, err = js.CreateKeyValue(ctx, cfg)
			} else {
				_, err = js.UpdateKeyValue(ctx, cfg)
			}
		case KindObjectStore:
			cfg := *r.ObjectStoreConfig
			cfg.Metadata = withMarks(cfg.Metadata, managed, hash)
			if create {
				_, err = js.CreateObjectStore(ctx, cfg)
			} else {
				_, err = js.UpdateObjectStore(ctx, cfg)
			}
		}
		return err
	}
	first := moveOrScaleFirst(rp, r, live)
	st.run = func(ctx context.Context, _ *Step) error {
		if first == nil {
			return put(ctx)
		}
		if _, err := js.UpdateStream(ctx, *first); err != nil {
			return err
		}
		if err := retryWhileReconfiguring(ctx, put); err != nil {
			return err
		}
		replicas, _ := r.replicasAndPlacement()
		return waitSettled(ctx, js, r.StreamName(), replicas)
	}
	return st
}

// keepReseat wraps the update of a consumer of a migrated stream: if the
// migration re-seated it by start sequence (ReseatedFromKey), the update
// keeps that start and the mark, which the server would otherwise refuse
// to change (deliver_policy is immutable) or which plan needs.
func keepReseat(js jetstream.JetStream, st Step, r *Resource, managed bool, hash string) Step {
	update := st.run
	st.run = func(ctx context.Context, s *Step) error {
		c, err := js.Consumer(ctx, r.Stream, r.Name)
		if err != nil {
			return err
		}
		live := c.CachedInfo().Config
		if from, ok := reseatedFrom(&live); !ok || from != r.ConsumerConfig.DeliverPolicy {
			return update(ctx, s)
		}
		cfg := *r.ConsumerConfig
		cfg.Name, cfg.Durable = r.Name, r.Name
		cfg.DeliverPolicy, cfg.OptStartSeq = live.DeliverPolicy, live.OptStartSeq
		cfg.Metadata = withMarks(cfg.Metadata, managed, hash)
		cfg.Metadata[ReseatedFromKey] = live.Metadata[ReseatedFromKey]
		_, err = js.UpdateConsumer(ctx, r.Stream, cfg)
		return err
	}
	return st
}

// moveOrScaleFirst is the update that must come before the declared one
// when it changes both num_replicas and to a new placement, which the
// server refuses in one update (10123): the live config with only the
// placement changed when scaling up (so that fewer replicas move), or only
// the replicas when scaling down. It is nil when no such update is needed;
// dropping a placement is not a move and goes in one update.
func moveOrScaleFirst(rp *ResourcePlan, r *Resource, live *Live) *jetstream.StreamConfig {
	if rp.Action != ActionUpdate || !rp.movesAndScales() {
		return nil
	}
	replicas, placement := r.replicasAndPlacement()
	si := live.Streams[r.StreamName()]
	if si == nil {
		return nil
	}
	cfg := si.Config
	if replicas > cfg.Replicas {
		cfg.Placement = placement
	} else {
		cfg.Replicas = replicas
	}
	return &cfg
}

// movesAndScales reports whether an update changes num_replicas and moves
// the resource to a new placement (not merely drops its placement).
func (rp *ResourcePlan) movesAndScales() bool {
	if rp.res == nil || rp.Kind == KindConsumer {
		return false
	}
	_, placement := rp.res.replicasAndPlacement()
	return placement != nil && rp.changes("num_replicas") && rp.changes("placement")
}

// changes reports whether the plan changes the field at path or a field
// under it.
func (rp *ResourcePlan) changes(path string) bool {
	for _, c := range rp.Changes {
		if c.Path == path || strings.HasPrefix(c.Path, path+".") {
			return true
		}
	}
	return false
}

// reconfigureWait bounds how long apply waits for a stream move or scale
// to finish before the next update of the same stream.
const reconfigureWait = 5 * time.Minute

// retryWhileReconfiguring runs update until the server stops refusing it
// because a move (10124) or another reconfiguration (10226) of the stream
// is still in progress, for at most reconfigureWait. Those refusals are
// not retry.Transient (an answer: the server is busy with the stream, for
// minutes), and a transient error is not retried here: five minutes of
// tries would hide a server that is gone.
func retryWhileReconfiguring(ctx context.Context, update func(context.Context) error) error {
	return retry.Do(ctx, retry.Policy{
		Within: reconfigureWait, Pause: 100 * time.Millisecond, MaxPause: 2 * time.Second,
		Retryable: func(err error) bool {
			var apiErr *jetstream.APIError
			return errors.As(err, &apiErr) &&
				(apiErr.ErrorCode == jsErrMoveInProgress || apiErr.ErrorCode == jsErrReconfigureInProgress)
		},
	}, update)
}

// errNotSettled is a stream still moving or scaling, for waitSettled.
var errNotSettled = errors.New("not settled")

// waitSettled waits, for at most reconfigureWait, until the stream has a
// leader and exactly its replicas, all current: a move or scale the server
// still carries out makes it briefly unlisted, or lists the peers of both
// placements.
func waitSettled(ctx context.Context, js jetstream.JetStream, stream string, replicas int) error {
	err := retry.Do(ctx, retry.Policy{Within: reconfigureWait, Pause: 100 * time.Millisecond, MaxPause: time.Second},
		func(ctx context.Context) error {
			s, err := js.Stream(ctx, stream)
			if err == nil {
				ci := s.CachedInfo().Cluster
				if ci == nil || settled(ci, max(replicas, 1)) {
					return nil
				}
			}
			return errNotSettled
		})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("stream %q: still moving or scaling after %s", stream, reconfigureWait)
}

func settled(ci *jetstream.ClusterInfo, replicas int) bool {
	if ci.Leader == "" || len(ci.Replicas)+1 != replicas {
		return false
	}
	for _, p := range ci.Replicas {
		if !p.Current || p.Offline {
			return false
		}
	}
	return true
}

// The server's errors for an update that comes too early.
const (
	jsErrMoveInProgress        jetstream.ErrorCode = 10124
	jsErrReconfigureInProgress jetstream.ErrorCode = 10226
)

// migrateStep replaces the stream behind rp by one of the same name with
// the declared config (a bucket's: see migrationTarget), keeping its
// messages, sequences and consumer positions (migrate.Replace). The
// stream keeps jetctl's managed mark as it was: a migration is not a
// create.
func migrateStep(js jetstream.JetStream, rp *ResourcePlan, r *Resource, live *Live, aopts ApplyOptions) (Step, error) {
	st := Step{Resource: rp.Label(), Op: ActionMigrate}
	target, err := markedTarget(rp, r, live)
	if err != nil {
		return st, err
	}
	label := rp.Label()
	st.run = func(ctx context.Context, st *Step) error {
		opts := migrate.ReplaceOptions{AtStep: aopts.AtStep}
		if aopts.Progress != nil {
			opts.Progress = func(p migrate.Progress) { aopts.Progress(label, p) }
		}
		sum, err := replaceStream(ctx, js, *target, opts)
		st.Migration = sum
		if err != nil {
			return err
		}
		return markReseated(ctx, js, target.Name, sum, live.Consumers[target.Name])
	}
	return st, nil
}

// markedTarget is the config migrate.Replace gets for rp: the migration's
// target (see migrationTarget), with jetctl's marks on a stream.
func markedTarget(rp *ResourcePlan, r *Resource, live *Live) (*jetstream.StreamConfig, error) {
	si := live.Streams[r.StreamName()]
	if si == nil {
		return nil, fmt.Errorf("%s: not on the server, nothing to migrate", rp.Label())
	}
	target, err := migrationTarget(r, si)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rp.Label(), err)
	}
	if r.Kind == KindStream {
		managed := si.Config.Metadata[ManagedKey] == "true"
		target.Metadata = withMarks(target.Metadata, managed, hashView(view(r.Kind, r.config(), nil)))
	}
	return target, nil
}

// CheckMigrations asks the engine, changing nothing, whether each
// migration of p would start, and what it would move (migrate.Replace's
// dry run): one step per migration, its Migration the engine's summary.
// The first migration the engine refuses is the error, naming it.
func CheckMigrations(ctx context.Context, js jetstream.JetStream, p *Plan, live *Live) ([]Step, error) {
	desired, err := DesiredFromPlan(p)
	if err != nil {
		return nil, err
	}
	steps := []Step{}
	for _, rp := range p.Resources {
		if rp.Action != ActionMigrate {
			continue
		}
		r := desired.find(rp.Kind, rp.Stream, rp.Name)
		if r == nil {
			return nil, fmt.Errorf("%s: no declared config to apply", rp.Label())
		}
		if _, ok := interrupted(live, r.StreamName()); ok {
			// Finishing an interrupted migration: migrate.Replace's dry run
			// does not stop before a second move (it would run it), so it
			// is not asked.
			steps = append(steps, Step{Resource: rp.Label(), Op: ActionMigrate, Error: "not checked: it finishes an interrupted migration"})
			continue
		}
		target, err := markedTarget(rp, r, live)
		if err != nil {
			return nil, err
		}
		sum, err := replaceStream(ctx, js, *target, migrate.ReplaceOptions{DryRun: true})
		if err != nil {
			return nil, fmt.Errorf("%s: the migration would fail: %w", rp.Label(), err)
		}
		steps = append(steps, Step{Resource: rp.Label(), Op: ActionMigrate, Migration: sum})
	}
	return steps, nil
}
