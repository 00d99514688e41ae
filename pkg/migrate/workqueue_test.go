package migrate_test

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

// wqSource makes a workqueue stream SRC on s.> with the consumers cons,
// publishes factMsgs messages round s.a, s.b and s.c, and has each
// consumer take 300 and acknowledge the first 200 (they leave the stream).
func wqSource(t *testing.T, js jetstream.JetStream, cons ...jetstream.ConsumerConfig) {
	t.Helper()
	makeSource(t, js, jetstream.WorkQueuePolicy, cons...)
	for _, cc := range cons {
		c, err := js.Consumer(ctx(t), "SRC", cc.Durable)
		if err != nil {
			t.Fatal(err)
		}
		ms := fetch(t, c, 300, 5*time.Second)
		ackSync(t, ms[:200]...)
	}
}

// sameWithTimes is sameStored, and the original times equal too.
func sameWithTimes(t *testing.T, js jetstream.JetStream, name string, want map[uint64]stored) {
	t.Helper()
	got, _ := storedMsgs(t, js, name, true)
	sameStored(t, want, got)
	n := 0
	for seq, w := range want {
		if g, ok := got[seq]; ok && !g.orig.Equal(w.t) && n < 5 {
			n++
			t.Errorf("seq %d: original time %v, want %v", seq, g.orig, w.t)
		}
	}
}

// nextFor is the first sequence a consumer filtered on filter ("" for all)
// should deliver: the first message of its subjects still stored.
func nextFor(msgs map[uint64]stored, filter string) uint64 {
	seqs := []uint64{}
	for seq, m := range msgs {
		if ok, _ := path.Match(filter, m.subj); filter == "" || ok {
			seqs = append(seqs, seq)
		}
	}
	return slices.Min(seqs)
}

// A workqueue source is copied by jetctl, never by a mirror (which would
// drain it, TestFactMirrorDrainsWorkqueueOrigin): the rehearsal leaves the
// source as it was, message by message; the cutover keeps every message
// with its sequence, subject, headers, payload and original time, and the
// consumers deliver from where they were.
func TestMoveWorkqueueSourceKeepsEveryMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		cons []jetstream.ConsumerConfig
	}{
		{"no-consumer", nil},
		{"filtered-consumer", []jetstream.ConsumerConfig{{Durable: "A", AckPolicy: explicit, FilterSubject: "s.a"}}},
		{"unfiltered-consumer", []jetstream.ConsumerConfig{{Durable: "ALL", AckPolicy: explicit}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			wqSource(t, js, tc.cons...)
			before, binfo := storedMsgs(t, js, "SRC", false)
			ep := migrate.Endpoint{JS: js}
			sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2"})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Mechanism != "copy" || !sum.Verified || sum.Messages != binfo.State.Msgs {
				t.Errorf("rehearsal: %+v, want copied and verified, %d messages", sum, binfo.State.Msgs)
			}
			after, ainfo := storedMsgs(t, js, "SRC", false)
			sameStored(t, before, after)
			for seq, b := range before {
				if !after[seq].t.Equal(b.t) {
					t.Fatalf("the rehearsal changed the source's seq %d", seq)
				}
			}
			if ainfo.State.Msgs != binfo.State.Msgs || ainfo.State.FirstSeq != binfo.State.FirstSeq || ainfo.State.LastSeq != binfo.State.LastSeq || ainfo.State.Bytes != binfo.State.Bytes || ainfo.Config.AllowDirect != binfo.Config.AllowDirect || !slices.Equal(ainfo.Config.Subjects, binfo.Config.Subjects) {
				t.Errorf("the rehearsal changed the source: %+v %+v, was %+v %+v", ainfo.State, ainfo.Config, binfo.State, binfo.Config)
			}
			sameWithTimes(t, js, "SRC2", before)

			sum, err = migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Mechanism != "copy" || !sum.Verified || sum.Messages != binfo.State.Msgs || !sum.Resumed {
				t.Errorf("cutover: %+v", sum)
			}
			if _, err := js.Stream(ctx(t), "SRC"); err == nil {
				t.Error("the source is still there")
			}
			sameWithTimes(t, js, "SRC2", before)
			tinfo := streamInfo(t, js, "SRC2")
			if tinfo.Config.Retention != jetstream.WorkQueuePolicy || !slices.Equal(tinfo.Config.Subjects, []string{"s.>"}) || tinfo.Config.SubjectTransform != nil {
				t.Errorf("target config %+v", tinfo.Config)
			}
			for _, cc := range tc.cons {
				c, err := js.Consumer(ctx(t), "SRC2", cc.Durable)
				if err != nil {
					t.Fatal(err)
				}
				ms := fetch(t, c, 1, 5*time.Second)
				if got, want := seqOf(t, ms[0]), nextFor(before, cc.FilterSubject); got != want {
					t.Errorf("consumer %s delivers seq %d first, want %d", cc.Durable, got, want)
				}
			}
			ack, err := js.Publish(ctx(t), "s.z", []byte("after"))
			if err != nil || ack.Stream != "SRC2" || ack.Sequence != binfo.State.LastSeq+1 {
				t.Errorf("publish after: %+v %v, want SRC2 seq %d", ack, err, binfo.State.LastSeq+1)
			}
		})
	}
}

