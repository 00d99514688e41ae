package plan

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// migrationLive is a server holding ORDERS (file, limits, 530 messages,
// consumer billing managed by jetctl, an undeclared one, audit, and two
// that a migration does not re-seat), the
// KV bucket cfg and the object store files, all file storage, and the
// mirror BACKUP.
func migrationLive() *Live {
	managed := map[string]string{ManagedKey: "true"}
	return &Live{
		Streams: map[string]*jetstream.StreamInfo{
			"ORDERS": {Config: jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage, Metadata: managed},
				State: jetstream.StreamState{Msgs: 530, Bytes: 66_000, FirstSeq: 1, LastSeq: 530, Consumers: 4}},
			"BACKUP": {Config: jetstream.StreamConfig{Name: "BACKUP", Mirror: &jetstream.StreamSource{Name: "ORDERS"}},
				State: jetstream.StreamState{Msgs: 530, Bytes: 66_000}},
			"KV_cfg": {Config: jetstream.StreamConfig{Name: "KV_cfg", Subjects: []string{"$KV.cfg.>"}, MaxMsgsPerSubject: 10,
				AllowRollup: true, DenyDelete: true, AllowDirect: true, Discard: jetstream.DiscardNew,
				Metadata: map[string]string{"_nats.level": "1", migrateStateKey: "{}"}},
				State: jetstream.StreamState{Msgs: 3, Bytes: 300}},
			"OBJ_files": {Config: jetstream.StreamConfig{Name: "OBJ_files", Subjects: []string{"$O.files.C.>", "$O.files.M.>"}, AllowRollup: true, AllowDirect: true, Discard: jetstream.DiscardNew},
				State: jetstream.StreamState{Msgs: 4, Bytes: 4096}},
		},
		Consumers: map[string]map[string]*jetstream.ConsumerInfo{
			"ORDERS": {
				"billing": {Name: "billing", Config: jetstream.ConsumerConfig{Durable: "billing", FilterSubject: "orders.paid", AckPolicy: jetstream.AckExplicitPolicy, Metadata: managed}},
				"audit":   {Name: "audit", Config: jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckNonePolicy}},
				// Neither re-seated nor checked: an ephemeral consumer, and a
				// mirror's reader.
				"watch1": {Name: "watch1", Config: jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy}},
				"mirror": {Name: "mirror", Config: jetstream.ConsumerConfig{Durable: "mirror", AckPolicy: jetstream.AckNonePolicy, Metadata: map[string]string{"_nats.mirror.BACKUP": "1"}}},
			},
		},
	}
}

func loadPlan(t *testing.T, src string) *Desired {
	t.Helper()
	d, err := Load([]Source{{Name: "p.yaml", Data: []byte(src)}}, noVars)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return d
}

func resource(t *testing.T, p *Plan, id string) *ResourcePlan {
	t.Helper()
	for _, rp := range p.Resources {
		if rp.ID() == id {
			return rp
		}
	}
	t.Fatalf("no %s in the plan", id)
	return nil
}

const ordersMemory = `streams:
  - name: ORDERS
    subjects: [orders.>]
    storage: memory
    consumers:
      - name: billing
        filter_subject: orders.paid
`

