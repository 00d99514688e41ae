package plan

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

func pick[T any](r *rand.Rand, vals ...T) T { return vals[r.Intn(len(vals))] }

// randomDesired builds a random but valid set of resources, with names
// prefixed by round so that rounds do not collide.
func randomDesired(r *rand.Rand, round int) *Desired {
	d := &Desired{}
	add := func(res *Resource) {
		res.FieldPos = map[string]Pos{}
		d.Resources = append(d.Resources, res)
	}
	for s := 0; s < 1+r.Intn(3); s++ {
		name := fmt.Sprintf("R%dS%d", round, s)
		subj := fmt.Sprintf("r%d.s%d", round, s)
		c := &jetstream.StreamConfig{
			Name:        name,
			Subjects:    []string{subj + ".>"},
			Retention:   pick(r, jetstream.LimitsPolicy, jetstream.InterestPolicy, jetstream.WorkQueuePolicy),
			Storage:     pick(r, jetstream.FileStorage, jetstream.MemoryStorage),
			Description: pick(r, "", "random stream"),
			MaxMsgs:     pick(r, int64(0), -1, int64(1+r.Intn(100000))),
			MaxBytes:    pick(r, int64(0), -1, int64(1+r.Intn(1000))*1024),
			MaxMsgSize:  pick(r, int32(0), -1, int32(1024+r.Intn(10000))),
			Discard:     pick(r, jetstream.DiscardOld, jetstream.DiscardNew),
			Compression: pick(r, jetstream.NoCompression, jetstream.S2Compression),
			AllowDirect: r.Intn(2) == 0,
			DenyDelete:  r.Intn(3) == 0,
			NoAck:       r.Intn(5) == 0,
		}
		if r.Intn(2) == 0 {
			c.Subjects = append([]string{subj + "x.*"}, c.Subjects...)
		}
		if r.Intn(2) == 0 {
			c.MaxAge = time.Duration(1+r.Intn(100000)) * time.Second
		}
		if r.Intn(3) == 0 {
			c.Duplicates = time.Duration(1+r.Intn(60)) * time.Second
			if c.MaxAge != 0 && c.Duplicates > c.MaxAge {
				c.Duplicates = c.MaxAge
			}
		}
		if r.Intn(2) == 0 {
			c.MaxMsgsPerSubject = int64(1 + r.Intn(100))
		}
		if r.Intn(3) == 0 {
			c.AllowRollup = true
		} else if r.Intn(3) == 0 {
			c.DenyPurge = true
		}
		if r.Intn(3) == 0 {
			c.Metadata = map[string]string{"team": pick(r, "payments", "ops"), "tier": "1"}
		}
		if r.Intn(4) == 0 {
			c.ConsumerLimits = jetstream.StreamConsumerLimits{MaxAckPending: 5000}
		}
		add(&Resource{Kind: KindStream, Name: name, StreamConfig: c})
		for k := 0; k < r.Intn(4); k++ {
			cc := &jetstream.ConsumerConfig{
				Name:          fmt.Sprintf("c%d", k),
				Description:   pick(r, "", "a consumer"),
				AckPolicy:     pick(r, jetstream.AckExplicitPolicy, jetstream.AckAllPolicy, jetstream.AckNonePolicy),
				DeliverPolicy: pick(r, jetstream.DeliverAllPolicy, jetstream.DeliverLastPolicy, jetstream.DeliverNewPolicy, jetstream.DeliverLastPerSubjectPolicy),
				ReplayPolicy:  pick(r, jetstream.ReplayInstantPolicy, jetstream.ReplayOriginalPolicy),
				MaxDeliver:    pick(r, 0, -1, 5+r.Intn(10)),
				HeadersOnly:   r.Intn(4) == 0,
				MaxWaiting:    pick(r, 0, 10+r.Intn(100)),
			}
			if c.Retention == jetstream.WorkQueuePolicy {
				cc.DeliverPolicy = jetstream.DeliverAllPolicy
				cc.AckPolicy = jetstream.AckExplicitPolicy
			}
			if cc.AckPolicy != jetstream.AckNonePolicy {
				cc.AckWait = pick(r, 0, time.Duration(1+r.Intn(300))*time.Second)
				if r.Intn(3) == 0 && cc.MaxDeliver > 3 {
					cc.BackOff = []time.Duration{time.Second, 5 * time.Second, time.Minute}
				}
				cc.MaxAckPending = pick(r, 0, 1+r.Intn(4000))
			}
			if c.Retention == jetstream.WorkQueuePolicy || r.Intn(2) == 0 {
				filter := fmt.Sprintf("%s.c%d", subj, k)
				if r.Intn(2) == 0 {
					cc.FilterSubject = filter
				} else {
					cc.FilterSubjects = []string{filter, filter + "b.>"}
				}
			}
			if cc.DeliverPolicy == jetstream.DeliverLastPerSubjectPolicy && len(cc.FilterSubjects)+len(cc.FilterSubject) == 0 {
				cc.DeliverPolicy = jetstream.DeliverAllPolicy
			}
			if r.Intn(3) == 0 {
				cc.Metadata = map[string]string{"owner": "billing"}
			}
			if r.Intn(3) == 0 {
				cc.MaxRequestBatch = 1 + r.Intn(100)
				cc.MaxRequestExpires = time.Duration(1+r.Intn(60)) * time.Second
			}
			add(&Resource{Kind: KindConsumer, Stream: name, Name: cc.Name, ConsumerConfig: cc})
		}
	}
	if r.Intn(2) == 0 {
		kv := &jetstream.KeyValueConfig{
			Bucket:       fmt.Sprintf("r%dkv", round),
			Description:  pick(r, "", "settings"),
			History:      uint8(pick(r, 0, 1+r.Intn(64))),
			TTL:          pick(r, 0, time.Duration(1+r.Intn(1000))*time.Minute),
			MaxBytes:     pick(r, int64(0), -1, int64(1+r.Intn(100))<<20),
			MaxValueSize: pick(r, int32(0), -1, int32(1024+r.Intn(1000))),
			Storage:      pick(r, jetstream.FileStorage, jetstream.MemoryStorage),
			Compression:  r.Intn(2) == 0,
		}
		add(&Resource{Kind: KindKV, Name: kv.Bucket, KeyValueConfig: kv})
	}
	if r.Intn(3) == 0 {
		obj := &jetstream.ObjectStoreConfig{
			Bucket:      fmt.Sprintf("r%dobj", round),
			Description: pick(r, "", "files"),
			TTL:         pick(r, 0, time.Duration(1+r.Intn(100))*time.Hour),
			MaxBytes:    pick(r, int64(0), int64(1+r.Intn(100))<<20),
			Compression: r.Intn(2) == 0,
		}
		add(&Resource{Kind: KindObjectStore, Name: obj.Bucket, ObjectStoreConfig: obj})
	}
	return d
}

