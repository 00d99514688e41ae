package plan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
)

// FormatVersion is the version of the JSON plan (plan -o json).
const FormatVersion = 1

// Action is what apply does to a resource.
type Action string

// Actions, with their plan symbols: + create, ~ update, -/+ replace,
// <~> migrate, - delete.
const (
	ActionNone    Action = "no-op"
	ActionCreate  Action = "create"
	ActionUpdate  Action = "update"
	ActionReplace Action = "replace"
	// ActionMigrate replaces a stream, bucket or object store by one of the
	// same name keeping its data and consumer positions (apply --migrate).
	ActionMigrate Action = "migrate"
	ActionDelete  Action = "delete"
)

// Mutability says how the server can change a field.
type Mutability string

// Mutability classes (JETSTREAM-FACTS.md, config updates).
const (
	// InPlace: the server updates the field on the live resource.
	InPlace Mutability = "in_place"
	// OneWay: the server changes the field in one direction only (e.g.
	// sealed false → true); the other direction forces replacement.
	OneWay Mutability = "one_way"
	// Immutable: any change forces replacement.
	Immutable Mutability = "immutable"
	// Refused: the server refuses the change on a live resource (mirror
	// changes, retention to or from workqueue); only replacement gets there.
	Refused Mutability = "refused"
)

// Plan is the machine-readable plan (plan -o json), versioned by
// FormatVersion.
type Plan struct {
	FormatVersion int `json:"format_version"`
	// Fingerprint covers the live configs of every resource in the plan;
	// apply --plan-file refuses a plan whose fingerprint no longer matches.
	Fingerprint string `json:"fingerprint"`
	Prune       bool   `json:"prune"`
	// Migrate is true when the plan migrates what it can instead of
	// replacing it (plan --migrate); apply --plan-file takes it from here.
	Migrate   bool            `json:"migrate"`
	Summary   Summary         `json:"summary"`
	Resources []*ResourcePlan `json:"resources"`
	// Ignored are resources that --prune leaves alone because jetctl did not
	// create them. Like every list in the JSON plan it is [] when empty,
	// never null or absent, so that `--jq '.ignored[]'` works.
	Ignored []Ignored `json:"ignored"`
}

// Summary counts the actions.
type Summary struct {
	Add         int  `json:"add"`
	Change      int  `json:"change"`
	Replace     int  `json:"replace"`
	Migrate     int  `json:"migrate"`
	Destroy     int  `json:"destroy"`
	Drift       int  `json:"drift"`
	Destructive bool `json:"destructive"`
}

// ResourcePlan is the plan for one resource.
type ResourcePlan struct {
	Kind   Kind   `json:"kind"`
	Stream string `json:"stream,omitempty"`
	Name   string `json:"name"`
	Action Action `json:"action"`
	// Reason explains a replace, migrate or delete.
	Reason string `json:"reason,omitempty"`
	// Destructive is true when the action loses data: replace, delete, or
	// an in-place change that removes messages.
	Destructive bool `json:"destructive"`
	// Drift is true when the live resource changed outside jetctl since
	// jetctl last applied it.
	Drift    bool          `json:"drift"`
	Managed  bool          `json:"managed"`
	Changes  []FieldChange `json:"changes"`
	Warnings []string      `json:"warnings"`
	// Migration is set on a replaced or migrated stream, bucket or object
	// store: whether its data can be kept, and how much there is.
	Migration *Migration `json:"migration,omitempty"`
	// LiveFingerprint identifies the live config ("" when absent).
	LiveFingerprint string `json:"live_fingerprint"`
	// Config is the declared config, in the server's JSON form.
	Config json.RawMessage `json:"config,omitempty"`
	// Declared is where the file declares the resource.
	Declared string `json:"declared,omitempty"`

	res *Resource
}

// FieldChange is one field that differs between the server and the files.
type FieldChange struct {
	Path              string     `json:"path"`
	Before            any        `json:"before"`
	After             any        `json:"after"`
	Mutability        Mutability `json:"mutability"`
	ForcesReplacement bool       `json:"forces_replacement,omitempty"`
	Destructive       bool       `json:"destructive,omitempty"`
	Reason            string     `json:"reason,omitempty"`
}

// NotManaged is the reason --prune leaves a resource that jetctl did not
// create.
const NotManaged = "not managed by jetctl"

