package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/lease"
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
		out[seq] = snap{m.Subject, string(m.Data), origTime(t, m)}
	}
	return out
}

// origTime is a message's original time: its own, or the one jetctl's copy
// kept in a header.
func origTime(t *testing.T, m *jetstream.RawStreamMsg) time.Time {
	t.Helper()
	h := m.Header.Get(migrate.HeaderTime)
	if h == "" {
		return m.Time.UTC()
	}
	tm, err := time.Parse(time.RFC3339Nano, h)
	if err != nil {
		t.Fatalf("seq %d: %s %q: %v", m.Sequence, migrate.HeaderTime, h, err)
	}
	return tm.UTC()
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
			if want := map[bool]string{true: "copy", false: "mirror"}[tc.retention == jetstream.WorkQueuePolicy]; sum.Mechanism != want {
				t.Errorf("mechanism %q, want %q (a mirror drains a workqueue source)", sum.Mechanism, want)
			}
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

// A source whose last messages were deleted (a drained work queue): the
// target continues at the source's next sequence, not below it.
func TestMoveKeepsTheNextSequenceAfterTrailingDeletes(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx(t), "JOBS", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "jobs.a", 30)
	b, err := c.Fetch(30)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range b.Messages() {
		md, _ := m.Metadata()
		if md.Sequence.Stream > 10 { // 1..10 stay, 11..30 are done
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		} else if err := m.Nak(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "JOBS", Target: "JOBS2", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Messages != 10 {
		t.Fatalf("moved %d messages, want 10", sum.Messages)
	}
	ack, err := js.Publish(ctx(t), "jobs.a", []byte("next"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Stream != "JOBS2" || ack.Sequence <= 30 {
		t.Fatalf("next publish %+v: want JOBS2 after seq 30", ack)
	}
	for seq := uint64(1); seq <= 10; seq++ {
		if _, err := getMsg(t, js, "JOBS2", seq); err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
	}
}

func getMsg(t *testing.T, js jetstream.JetStream, stream string, seq uint64) (*jetstream.RawStreamMsg, error) {
	s, err := js.Stream(ctx(t), stream)
	if err != nil {
		return nil, err
	}
	return s.GetMsg(ctx(t), seq)
}

// A second migration of a stream while one runs is refused.
func TestMoveRefusedWhileAnotherRuns(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	lock, err := lease.Acquire(ctx(t), js, migrate.LockKey("ORDERS"), time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(context.Background())
	_, err = migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "ORDERS", Target: "ORDERS2"})
	if !errors.Is(err, migrate.ErrBusy) {
		t.Fatalf("err %v, want ErrBusy", err)
	}
	if _, err := js.Stream(ctx(t), "ORDERS2"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("target created: %v", err)
	}
	cfg := jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Retention: jetstream.WorkQueuePolicy}
	if _, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{}); !errors.Is(err, migrate.ErrBusy) {
		t.Fatalf("Replace: err %v, want ErrBusy", err)
	}
}

// Consumers a workqueue target would refuse are named before anything
// changes.
func TestMoveToWorkqueueRefusesOverlappingConsumers(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []jetstream.ConsumerConfig{{Durable: "a", FilterSubject: "orders.>"}, {Durable: "b", FilterSubject: "orders.paid"}} {
		c.AckPolicy = jetstream.AckExplicitPolicy
		if _, err := js.CreateOrUpdateConsumer(ctx(t), "ORDERS", c); err != nil {
			t.Fatal(err)
		}
	}
	cfg := src.CachedInfo().Config
	cfg.Retention = jetstream.WorkQueuePolicy
	_, err = migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{})
	if !errors.Is(err, migrate.ErrInvalid) {
		t.Fatalf("err %v, want ErrInvalid", err)
	}
	t.Log(err)
	if _, err := js.Stream(ctx(t), migrate.TempName("ORDERS")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("temporary stream created: %v", err)
	}
}

// A consumer with deliver policy new, behind the end, keeps its unacknowledged messages.
func TestMoveDeliverNewConsumer(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "orders.a", 5)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "n", DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "orders.a", 5) // 6..10
	b, err := c.Fetch(2)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "ORDERS", Target: "ORDERS2", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Consumers) != 1 || sum.Consumers[0].Changed == "" {
		t.Fatalf("consumers %+v: want the policy change named", sum.Consumers)
	}
	nc, err := js.Consumer(ctx(t), "ORDERS2", "n")
	if err != nil {
		t.Fatal(err)
	}
	b, err = nc.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := uint64(0)
	for m := range b.Messages() {
		md, _ := m.Metadata()
		got = md.Sequence.Stream
	}
	if got != 8 {
		t.Fatalf("next delivered %d, want 8", got)
	}
}