// apply --migrate of a workqueue stream with one consumer on s.a (the
// case that lost two thirds of its messages): every message stays, at its
// sequence, with its original time.
func TestReplaceWorkqueueKeepsEveryMessage(t *testing.T) {
	js := embeddedtest.JetStream(t)
	wqSource(t, js, jetstream.ConsumerConfig{Durable: "A", AckPolicy: explicit, FilterSubject: "s.a"})
	before, binfo := storedMsgs(t, js, "SRC", false)
	cfg := binfo.Config
	cfg.Storage = jetstream.MemoryStorage
	sum, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Verified || sum.Messages != binfo.State.Msgs {
		t.Errorf("summary %+v, want %d messages verified", sum, binfo.State.Msgs)
	}
	sameWithTimes(t, js, "SRC", before)
	if si := streamInfo(t, js, "SRC"); si.Config.Storage != jetstream.MemoryStorage || si.Config.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("config %+v", si.Config)
	}
	c, err := js.Consumer(ctx(t), "SRC", "A")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqOf(t, fetch(t, c, 1, 5*time.Second)[0]), nextFor(before, "s.a"); got != want {
		t.Errorf("consumer delivers seq %d first, want %d", got, want)
	}
}

// apply --migrate from limits to workqueue passes through a temporary
// stream with limits retention, so both moves are mirrors: the timestamps
// are the originals themselves, not a header.
func TestReplaceToWorkqueueKeepsTimestamps(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	pubAsync(t, js, []string{"s.a", "s.b"}, 2000)
	before, _ := storedMsgs(t, js, "SRC", false)
	cfg := src.CachedInfo().Config
	cfg.Retention = jetstream.WorkQueuePolicy
	sum, err := migrate.Replace(ctx(t), js, cfg, migrate.ReplaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Mechanism != "mirror" || !sum.Verified {
		t.Errorf("summary %+v", sum)
	}
	after, _ := storedMsgs(t, js, "SRC", false)
	sameStored(t, before, after)
	for seq, b := range before {
		if !after[seq].t.Equal(b.t) {
			t.Fatalf("seq %d stored at %v, was %v", seq, after[seq].t, b.t)
		}
	}
}

// Messages that leave a workqueue source during the move although no
// consumer had been delivered them (a copy that consumed, as a mirror
// did; here a delete by hand) fail the move: exit 4, the source given
// back. The snapshot goes with it, so a rerun starts from what the source
// holds then, and finishes.
func TestMoveRefusesMessagesThatVanished(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(s jetstream.Stream) error
		left   uint64
		what   string
	}{
		{"deleted", func(s jetstream.Stream) error { return s.DeleteMsg(ctx(t), 5000) }, factMsgs - 201,
			"1 messages left the source during the move that no consumer had been delivered (seq 5000; consumers delivered up to seq 300): something consumed or deleted them"},
		// As a draining copy takes them, from the head, the pending ones
		// too. (Not a purge: the server moves the consumers past what a
		// purge removes, which then counts as delivered.)
		{"drained", func(s jetstream.Stream) error {
			for seq := uint64(201); seq <= 999; seq++ {
				if err := s.DeleteMsg(ctx(t), seq); err != nil {
					return err
				}
			}
			return nil
		}, factMsgs - 999,
			"699 messages left the source during the move that no consumer had been delivered (seq 301, 302, 303, 304, 305, …; consumers delivered up to seq 300): something consumed or deleted them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			wqSource(t, js, jetstream.ConsumerConfig{Durable: "ALL", AckPolicy: explicit})
			s, err := js.Stream(ctx(t), "SRC")
			if err != nil {
				t.Fatal(err)
			}
			ep := migrate.Endpoint{JS: js}
			removed := false
			_, err = migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true, AtStep: func(step string) {
				if step == "copying" && !removed {
					removed = true
					if err := tc.remove(s); err != nil {
						t.Error(err)
					}
				}
			}})
			var ve *migrate.VerifyError
			if !errors.As(err, &ve) || ve.What != tc.what {
				t.Fatalf("err = %v, want a VerifyError saying %q", err, tc.what)
			}
			if si := streamInfo(t, js, "SRC"); fmt.Sprint(si.Config.Subjects) != "[s.>]" || si.State.Msgs != tc.left {
				t.Fatalf("source after: %v, %d messages, want given back with %d", si.Config.Subjects, si.State.Msgs, tc.left)
			}
			sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true})
			if err != nil || !sum.Verified || sum.Messages != tc.left {
				t.Fatalf("rerun: %+v %v", sum, err)
			}
		})
	}
}