// Ignored is an undeclared resource that jetctl does not manage.
type Ignored struct {
	Kind   Kind   `json:"kind"`
	Stream string `json:"stream,omitempty"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ID names the resource: "stream ORDERS", "consumer ORDERS/ship".
func (rp *ResourcePlan) ID() string { return resourceID(rp.Kind, rp.Stream, rp.Name) }

// Label names the resource in messages.
func (rp *ResourcePlan) Label() string { return resourceLabel(rp.Kind, rp.Stream, rp.Name) }

// Changed reports whether the plan changes anything.
func (p *Plan) Changed() bool {
	for _, r := range p.Resources {
		if r.Action != ActionNone {
			return true
		}
	}
	return false
}

// Options tune planning.
type Options struct {
	// Prune plans the deletion of managed resources the files no longer
	// declare.
	Prune bool
	// LeaderWait bounds the wait for a stream or consumer without a leader
	// (see FetchLive); 0 is DefaultLeaderWait.
	LeaderWait time.Duration
	// Migrate plans a migration, keeping data and consumer positions,
	// instead of each replacement of a stream, bucket or object store that
	// can keep them (see Migration).
	Migrate bool
}

// Make reads the live server and computes the plan for desired. What the
// server would refuse and can be known ahead (see CheckServer) is a
// *RefusedError: apply calls Make before its first change, so a refused
// resource leaves everything untouched.
func Make(ctx context.Context, js jetstream.JetStream, desired *Desired, opts Options) (*Plan, *Live, error) {
	wanted := map[string]bool{}
	for _, r := range desired.Resources {
		wanted[r.StreamName()] = true
	}
	live, err := FetchLive(ctx, js, func(stream string) bool {
		orig, temp := migrationTempOf(stream)
		return opts.Prune || wanted[stream] || (temp && wanted[orig])
	}, opts.LeaderWait)
	if err != nil {
		return nil, nil, err
	}
	live = resumeView(live, desired)
	p, err := Compute(desired, live, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := assessDataLoss(ctx, js, p, live); err != nil {
		return nil, nil, err
	}
	estimateMigrations(ctx, js, p, live)
	assessWorkqueueKeep(ctx, js, p, live)
	lim, err := FetchServerLimits(ctx, js)
	if err != nil {
		return nil, nil, err
	}
	live.Limits = lim
	if problems := CheckServer(p, live, lim); len(problems) > 0 {
		return nil, nil, &RefusedError{Problems: problems}
	}
	return p, live, nil
}

// Compute compares desired with live. It contacts nothing: message counts
// for data-loss warnings are added by Make.
func Compute(desired *Desired, live *Live, opts Options) (*Plan, error) {
	p := &Plan{FormatVersion: FormatVersion, Prune: opts.Prune, Migrate: opts.Migrate, Resources: []*ResourcePlan{}}
	adoptRetrySubjects(desired, live)
	byStream := map[string]*ResourcePlan{}
	for _, r := range desired.Resources {
		if r.Kind == KindConsumer {
			continue
		}
		rp := planResource(r, live, nil, nil)
		planMigration(rp, live, opts.Migrate)
		if temp, ok := interrupted(live, r.StreamName()); ok {
			planResume(rp, live, temp, opts.Migrate)
		}
		byStream[r.StreamName()] = rp
		p.Resources = append(p.Resources, rp)
	}
	for _, r := range desired.Resources {
		if r.Kind != KindConsumer {
			continue
		}
		parent := byStream[r.Stream]
		var desiredStream *jetstream.StreamConfig
		if parent != nil && parent.res.Kind == KindStream {
			desiredStream = parent.res.StreamConfig
		} else if si := live.Streams[r.Stream]; si != nil {
			desiredStream = &si.Config
		} else {
			return nil, fmt.Errorf("%s: stream %q is neither declared nor on the server (declared at %s)", r.Label(), r.Stream, r.Pos)
		}
		p.Resources = append(p.Resources, planResource(r, live, desiredStream, parent))
	}
	if opts.Prune {
		prune(p, desired, live)
	}
	finish(p)
	return p, nil
}

func planResource(r *Resource, live *Live, desiredStream *jetstream.StreamConfig, parent *ResourcePlan) *ResourcePlan {
	rp := &ResourcePlan{Kind: r.Kind, Stream: r.Stream, Name: r.Name, res: r, Declared: r.Pos.String()}
	rp.Config = marshalConfig(r.config())
	liveCfg := live.liveConfig(r.Kind, r.Stream, r.Name)
	rp.LiveFingerprint = fingerprint(live.rawConfig(r.Kind, r.Stream, r.Name))
	if liveCfg == nil {
		rp.Action = ActionCreate
		return rp
	}
	md := live.metadata(r.Kind, r.Stream, r.Name)
	rp.Managed = md[ManagedKey] == "true"

	var liveStream *jetstream.StreamConfig
	if r.Kind == KindConsumer {
		if si := live.Streams[r.Stream]; si != nil {
			liveStream = &si.Config
		}
	}
	before := view(r.Kind, liveCfg, liveStream)
	after := view(r.Kind, r.config(), desiredStream)
	// Drift: the server no longer holds what jetctl last applied, and
	// differs from the files. (When it matches the files again there is
	// nothing to report.)
	drifted := md[AppliedKey] != "" && md[AppliedKey] != hashView(before)
	var info *jetstream.StreamInfo
	if r.Kind != KindConsumer {
		info = live.Streams[r.StreamName()]
	}
	for _, path := range diffPaths(before, after, "") {
		b, a := lookupPath(before, path), lookupPath(after, path)
		fc := FieldChange{Path: path, Before: b, After: a}
		classify(r.Kind, &fc, desiredStream, info)
		rp.Changes = append(rp.Changes, fc)
	}
	rp.Drift = drifted && len(rp.Changes) > 0
	if parent != nil && parent.Action == ActionReplace {
		rp.Action = ActionReplace
		rp.Reason = fmt.Sprintf("its stream %q is replaced", r.Stream)
		rp.Destructive = true
		return rp
	}
	switch {
	case len(rp.Changes) == 0:
		rp.Action = ActionNone
	case anyForces(rp.Changes):
		rp.Action = ActionReplace
		rp.Destructive = true
		for i := range rp.Changes {
			c := &rp.Changes[i]
			if c.ForcesReplacement && rp.Reason == "" {
				rp.Reason = c.Reason
			}
			// The data goes with the replacement, not with the new limits.
			if c.Destructive && !c.ForcesReplacement {
				c.Destructive, c.Reason = false, ""
			}
		}
	default:
		rp.Action = ActionUpdate
		for _, c := range rp.Changes {
			rp.Destructive = rp.Destructive || c.Destructive
		}
		if rp.movesAndScales() {
			rp.Warnings = append(rp.Warnings, "moves and scales in two updates (the server refuses both in one); apply waits for the move in between")
		}
	}
	return rp
}

// marshalConfig is the config's JSON, without HTML escaping of > in
// subjects.
func marshalConfig(cfg any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(cfg)
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

func anyForces(changes []FieldChange) bool {
	for _, c := range changes {
		if c.ForcesReplacement {
			return true
		}
	}
	return false
}

// prune adds deletions of managed, undeclared resources and lists the
// unmanaged ones as ignored.
func prune(p *Plan, desired *Desired, live *Live) {
	deletedStreams := map[string]bool{}
	names := live.streamNames()
	for _, sname := range names {
		si := live.Streams[sname]
		kind, name := kindOfStream(sname)
		if desired.find(kind, "", name) != nil {
			continue
		}
		if orig, ok := migrationTempOf(sname); ok {
			// It may hold the only copy of orig's data.
			p.Ignored = append(p.Ignored, Ignored{Kind: kind, Name: name,
				Reason: fmt.Sprintf("the temporary stream of a migration of %q: apply --migrate finishes it", orig)})
			continue
		}
		if si.Config.Metadata[ManagedKey] != "true" {
			p.Ignored = append(p.Ignored, Ignored{Kind: kind, Name: name, Reason: NotManaged})
			continue
		}
		deletedStreams[sname] = true
		rp := &ResourcePlan{Kind: kind, Name: name, Action: ActionDelete, Destructive: true, Managed: true,
			Reason: "managed by jetctl and no longer declared", LiveFingerprint: fingerprint(&si.Config)}
		if si.State.Msgs > 0 {
			rp.Warnings = append(rp.Warnings, fmt.Sprintf("deletes %d messages", si.State.Msgs))
		}
		for cname, ci := range live.Consumers[sname] {
			if target, mirror := jsapi.ReplicationTarget(ci.Config.Metadata); target != "" {
				rp.Warnings = append(rp.Warnings, fmt.Sprintf("also deletes consumer %q, through which stream %s %s this stream", cname, target, copyVerb(mirror)))
			} else if ci.Config.Metadata[ManagedKey] != "true" {
				rp.Warnings = append(rp.Warnings, fmt.Sprintf("also deletes consumer %q, which jetctl does not manage", cname))
			}
		}
		sort.Strings(rp.Warnings)
		p.Resources = append(p.Resources, rp)
	}
	for _, sname := range names {
		if _, ok := migrationTempOf(sname); ok {
			continue
		}
		consumers := live.Consumers[sname]
		cnames := make([]string, 0, len(consumers))
		for c := range consumers {
			cnames = append(cnames, c)
		}
		sort.Strings(cnames)
		for _, cname := range cnames {
			ci := consumers[cname]
			if desired.find(KindConsumer, sname, cname) != nil {
				continue
			}
			if target, mirror := jsapi.ReplicationTarget(ci.Config.Metadata); target != "" {
				if !deletedStreams[sname] {
					p.Ignored = append(p.Ignored, Ignored{Kind: KindConsumer, Stream: sname, Name: cname, Reason: replicationReason(target, mirror)})
				}
				continue
			}
			if ci.Config.Metadata[ManagedKey] != "true" {
				if !deletedStreams[sname] {
					p.Ignored = append(p.Ignored, Ignored{Kind: KindConsumer, Stream: sname, Name: cname, Reason: NotManaged})
				}
				continue
			}
			rp := &ResourcePlan{Kind: KindConsumer, Stream: sname, Name: cname, Action: ActionDelete, Destructive: true, Managed: true,
				Reason: "managed by jetctl and no longer declared", LiveFingerprint: fingerprint(&ci.Config)}
			if deletedStreams[sname] {
				rp.Reason = "its stream is deleted"
			}
			p.Resources = append(p.Resources, rp)
		}
	}
}

// copyVerb says how a stream copies another: through a mirror or a
// source.
func copyVerb(mirror bool) string {
	if mirror {
		return "mirrors"
	}
	return "sources"
}

// replicationReason is why a replication consumer is left alone.
func replicationReason(target string, mirror bool) string {
	return fmt.Sprintf("the server's own: stream %s %s this stream through it", target, copyVerb(mirror))
}

// finish counts the summary and the fingerprint, and makes every empty
// list [] rather than null.
func finish(p *Plan) {
	s := Summary{}
	h := sha256.New()
	if p.Ignored == nil {
		p.Ignored = []Ignored{}
	}
	for _, r := range p.Resources {
		if r.Changes == nil {
			r.Changes = []FieldChange{}
		}
		if r.Warnings == nil {
			r.Warnings = []string{}
		}
		switch r.Action {
		case ActionCreate:
			s.Add++
		case ActionUpdate:
			s.Change++
		case ActionReplace:
			s.Replace++
		case ActionMigrate:
			s.Migrate++
		case ActionDelete:
			s.Destroy++
		}
		if r.Drift {
			s.Drift++
		}
		s.Destructive = s.Destructive || r.Destructive
		fmt.Fprintf(h, "%s=%s\n", r.ID(), r.LiveFingerprint)
	}
	p.Summary = s
	p.Fingerprint = "sha256:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// diffPaths lists the paths whose values differ, descending into nested
// objects (placement.cluster, metadata.owner) but comparing lists whole.
func diffPaths(before, after map[string]any, prefix string) []string {
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []string
	for _, k := range sorted {
		b, a := before[k], after[k]
		if reflect.DeepEqual(a, b) {
			continue
		}
		bm, bIsMap := b.(map[string]any)
		am, aIsMap := a.(map[string]any)
		// Descend only into plain objects; a mirror or source that changes is
		// reported whole.
		if (bIsMap || b == nil) && (aIsMap || a == nil) && (bIsMap || aIsMap) && k != "mirror" && k != "republish" {
			out = append(out, diffPaths(bm, am, joinPath(prefix, k))...)
			continue
		}
		out = append(out, joinPath(prefix, k))
	}
	return out
}

func lookupPath(m map[string]any, path string) any {
	// Metadata keys may hold dots themselves.
	if key, ok := strings.CutPrefix(path, "metadata."); ok {
		md, _ := m["metadata"].(map[string]any)
		return md[key]
	}
	var cur any = m
	for _, part := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[part]
	}
	return cur
}

// StaleError says that the server changed since a saved plan was made.
type StaleError struct {
	Changed []string
}

func (e *StaleError) Error() string {
	return "the saved plan is stale: " + strings.Join(e.Changed, "; ") + "; plan again"
}

// CheckStale compares the live fingerprints a saved plan was computed
// against with those of a fresh plan of the same resources.
func CheckStale(saved, fresh *Plan) error {
	if saved.Fingerprint == fresh.Fingerprint {
		return nil
	}
	before := map[string]string{}
	for _, r := range saved.Resources {
		before[r.ID()] = r.LiveFingerprint
	}
	var changed []string
	for _, r := range fresh.Resources {
		old, ok := before[r.ID()]
		delete(before, r.ID())
		switch {
		case !ok:
			changed = append(changed, r.Label()+" is new to the plan")
		case old == "" && r.LiveFingerprint != "":
			changed = append(changed, r.Label()+" was created")
		case old != "" && r.LiveFingerprint == "":
			changed = append(changed, r.Label()+" was deleted")
		case old != r.LiveFingerprint:
			changed = append(changed, r.Label()+" changed")
		}
	}
	for id := range before {
		changed = append(changed, id+" is no longer in the plan")
	}
	sort.Strings(changed)
	if len(changed) == 0 {
		changed = []string{"the set of resources changed"}
	}
	return &StaleError{Changed: changed}
}