// A replacement that can keep its data stays a destructive replacement
// unless the plan migrates: then it is a migration, not destructive, and
// its consumers are planned on their own changes.
func TestMigrationOfAStream(t *testing.T) {
	p, err := Compute(loadPlan(t, ordersMemory), migrationLive(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rp := resource(t, p, "stream ORDERS")
	if rp.Action != ActionReplace || !rp.Destructive {
		t.Fatalf("without --migrate: %s destructive=%v, want a destructive replace", rp.Action, rp.Destructive)
	}
	want := &Migration{Migratable: true, Stream: "ORDERS", Via: migrate.TempName("ORDERS"), Messages: 530, Bytes: 66_000, Consumers: 2}
	if !reflect.DeepEqual(rp.Migration, want) {
		t.Errorf("migration = %+v, want %+v", rp.Migration, want)
	}
	if c := resource(t, p, "consumer ORDERS/billing"); c.Action != ActionReplace {
		t.Errorf("consumer of a replaced stream: %s, want replace", c.Action)
	}
	if p.Migrate || p.Summary.Migrate != 0 || p.Summary.Replace != 2 {
		t.Errorf("summary %+v migrate=%v", p.Summary, p.Migrate)
	}

	p, err = Compute(loadPlan(t, ordersMemory), migrationLive(), Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	rp = resource(t, p, "stream ORDERS")
	if rp.Action != ActionMigrate || rp.Destructive {
		t.Fatalf("with --migrate: %s destructive=%v, want a migration that keeps the data", rp.Action, rp.Destructive)
	}
	if len(rp.Changes) != 1 || rp.Changes[0].Path != "storage" || !rp.Changes[0].ForcesReplacement {
		t.Errorf("changes = %+v, want storage forcing the migration", rp.Changes)
	}
	// billing is declared as it is on the server: the engine re-seats it
	// and the plan has nothing more to do.
	if c := resource(t, p, "consumer ORDERS/billing"); c.Action != ActionNone {
		t.Errorf("consumer of a migrated stream, unchanged: %s, want no-op", c.Action)
	}
	if !p.Migrate || p.Summary.Migrate != 1 || p.Summary.Replace != 0 || p.Summary.Destructive {
		t.Errorf("summary %+v migrate=%v", p.Summary, p.Migrate)
	}
}

// The consumers of a migrated stream get their own changes: in place,
// replaced (an immutable field), created.
func TestMigrationConsumers(t *testing.T) {
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    storage: memory
    consumers:
      - name: billing
        filter_subject: orders.paid
        max_deliver: 5
      - name: audit
        ack_policy: explicit
      - name: new
`
	p, err := Compute(loadPlan(t, src), migrationLive(), Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]Action{
		"stream ORDERS":           ActionMigrate,
		"consumer ORDERS/billing": ActionUpdate,
		"consumer ORDERS/audit":   ActionReplace,
		"consumer ORDERS/new":     ActionCreate,
	} {
		if got := resource(t, p, id).Action; got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	// Steps: the replaced consumer goes before the migration (so the engine
	// does not re-seat it), the migration, then the consumers.
	steps, err := buildSteps(nil, p, migrationLive(), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range steps {
		got = append(got, string(st.Op)+" "+st.Resource)
	}
	want := []string{
		`delete stream "ORDERS": consumer "audit"`,
		`migrate stream "ORDERS"`,
		`update stream "ORDERS": consumer "billing"`,
		`create stream "ORDERS": consumer "audit"`,
		`create stream "ORDERS": consumer "new"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Buckets and object stores migrate their stream with only the forcing
// fields changed, then update to the declared config.
func TestMigrationOfBuckets(t *testing.T) {
	src := `kv:
  - bucket: cfg
    history: 10
    storage: memory
object_stores:
  - bucket: files
    storage: memory
`
	live := migrationLive()
	p, err := Compute(loadPlan(t, src), live, Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"kv cfg", "object_store files"} {
		rp := resource(t, p, id)
		if rp.Action != ActionMigrate || rp.Migration == nil || !rp.Migration.Migratable {
			t.Fatalf("%s: %s %+v, want a migration", id, rp.Action, rp.Migration)
		}
		si := live.Streams[rp.res.StreamName()]
		target, err := migrationTarget(rp.res, si)
		if err != nil {
			t.Fatal(err)
		}
		want := si.Config
		want.Storage = jetstream.MemoryStorage
		want.Metadata = nil // the server's and the engine's keys are theirs to set
		if !reflect.DeepEqual(*target, want) {
			t.Errorf("%s: target\n%+v\nwant\n%+v", id, *target, want)
		}
	}
	if m := resource(t, p, "kv cfg").Migration; m.Stream != "KV_cfg" || m.Messages != 3 || m.Via != migrate.TempName("KV_cfg") {
		t.Errorf("kv migration %+v", m)
	}
	steps, err := buildSteps(nil, p, live, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range steps {
		got = append(got, string(st.Op)+" "+st.Resource)
	}
	want := []string{`migrate kv bucket "cfg"`, `update kv bucket "cfg"`, `migrate object store "files"`, `update object store "files"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// What cannot keep its data stays a destructive replacement, with the
// reason, with or without --migrate.
func TestMigrationRefused(t *testing.T) {
	for _, tt := range []struct{ name, src, id, reason string }{
		{"mirror", `streams:
  - name: BACKUP
    mirror: {name: ORDERS}
    storage: memory
`, "stream BACKUP", "mirror"},
		{"first_seq", `streams:
  - name: ORDERS
    subjects: [orders.>]
    first_seq: 1000
`, "stream ORDERS", "a migration keeps the sequences, so first_seq cannot change"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compute(loadPlan(t, tt.src), migrationLive(), Options{Migrate: true})
			if err != nil {
				t.Fatal(err)
			}
			rp := resource(t, p, tt.id)
			if rp.Action != ActionReplace || !rp.Destructive {
				t.Errorf("%s destructive=%v, want a destructive replace", rp.Action, rp.Destructive)
			}
			if m := rp.Migration; m == nil || m.Migratable || !strings.Contains(m.Reason, tt.reason) || m.Via != "" {
				t.Errorf("migration %+v, want not migratable because of %q", m, tt.reason)
			}
			if !p.Summary.Destructive || p.Summary.Migrate != 0 {
				t.Errorf("summary %+v", p.Summary)
			}
		})
	}
}

// A migration keeps the data, so a limit it lowers loses messages as it
// would in place: the migration is destructive then.
func TestMigrationLoweringALimitIsDestructive(t *testing.T) {
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    storage: memory
    max_msgs: 100
`
	p, err := Compute(loadPlan(t, src), migrationLive(), Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	rp := resource(t, p, "stream ORDERS")
	if rp.Action != ActionMigrate || !rp.Destructive {
		t.Fatalf("%s destructive=%v, want a destructive migration", rp.Action, rp.Destructive)
	}
	for _, c := range rp.Changes {
		if c.Path == "max_msgs" && !c.Destructive {
			t.Errorf("max_msgs: %+v, want destructive", c)
		}
	}
	// Without --migrate the data goes with the replacement, not the limit.
	p, _ = Compute(loadPlan(t, src), migrationLive(), Options{})
	for _, c := range resource(t, p, "stream ORDERS").Changes {
		if c.Path == "max_msgs" && c.Destructive {
			t.Errorf("max_msgs in a replacement: %+v, want not destructive on its own", c)
		}
	}
}

// Migrating to workqueue recreates the live consumers as they are: the
// server would refuse one that does not ack explicitly, or two whose
// filters overlap, unless the plan deletes or replaces them first.
func TestMigrationToWorkqueueChecksLiveConsumers(t *testing.T) {
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    retention: workqueue
    consumers:
      - name: billing
        filter_subject: orders.paid
`
	p, err := Compute(loadPlan(t, src), migrationLive(), Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if rp := resource(t, p, "stream ORDERS"); rp.Action != ActionMigrate {
		t.Fatalf("%s, want migrate", rp.Action)
	}
	problems := CheckServer(p, migrationLive(), ServerLimits{})
	if len(problems) != 2 || !strings.Contains(problems[0].Message, `consumer "audit", which the migration recreates as it is on the server: ack_policy: none`) ||
		!strings.Contains(problems[1].Message, `consumers "audit" and "billing", which the migration recreates as they are on the server: filter ">" overlaps "orders.paid"`) {
		t.Fatalf("problems %v, want audit's ack_policy and its filter", problems)
	}
	if problems[0].Pos.Line != 4 {
		t.Errorf("problem at %s, want the stream's retention (line 4)", problems[0].Pos)
	}
	// Declared with explicit acks, audit is replaced before the migration.
	src += "      - name: audit\n        ack_policy: explicit\n        filter_subject: orders.audit\n"
	p, err = Compute(loadPlan(t, src), migrationLive(), Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if problems := CheckServer(p, migrationLive(), ServerLimits{}); len(problems) != 0 {
		t.Errorf("problems %v, want none", problems)
	}
	// Without --migrate the stream is replaced and its consumers go.
	p, _ = Compute(loadPlan(t, strings.SplitN(src, "      - name: audit", 2)[0]), migrationLive(), Options{})
	if problems := CheckServer(p, migrationLive(), ServerLimits{}); len(problems) != 0 {
		t.Errorf("problems %v, want none for a replacement", problems)
	}
}

// A migration's temporary stream may hold the only copy of the data:
// --prune never deletes it, and the plan of its stream says so.
func TestMigrationTempStream(t *testing.T) {
	live := migrationLive()
	temp := migrate.TempName("ORDERS")
	live.Streams[temp] = &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: temp, Metadata: map[string]string{ManagedKey: "true", migrateStateKey: "{}"}}}
	live.Consumers[temp] = map[string]*jetstream.ConsumerInfo{"billing": {Name: "billing", Config: jetstream.ConsumerConfig{Durable: "billing", Metadata: map[string]string{ManagedKey: "true"}}}}
	p, err := Compute(loadPlan(t, ordersMemory), live, Options{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, rp := range p.Resources {
		if rp.Action == ActionDelete && (rp.Name == temp || rp.Stream == temp) {
			t.Errorf("prune deletes %s", rp.ID())
		}
	}
	found := false
	for _, ig := range p.Ignored {
		found = found || (ig.Name == temp && strings.Contains(ig.Reason, "apply --migrate finishes it"))
	}
	if !found {
		t.Errorf("ignored %+v, want %s with its reason", p.Ignored, temp)
	}
	if w := resource(t, p, "stream ORDERS").Warnings; len(w) != 1 || !strings.Contains(w[0], "interrupted migration") {
		t.Errorf("warnings %q", w)
	}
	if orig, ok := migrationTempOf(temp); !ok || orig != "ORDERS" {
		t.Errorf("migrationTempOf(%q) = %q, %v", temp, orig, ok)
	}
	if _, ok := migrationTempOf("ORDERS"); ok {
		t.Error("ORDERS is not a temporary stream")
	}
}

// The engine's estimate fills in the copy time and outage; a failed
// estimate leaves them null and says why.
func TestEstimateMigrations(t *testing.T) {
	defer func(f func(context.Context, jetstream.JetStream, string) (*migrate.Estimate, error)) {
		estimateReplace = f
	}(estimateReplace)
	p, err := Compute(loadPlan(t, ordersMemory), migrationLive(), Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	estimateReplace = func(_ context.Context, _ jetstream.JetStream, name string) (*migrate.Estimate, error) {
		if name != "ORDERS" {
			t.Errorf("estimate of %q", name)
		}
		return &migrate.Estimate{Messages: 531, Bytes: 66_100, Consumers: 2, CopyTime: 40 * time.Millisecond, Outage: 5 * time.Millisecond}, nil
	}
	estimateMigrations(context.Background(), nil, p, migrationLive())
	m := resource(t, p, "stream ORDERS").Migration
	if m.Messages != 531 || m.CopyTime == nil || *m.CopyTime != 40*time.Millisecond || m.Outage == nil || *m.Outage != 5*time.Millisecond {
		t.Errorf("migration %+v", m)
	}
	data, _ := json.Marshal(m)
	for _, key := range []string{`"migratable":true`, `"stream":"ORDERS"`, `"messages":531`, `"bytes":66100`, `"consumers":2`, `"copy_time_ns":40000000`, `"outage_ns":5000000`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON %s lacks %s", data, key)
		}
	}

	p, _ = Compute(loadPlan(t, ordersMemory), migrationLive(), Options{Migrate: true})
	estimateReplace = func(context.Context, jetstream.JetStream, string) (*migrate.Estimate, error) {
		return nil, errors.New("no")
	}
	estimateMigrations(context.Background(), nil, p, migrationLive())
	rp := resource(t, p, "stream ORDERS")
	data, _ = json.Marshal(rp.Migration)
	if !strings.Contains(string(data), `"copy_time_ns":null,"outage_ns":null,"estimate_error":"no"`) || len(rp.Warnings) != 1 {
		t.Errorf("failed estimate: %s, warnings %q", data, rp.Warnings)
	}
}

// Apply runs a migration where the plan has one, between the deletions
// and the consumers, with the declared config and jetctl's marks (a
// bucket's stream with its forcing fields changed, then the bucket
// updated), and reports progress with the resource's label. The engine is
// a stand-in here that recreates the stream and its consumers: what this
// checks is the plan's side.
func TestApplyRunsMigrations(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := context.Background()
	apply := func(src string, opts Options, aopts ApplyOptions) (*Plan, *ApplyResult, error) {
		t.Helper()
		p, live, err := Make(ctx, js, loadPlan(t, src), opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Apply(ctx, js, p, live, aopts)
		return p, res, err
	}
	v1 := `streams:
  - name: ORDERS
    subjects: [orders.>]
    consumers:
      - name: billing
        filter_subject: orders.paid
kv:
  - bucket: cfg
    history: 5
`
	if _, _, err := apply(v1, Options{}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	defer func(f func(context.Context, jetstream.JetStream, jetstream.StreamConfig, migrate.ReplaceOptions) (*migrate.Summary, error)) {
		replaceStream = f
	}(replaceStream)
	var targets []jetstream.StreamConfig
	replaceStream = func(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, opts migrate.ReplaceOptions) (*migrate.Summary, error) {
		targets = append(targets, cfg)
		s, err := js.Stream(ctx, cfg.Name)
		if err != nil {
			return nil, err
		}
		var consumers []jetstream.ConsumerConfig
		for ci := range s.ListConsumers(ctx).Info() {
			consumers = append(consumers, ci.Config)
		}
		if err := js.DeleteStream(ctx, cfg.Name); err != nil {
			return nil, err
		}
		opts.Progress(migrate.Progress{Phase: "copy", Copied: 1, Total: 2})
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			return nil, err
		}
		for _, c := range consumers {
			if _, err := js.CreateConsumer(ctx, cfg.Name, c); err != nil {
				return nil, err
			}
		}
		return &migrate.Summary{Stream: cfg.Name, Target: cfg.Name, Verified: true, Cutover: true}, nil
	}
	v2 := `streams:
  - name: ORDERS
    subjects: [orders.>]
    storage: memory
    consumers:
      - name: billing
        filter_subject: orders.paid
        max_deliver: 5
      - name: fresh
kv:
  - bucket: cfg
    history: 5
    storage: memory
`
	var progress []string
	p, res, err := apply(v2, Options{Migrate: true}, ApplyOptions{Progress: func(resource string, p migrate.Progress) {
		progress = append(progress, resource+" "+p.Phase)
	}})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if p.Summary.Migrate != 2 {
		t.Errorf("summary %+v", p.Summary)
	}
	var got []string
	for _, st := range res.Done {
		got = append(got, string(st.Op)+" "+st.Resource)
		if st.Op == ActionMigrate && (st.Migration == nil || !st.Migration.Cutover) {
			t.Errorf("%s: migration summary %+v", st.Resource, st.Migration)
		}
	}
	want := []string{
		`migrate stream "ORDERS"`,
		`migrate kv bucket "cfg"`,
		`update kv bucket "cfg"`,
		`update stream "ORDERS": consumer "billing"`,
		`create stream "ORDERS": consumer "fresh"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := []string{`stream "ORDERS" copy`, `kv bucket "cfg" copy`}; !reflect.DeepEqual(progress, want) {
		t.Errorf("progress %q, want %q", progress, want)
	}
	if len(targets) != 2 {
		t.Fatalf("targets %+v", targets)
	}
	if o := targets[0]; o.Storage != jetstream.MemoryStorage || o.Metadata[ManagedKey] != "true" || o.Metadata[AppliedKey] == "" {
		t.Errorf("ORDERS target %+v", o)
	}
	if kv := targets[1]; kv.Name != "KV_cfg" || kv.Storage != jetstream.MemoryStorage || kv.MaxMsgsPerSubject != 5 || len(kv.Subjects) != 1 {
		t.Errorf("KV_cfg target %+v", kv)
	}
}

// A migration interrupted between its hops: the temporary stream holds
// the data and the consumers when the stream is gone or only the mirror
// the second hop copies into. --migrate plans the migration that finishes
// it, its consumers planned against the temporary stream's; without it
// the plan is refused rather than create an empty stream.
func TestMigrationResume(t *testing.T) {
	temp := migrate.TempName("ORDERS")
	interrupted := func(orders *jetstream.StreamInfo) *Live {
		live := migrationLive()
		moved := *live.Streams["ORDERS"]
		moved.Config.Name = temp
		moved.Config.Metadata = map[string]string{ManagedKey: "true", migrateStateKey: `{"phase":"held"}`}
		live.Streams[temp] = &moved
		live.Consumers[temp] = live.Consumers["ORDERS"]
		delete(live.Streams, "ORDERS")
		delete(live.Consumers, "ORDERS")
		if orders != nil {
			live.Streams["ORDERS"] = orders
		}
		return live
	}
	for _, tt := range []struct {
		name   string
		orders *jetstream.StreamInfo
	}{
		{"stream gone", nil},
		{"stream a mirror of the temporary one", &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "ORDERS", Storage: jetstream.MemoryStorage, Mirror: &jetstream.StreamSource{Name: temp}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			desired := loadPlan(t, ordersMemory)
			live := resumeView(interrupted(tt.orders), desired)
			if si := live.Streams["ORDERS"]; si == nil || si.Config.Mirror != nil || si.State.Msgs != 530 || live.Consumers["ORDERS"]["billing"] == nil {
				t.Fatalf("resume view of ORDERS: %+v", si)
			}
			p, err := Compute(desired, live, Options{Migrate: true})
			if err != nil {
				t.Fatal(err)
			}
			rp := resource(t, p, "stream ORDERS")
			if rp.Action != ActionMigrate || rp.Migration == nil || rp.Migration.Via != temp || rp.Migration.Messages != 530 {
				t.Fatalf("%s %+v, want a migration finishing through %s", rp.Action, rp.Migration, temp)
			}
			if c := resource(t, p, "consumer ORDERS/billing"); c.Action != ActionNone {
				t.Errorf("billing: %s, want no-op (the engine moves it)", c.Action)
			}
			defer func(f func(context.Context, jetstream.JetStream, string) (*migrate.Estimate, error)) {
				estimateReplace = f
			}(estimateReplace)
			estimateReplace = func(_ context.Context, _ jetstream.JetStream, name string) (*migrate.Estimate, error) {
				if name != temp {
					t.Errorf("estimate of %q, want of %q, which holds the data", name, temp)
				}
				return &migrate.Estimate{Messages: 530}, nil
			}
			estimateMigrations(context.Background(), nil, p, live)
			if problems := CheckServer(p, live, ServerLimits{}); len(problems) != 0 {
				t.Errorf("problems %v", problems)
			}

			p, err = Compute(desired, live, Options{})
			if err != nil {
				t.Fatal(err)
			}
			problems := CheckServer(p, live, ServerLimits{})
			if len(problems) != 1 || !strings.Contains(problems[0].Message, "finish the migration with jetctl apply --migrate first") {
				t.Errorf("without --migrate: problems %v", problems)
			}
		})
	}
	// The stream still holds the data (the first hop was copying): it
	// stands for itself, and --migrate starts over from it.
	live := migrationLive()
	live.Streams[temp] = &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: temp, Mirror: &jetstream.StreamSource{Name: "ORDERS"},
		Metadata: map[string]string{migrateStateKey: `{"phase":"copying"}`}}}
	desired := loadPlan(t, strings.Replace(ordersMemory, "storage: memory", "storage: file", 1))
	view := resumeView(live, desired)
	if view.Streams["ORDERS"] != live.Streams["ORDERS"] {
		t.Error("ORDERS holds the data and should stand for itself")
	}
	p, _ := Compute(desired, view, Options{Migrate: true})
	if rp := resource(t, p, "stream ORDERS"); rp.Action != ActionMigrate || rp.Reason != "finishes the interrupted migration" {
		t.Errorf("unchanged stream with a temporary one: %s %q, want the migration finished", rp.Action, rp.Reason)
	}
	p, _ = Compute(desired, view, Options{})
	if problems := CheckServer(p, view, ServerLimits{}); len(problems) != 1 {
		t.Errorf("without --migrate, unchanged stream: problems %v, want the interrupted migration", problems)
	}
}

// A stream that only has the temporary name, without a migration's state,
// is in the way: no migration, no resume, and no refusal of the plan.
func TestMigrationTempNameInTheWay(t *testing.T) {
	live := migrationLive()
	temp := migrate.TempName("ORDERS")
	live.Streams[temp] = &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: temp, Subjects: []string{"other.>"}}}
	desired := loadPlan(t, ordersMemory)
	view := resumeView(live, desired)
	p, err := Compute(desired, view, Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	rp := resource(t, p, "stream ORDERS")
	if rp.Action != ActionReplace || rp.Migration.Migratable || !strings.Contains(rp.Migration.Reason, "which is not a migration's, has the name the migration passes through") {
		t.Errorf("%s %+v, want a replacement: the name is taken", rp.Action, rp.Migration)
	}
	if len(rp.Warnings) != 0 {
		t.Errorf("warnings %q", rp.Warnings)
	}
	if problems := CheckServer(p, view, ServerLimits{}); len(problems) != 0 {
		t.Errorf("problems %v", problems)
	}
}

// A consumer a migration re-seated by start sequence compares as the
// deliver policy it had, and only as that.
func TestReseatedConsumerNormalises(t *testing.T) {
	mark := map[string]string{ReseatedFromKey: "last"}
	reseated := jetstream.ConsumerConfig{Durable: "c", DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 6, Metadata: mark}
	declared := jetstream.ConsumerConfig{Durable: "c", DeliverPolicy: jetstream.DeliverLastPolicy}
	if !reflect.DeepEqual(view(KindConsumer, &reseated, nil), view(KindConsumer, &declared, nil)) {
		t.Errorf("re-seated consumer differs from its declared config:\n%v\n%v", view(KindConsumer, &reseated, nil), view(KindConsumer, &declared, nil))
	}
	declared.DeliverPolicy = jetstream.DeliverAllPolicy
	if reflect.DeepEqual(view(KindConsumer, &reseated, nil), view(KindConsumer, &declared, nil)) {
		t.Error("re-seated from last compares equal to deliver_policy all")
	}
	// The mark alone, on a consumer that starts by sequence of its own, is nothing.
	plain := jetstream.ConsumerConfig{Durable: "c", DeliverPolicy: jetstream.DeliverAllPolicy, Metadata: mark}
	if _, ok := reseatedFrom(&plain); ok {
		t.Error("a consumer with deliver_policy all is not re-seated")
	}
}