// TestApplyThenPlanIsEmpty is the property test: for random valid
// configs, applying them and planning again shows no changes, and so does
// planning what export writes.
func TestApplyThenPlanIsEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	js := embeddedtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for round := 0; round < 25; round++ {
		desired := randomDesired(r, round)
		p, live, err := Make(ctx, js, desired, Options{})
		if err != nil {
			t.Fatalf("round %d: plan: %v", round, err)
		}
		if _, err := Apply(ctx, js, p, live, ApplyOptions{}); err != nil {
			t.Fatalf("round %d: apply: %v\nconfig: %s", round, err, describeDesired(desired))
		}
		again, _, err := Make(ctx, js, desired, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if again.Changed() {
			t.Fatalf("round %d: plan after apply is not empty: %s", round, describePlan(again))
		}

		var opts ExportOptions
		for _, res := range desired.Resources {
			switch res.Kind {
			case KindStream:
				opts.Streams = append(opts.Streams, res.Name)
			case KindKV:
				opts.KV = append(opts.KV, res.Name)
			case KindObjectStore:
				opts.ObjectStores = append(opts.ObjectStores, res.Name)
			}
		}
		data, err := Export(ctx, js, opts)
		if err != nil {
			t.Fatal(err)
		}
		exported, err := Load([]Source{{Name: "export.yaml", Data: data}}, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("round %d: exported file does not load: %v\n%s", round, err, data)
		}
		fromExport, _, err := Make(ctx, js, exported, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if fromExport.Changed() {
			t.Fatalf("round %d: plan of the export is not empty: %s\n%s", round, describePlan(fromExport), data)
		}
	}
}

func describeDesired(d *Desired) string {
	out := ""
	for _, r := range d.Resources {
		out += fmt.Sprintf("\n%s: %s", r.ID(), marshalConfig(r.config()))
	}
	return out
}

func describePlan(p *Plan) string {
	out := ""
	for _, r := range p.Resources {
		if r.Action == ActionNone {
			continue
		}
		out += fmt.Sprintf("\n%s %s", r.Action, r.ID())
		for _, c := range r.Changes {
			out += fmt.Sprintf("\n  %s: %v -> %v", c.Path, c.Before, c.After)
		}
	}
	return out
}
