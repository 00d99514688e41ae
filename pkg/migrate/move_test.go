package migrate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

type snap struct {
	subj, data string
	t          time.Time
}

func snapshot(t *testing.T, js jetstream.JetStream, name string) map[uint64]snap {
	t.Helper()
	s, err := js.Stream(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	si, _ := s.Info(ctx(t))
	out := map[uint64]snap{}
	for seq := si.State.FirstSeq; seq <= si.State.LastSeq && si.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			continue
		}
		out[seq] = snap{m.Subject, string(m.Data), m.Time}
	}
	return out
}

func TestMoveWithCutoverKeepsMessagesAndPositions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		storage   jetstream.StorageType
		to        jetstream.RetentionPolicy
	}{
		{"limits-to-workqueue", jetstream.LimitsPolicy, jetstream.FileStorage, jetstream.WorkQueuePolicy},
		{"workqueue-to-limits-memory", jetstream.WorkQueuePolicy, jetstream.FileStorage, jetstream.LimitsPolicy},
		{"interest-to-limits", jetstream.InterestPolicy, jetstream.FileStorage, jetstream.LimitsPolicy},
		{"limits-to-interest", jetstream.LimitsPolicy, jetstream.FileStorage, jetstream.InterestPolicy},
		{"memory-to-file", jetstream.LimitsPolicy, jetstream.MemoryStorage, jetstream.LimitsPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Retention: tc.retention, Storage: tc.storage})
			if err != nil {
				t.Fatal(err)
			}
			c, err := js.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 100; i++ {
				if _, err := js.Publish(ctx(t), fmt.Sprintf("orders.%d", i%7), []byte(fmt.Sprintf("order %d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if tc.retention == jetstream.LimitsPolicy {
				_ = src.DeleteMsg(ctx(t), 50)
			}
			// Ack 1..40, leave 41..45 delivered and not acknowledged.
			b, err := c.Fetch(45)
			if err != nil {
				t.Fatal(err)
			}
			for m := range b.Messages() {
				md, _ := m.Metadata()
				if md.Sequence.Stream <= 40 {
					if err := m.DoubleAck(ctx(t)); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := snapshot(t, js, "ORDERS")
			tcfg := src.CachedInfo().Config
			tcfg.Name = "ORDERS2"
			tcfg.Retention = tc.to
			tcfg.Storage = jetstream.MemoryStorage
			if tc.storage == jetstream.MemoryStorage {
				tcfg.Storage = jetstream.FileStorage
			}
			sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "ORDERS", Target: "ORDERS2", TargetConfig: &tcfg, Cutover: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("summary %+v", sum)
			if _, err := js.Stream(ctx(t), "ORDERS"); err == nil {
				t.Fatal("source still there")
			}
			after := snapshot(t, js, "ORDERS2")
			if tc.to == jetstream.InterestPolicy {
				// Interest retention keeps only what a consumer has yet to
				// acknowledge: 1..40 were.
				for seq := range before {
					if seq <= 40 {
						delete(before, seq)
					}
				}
			}
			if len(after) != len(before) {
				t.Fatalf("%d messages, want %d", len(after), len(before))
			}
			for seq, a := range before {
				if after[seq] != a {
					t.Errorf("seq %d: %+v, want %+v", seq, after[seq], a)
				}
			}
			nc, err := js.Consumer(ctx(t), "ORDERS2", "proj")
			if err != nil {
				t.Fatal(err)
			}
			ci := nc.CachedInfo()
			if ci.Paused {
				t.Errorf("consumer still paused")
			}
			b, err = nc.Fetch(1)
			if err != nil {
				t.Fatal(err)
			}
			for m := range b.Messages() {
				md, _ := m.Metadata()
				if md.Sequence.Stream != 41 {
					t.Errorf("next delivered %d, want 41", md.Sequence.Stream)
				}
			}
			ack, err := js.Publish(ctx(t), "orders.x", []byte("after"))
			if err != nil {
				t.Fatal(err)
			}
			if ack.Stream != "ORDERS2" || ack.Sequence != 101 {
				t.Errorf("publish after: %+v", ack)
			}
			si, _ := js.Stream(ctx(t), "ORDERS2")
			if md := si.CachedInfo().Config.Metadata; md["jetctl.migrate"] != "" {
				t.Errorf("state left in metadata")
			}
			if si.CachedInfo().Config.Retention != tc.to || si.CachedInfo().Config.Storage != tcfg.Storage {
				t.Errorf("config %+v", si.CachedInfo().Config)
			}
		})
	}
}