// The source's last message deleted while the mirror copies (an
// operator's delete, a max_age expiry on a quiet stream): the mirror
// never copies it, and the move must not wait for it (it waited forever).
// It finishes, exact, and the target gives no sequence twice.
func TestMoveLastMessageDeletedWhileCopying(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "H", Subjects: []string{"h.>"}})
	if err != nil {
		t.Fatal(err)
	}
	pubAsync(t, js, []string{"h.a", "h.b"}, factMsgs)
	deleted := false
	ep := migrate.Endpoint{JS: js}
	sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "H", Target: "H2", Cutover: true, AtStep: func(step string) {
		if step == "copying" && !deleted {
			deleted = true
			if err := src.DeleteMsg(ctx(t), factMsgs); err != nil {
				t.Error(err)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !deleted || !sum.Verified || sum.Messages != factMsgs-1 {
		t.Fatalf("summary %+v (deleted %v), want %d messages verified", sum, deleted, factMsgs-1)
	}
	ack, err := js.Publish(ctx(t), "h.a", nil)
	if err != nil || ack.Stream != "H2" || ack.Sequence <= factMsgs {
		t.Errorf("publish after: %+v %v, want H2 after seq %d (no sequence given twice)", ack, err, factMsgs)
	}
}

// The server restarted (down for 2 s) while the move copies, by a mirror
// or by jetctl: replies lost in the reconnect, JetStream not answering
// yet, a mirror reporting its origin "not found" for a while are ridden
// out (a request timed out and the move exited 1 before), and the move
// finishes exact.
func TestMoveRidesOutAServerRestart(t *testing.T) {
	for _, ret := range []jetstream.RetentionPolicy{jetstream.LimitsPolicy, jetstream.WorkQueuePolicy} {
		t.Run(ret.String(), func(t *testing.T) { ridesOutARestart(t, ret) })
	}
}

func ridesOutARestart(t *testing.T, ret jetstream.RetentionPolicy) {
	c := embeddedtest.Start(t)
	js := embeddedtest.Reconnecting(t, c)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SK", Subjects: []string{"sk.>"}, Retention: ret}); err != nil {
		t.Fatal(err)
	}
	pubAsync(t, js, []string{"sk.a", "sk.b"}, factMsgs)
	before, _ := storedMsgs(t, js, "SK", false)
	restarted := false
	ep := migrate.Endpoint{JS: js}
	// As the command runs it: a context without a deadline, so that each
	// request has its own timeout (nats.go's default) and a reply lost in
	// the restart is a timeout the move rides out, not a wait for the
	// whole bound. The bound is generous (a server recovering on a busy
	// machine takes its time); the condition is the move's end.
	long, cancel := context.WithCancel(context.Background())
	defer cancel()
	bound := time.AfterFunc(3*time.Minute, cancel)
	defer bound.Stop()
	began := time.Now()
	sum, err := migrate.Stream(long, ep, ep, migrate.Config{Stream: "SK", Target: "SK2", Cutover: true, AtStep: func(step string) {
		if step == "copying" && !restarted {
			restarted = true
			if err := c.Stop(0); err != nil {
				t.Error(err)
			}
			// Down for a while the move goes on asking.
			go func() {
				time.Sleep(2 * time.Second)
				if err := c.Restart(0); err != nil {
					t.Error(err)
				}
			}()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !restarted || !sum.Verified || sum.Messages != factMsgs {
		t.Fatalf("summary %+v (restarted %v)", sum, restarted)
	}
	t.Logf("moved in %v with a server restart", time.Since(began))
	sameWithTimes(t, js, "SK2", before)
}

// A message published to the source's placeholder subject during the
// cutover is refused the same way whether the run was interrupted or not,
// by a mirror and by jetctl's copy: exit 4 (a VerifyError naming it), the
// source given back with the message still in it. An end marker a killed
// run left there is jetctl's own: removed, and the move finishes.
func TestCutoverRefusesStrayWrites(t *testing.T) {
	for _, ret := range []jetstream.RetentionPolicy{jetstream.LimitsPolicy, jetstream.WorkQueuePolicy} {
		for _, tc := range []string{"uninterrupted", "interrupted", "end-marker"} {
			t.Run(ret.String()+"/"+tc, func(t *testing.T) {
				js := embeddedtest.JetStream(t)
				if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, Retention: ret}); err != nil {
					t.Fatal(err)
				}
				pubAsync(t, js, []string{"s.a"}, 500)
				stray := func() {
					hdr := nats.Header{}
					if tc == "end-marker" {
						hdr.Set(migrate.HeaderEnd, "1")
					}
					if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: migrate.PlaceholderSubject("SRC"), Header: hdr, Data: []byte("stray")}); err != nil {
						t.Error(err)
					}
				}
				ep := migrate.Endpoint{JS: js}
				cfg := migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true}
				if tc == "interrupted" || tc == "end-marker" {
					stop, cancel := context.WithCancel(ctx(t))
					cfg.AtStep = func(step string) {
						if step == "held" {
							stray()
							cancel()
						}
					}
					if _, err := migrate.Stream(stop, ep, ep, cfg); err == nil {
						t.Fatal("the interrupted run finished")
					}
					cfg.AtStep = nil
				} else {
					cfg.AtStep = func(step string) {
						if step == "held" {
							stray()
						}
					}
				}
				sum, err := migrate.Stream(ctx(t), ep, ep, cfg)
				if tc == "end-marker" {
					if err != nil || !sum.Verified || sum.Messages != 500 {
						t.Fatalf("with a left end marker: %+v %v", sum, err)
					}
					return
				}
				var ve *migrate.VerifyError
				if !errors.As(err, &ve) || !strings.Contains(ve.What, "1 messages were published to _jetctl.migrating.SRC during the cutover") {
					t.Fatalf("err = %v, want a VerifyError naming the stray write", err)
				}
				si := streamInfo(t, js, "SRC")
				if fmt.Sprint(si.Config.Subjects) != "[s.>]" || si.State.Msgs != 501 {
					t.Errorf("source after: subjects %v, %d messages; want given back with the stray (501)", si.Config.Subjects, si.State.Msgs)
				}
			})
		}
	}
}

