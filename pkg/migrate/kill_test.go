package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// killSteps are the steps a move is stopped at, one run each, before a
// last run finishes it.
var killSteps = []string{"created", "copying", "held", "seated", "promoted", "finished"}

// A move stopped at each of its steps in turn (its context cancelled
// there, so it stops as a killed run would, its state on the server) and
// run again, while a publisher keeps writing and retrying through the
// cutovers: for every retention and consumer setup, every message the
// publisher was acknowledged, and every one published before, is on the
// target at its sequence, and the consumers are where they were.
func TestKillAndRerunEveryRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		ret  jetstream.RetentionPolicy
		cons []jetstream.ConsumerConfig
		mech string
	}{
		{"limits", jetstream.LimitsPolicy, []jetstream.ConsumerConfig{{Durable: "C", AckPolicy: explicit}}, "mirror"},
		{"limits-push", jetstream.LimitsPolicy, []jetstream.ConsumerConfig{{Durable: "P", AckPolicy: explicit, DeliverSubject: "push.p"}}, "mirror"},
		{"interest", jetstream.InterestPolicy, []jetstream.ConsumerConfig{{Durable: "C", AckPolicy: explicit}}, "mirror"},
		{"workqueue-no-consumer", jetstream.WorkQueuePolicy, nil, "copy"},
		{"workqueue-filtered", jetstream.WorkQueuePolicy, []jetstream.ConsumerConfig{{Durable: "A", AckPolicy: explicit, FilterSubject: "s.a"}, {Durable: "B", AckPolicy: explicit, FilterSubject: "s.b"}}, "copy"},
		{"workqueue-unfiltered", jetstream.WorkQueuePolicy, []jetstream.ConsumerConfig{{Durable: "C", AckPolicy: explicit}}, "copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			makeSource(t, js, tc.ret, tc.cons...)
			for _, cc := range tc.cons {
				if cc.DeliverSubject == "" {
					continue
				}
				// A push consumer: its first 100 acknowledged.
				for _, msg := range pushed(t, js, cc.DeliverSubject, 100) {
					if err := msg.AckSync(); err != nil {
						t.Fatal(err)
					}
				}
			}
			floors := map[string]uint64{}
			for _, cc := range tc.cons {
				floors[cc.Durable] = consumerInfo(t, js, "SRC", cc.Durable).AckFloor.Stream
			}
			before, _ := storedMsgs(t, js, "SRC", false)
			pub := startPublisher(js, "s.a")
			ep := migrate.Endpoint{JS: js}
			for _, step := range killSteps {
				stop, cancel := context.WithCancel(ctx(t))
				_, err := migrate.Stream(stop, ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true, AtStep: func(s string) {
					if s == step {
						cancel()
					}
				}})
				cancel()
				if step == "finished" && err != nil || step != "finished" && !errors.Is(err, context.Canceled) {
					t.Fatalf("stopped at %s: %v, want it stopped there (or, at finished, done)", step, err)
				}
			}
			sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true})
			pub.finish()
			if err != nil {
				t.Fatal(err)
			}
			if !sum.AlreadyDone || !sum.Verified || sum.Mechanism != tc.mech {
				t.Errorf("last run: %+v, want already done (the run stopped at 'finished' had finished), verified, by %s", sum, tc.mech)
			}
			after, _ := storedMsgs(t, js, "SRC2", true)
			for seq, b := range before {
				if a, ok := after[seq]; !ok || a.subj != b.subj || a.data != b.data {
					t.Fatalf("seq %d: %+v (there %v), want %+v", seq, a, ok, b)
				}
			}
			pub.mu.Lock()
			defer pub.mu.Unlock()
			for payload, seq := range pub.acked {
				if a, ok := after[seq]; !ok || a.data != payload {
					t.Fatalf("acknowledged %s at seq %d: the target has %+v (there %v)", payload, seq, a, ok)
				}
			}
			for name, floor := range floors {
				if ci := consumerInfo(t, js, "SRC2", name); ci.AckFloor.Stream != floor || ci.Paused {
					t.Errorf("consumer %s on the target: ack floor %d (paused %v), want %d as on the source", name, ci.AckFloor.Stream, ci.Paused, floor)
				}
			}
			for _, cc := range tc.cons {
				if cc.DeliverSubject == "" {
					continue
				}
				msg := pushed(t, js, cc.DeliverSubject, 1)[0]
				if md, err := msg.Metadata(); err != nil || md.Sequence.Stream != floors[cc.Durable]+1 {
					t.Errorf("push consumer %s delivers %+v (%v) first, want seq %d", cc.Durable, md, err, floors[cc.Durable]+1)
				}
			}
			t.Logf("%d messages before, %d acknowledged during the move, longest gap %v", len(before), len(pub.acked), pub.maxGap)
		})
	}
}

// A KV bucket's storage changed by apply --migrate (two moves through a
// temporary stream), stopped at every step of both moves in turn and run
// again: every revision stays at its sequence, and the bucket works
// through the KV API afterwards.
func TestKillAndRerunKVBucket(t *testing.T) {
	js := embeddedtest.JetStream(t)
	kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "cfg", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := kv.Put(ctx(t), fmt.Sprintf("k%d", i%40), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx(t), "k3"); err != nil {
		t.Fatal(err)
	}
	before, binfo := storedMsgs(t, js, "KV_cfg", false)
	cfg := binfo.Config
	cfg.Storage = jetstream.MemoryStorage
	for _, hop := range []string{"1", "2"} {
		for _, step := range killSteps {
			stop, cancel := context.WithCancel(ctx(t))
			_, err := migrate.Replace(stop, js, cfg, migrate.ReplaceOptions{AtStep: func(s string) {
				if s == hop+":"+step {
					cancel()
				}
			}})
			cancel()
			if hop == "2" && step == "finished" {
				if err != nil {
					t.Fatalf("stopped after its last step: %v", err)
				}
				continue
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped at %s:%s: %v, want it stopped there", hop, step, err)
			}
		}
	}
	// Done: the same call again changes nothing.
	after, ainfo := storedMsgs(t, js, "KV_cfg", false)
	if ainfo.Config.Storage != jetstream.MemoryStorage {
		t.Fatalf("KV_cfg storage %v", ainfo.Config.Storage)
	}
	sameStored(t, before, after)
	for seq, b := range before {
		if !after[seq].t.Equal(b.t) {
			t.Fatalf("seq %d stored at %v, was %v", seq, after[seq].t, b.t)
		}
	}
	kv, err = js.KeyValue(ctx(t), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx(t), "k5"); err != nil || string(e.Value()) != "v285" {
		t.Errorf("k5: %v %v, want v285", e, err)
	}
	if _, err := kv.Get(ctx(t), "k3"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("deleted k3: %v, want not found", err)
	}
	rev, err := kv.Put(ctx(t), "k1", []byte("new"))
	if err != nil || rev != binfo.State.LastSeq+1 {
		t.Errorf("put after: revision %d %v, want %d", rev, err, binfo.State.LastSeq+1)
	}
}

// pushed takes the next n messages a push consumer delivers to subject,
// then stops listening.
func pushed(t *testing.T, js jetstream.JetStream, subject string, n int) []*nats.Msg {
	t.Helper()
	sub, err := js.Conn().SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	out := make([]*nats.Msg, 0, n)
	for range n {
		msg, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msg)
	}
	return out
}