// A mirror of a workqueue source begun by an earlier jetctl (which drains
// it) is not continued: refused, saying why and what to do.
func TestMoveRefusesAnEarlierMirrorOfAWorkqueue(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC2", Mirror: &jetstream.StreamSource{Name: "SRC"},
		Metadata: map[string]string{"jetctl.migrate": `{"source":"SRC","phase":"copying"}`}}); err != nil {
		t.Fatal(err)
	}
	ep := migrate.Endpoint{JS: js}
	_, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2", Cutover: true})
	if !errors.Is(err, migrate.ErrTargetExists) || !strings.Contains(err.Error(), "a mirror takes the messages out of a workqueue source; delete \"SRC2\" and run again") {
		t.Fatalf("err = %v", err)
	}
}

// The rehearsal (a copy without --cutover) leaves every source as it was,
// message by message, times included, and its config too, whatever its
// retention: limits and interest sources are mirrored (a mirror takes
// nothing out of them), workqueue sources copied by jetctl.
func TestRehearsalLeavesEverySourceAsItWas(t *testing.T) {
	for _, tc := range []struct {
		name string
		ret  jetstream.RetentionPolicy
		cons []jetstream.ConsumerConfig
	}{
		{"limits", jetstream.LimitsPolicy, nil},
		{"interest", jetstream.InterestPolicy, []jetstream.ConsumerConfig{{Durable: "C", AckPolicy: explicit}}},
		{"interest-filtered", jetstream.InterestPolicy, []jetstream.ConsumerConfig{{Durable: "A", AckPolicy: explicit, FilterSubject: "s.a"}}},
		{"workqueue", jetstream.WorkQueuePolicy, nil},
		{"workqueue-filtered", jetstream.WorkQueuePolicy, []jetstream.ConsumerConfig{{Durable: "A", AckPolicy: explicit, FilterSubject: "s.a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			makeSource(t, js, tc.ret, tc.cons...)
			before, binfo := storedMsgs(t, js, "SRC", false)
			ep := migrate.Endpoint{JS: js}
			sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "SRC", Target: "SRC2"})
			if err != nil || !sum.Verified {
				t.Fatalf("rehearsal: %+v %v", sum, err)
			}
			after, ainfo := storedMsgs(t, js, "SRC", false)
			sameStored(t, before, after)
			for seq, b := range before {
				if !after[seq].t.Equal(b.t) {
					t.Fatalf("seq %d: stored at %v, was %v", seq, after[seq].t, b.t)
				}
			}
			bs, as := binfo.State, ainfo.State
			if as.Msgs != bs.Msgs || as.FirstSeq != bs.FirstSeq || as.LastSeq != bs.LastSeq || as.Bytes != bs.Bytes {
				t.Errorf("source state %+v, was %+v", as, bs)
			}
			bc, ac := binfo.Config, ainfo.Config
			bc.Metadata, ac.Metadata = nil, nil
			if fmt.Sprintf("%+v", bc) != fmt.Sprintf("%+v", ac) {
				t.Errorf("source config\n%+v\nwas\n%+v", ac, bc)
			}
		})
	}
}