// A run killed during its cutover (the subjects held) is continued by
// giving the source its subjects back and verifying live again, not by
// comparing the whole stream while writers wait: when the rerun verifies,
// the source takes writes. Then it cuts over and finishes exact.
func TestRerunAfterAKilledCutoverVerifiesWithTheSubjectsBack(t *testing.T) {
	for _, ret := range []jetstream.RetentionPolicy{jetstream.LimitsPolicy, jetstream.WorkQueuePolicy} {
		t.Run(ret.String(), func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, Retention: ret}); err != nil {
				t.Fatal(err)
			}
			if _, err := js.CreateConsumer(ctx(t), "SRC", jetstream.ConsumerConfig{Durable: "C", AckPolicy: explicit}); err != nil {
				t.Fatal(err)
			}
			pubAsync(t, js, []string{"s.a"}, 2000)
			ep := migrate.Endpoint{JS: js}
			stop, cancel := context.WithCancel(ctx(t))
			cfg := migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true, AtStep: func(step string) {
				if step == "held" {
					cancel()
				}
			}}
			if _, err := migrate.Stream(stop, ep, ep, cfg); err == nil {
				t.Fatal("the interrupted run finished")
			}
			if si := streamInfo(t, js, "SRC"); fmt.Sprint(si.Config.Subjects) != "[_jetctl.migrating.SRC]" {
				t.Fatalf("after the kill the source has %v", si.Config.Subjects)
			}
			live := false
			cfg.AtStep = func(step string) {
				if step != "copying" || live {
					return
				}
				live = true
				// The writers are served while the rerun verifies.
				ack, err := js.Publish(ctx(t), "s.a", []byte("during"))
				if err != nil || ack.Stream != "SRC" {
					t.Errorf("publish while the rerun verifies: %+v %v, want stored in SRC", ack, err)
				}
				if ci := consumerInfo(t, js, "SRC", "C"); ci.Paused {
					t.Error("the consumer is still paused while the rerun verifies")
				}
			}
			before, _ := storedMsgs(t, js, "SRC", false)
			sum, err := migrate.Stream(ctx(t), ep, ep, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !live || !sum.Verified || !sum.Resumed || sum.Messages != 2001 {
				t.Fatalf("rerun: %+v (live round %v)", sum, live)
			}
			after, _ := storedMsgs(t, js, "SRC2", true)
			if len(after) != 2001 {
				t.Errorf("%d messages on the target, want 2001", len(after))
			}
			for seq, b := range before {
				if a := after[seq]; a.subj != b.subj || a.data != b.data {
					t.Errorf("seq %d: %+v, want %+v", seq, a, b)
				}
			}
		})
	}
}
