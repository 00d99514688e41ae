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
	"github.com/jetctl/jetctl/pkg/migrate"
)

// counterSource makes counter stream C (subjects c.>) with n increments
// round c.a, c.b and c.c (increment i adds i), and returns each
// subject's total.
func counterSource(t *testing.T, js jetstream.JetStream, n int) map[string]string {
	t.Helper()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "C", Subjects: []string{"c.>"}, AllowMsgCounter: true, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	incr(t, js, 1, n)
	return totals(t, js, "C")
}

// incr publishes increments from..to round c.a, c.b and c.c (increment
// i adds i).
func incr(t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		subject := []string{"c.a", "c.b", "c.c"}[i%3]
		if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: subject, Header: nats.Header{"Nats-Incr": {fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// totals is each subject's total in a counter stream: its last message's
// payload.
func totals(t *testing.T, js jetstream.JetStream, stream string) map[string]string {
	t.Helper()
	s, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, subject := range []string{"c.a", "c.b", "c.c"} {
		m, err := s.GetLastMsgForSubject(ctx(t), subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[subject] = string(m.Data)
	}
	return out
}

// A counter stream moves by sourcing: every subject's total is kept and
// verified, the message count and per-subject counts too; where the
// source has a gap the target renumbers, the summary says so, and a
// durable's ack floor is carried to the target's sequence of the same
// message. Increments go on from the totals after the move.
func TestMoveCounterStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		gap  bool
	}{{"no-gaps", false}, {"a-gap", true}} {
		t.Run(tc.name, func(t *testing.T) {
			js := embeddedtest.JetStream(t)
			counterSource(t, js, 30)
			src, err := js.Stream(ctx(t), "C")
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Purge(ctx(t), jetstream.WithPurgeSequence(3)); err != nil { // keeps 3..
				t.Fatal(err)
			}
			if tc.gap {
				if err := src.DeleteMsg(ctx(t), 5); err != nil {
					t.Fatal(err)
				}
			}
			want := totals(t, js, "C")
			cons, err := js.CreateOrUpdateConsumer(ctx(t), "C", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatal(err)
			}
			b, err := cons.Fetch(8)
			if err != nil {
				t.Fatal(err)
			}
			var next string // the payload the consumer gets next, after the move
			i := 0
			for m := range b.Messages() {
				if i++; i <= 7 {
					if err := m.DoubleAck(ctx(t)); err != nil {
						t.Fatal(err)
					}
				} else {
					next = m.Subject() + " " + string(m.Data())
				}
			}
			dry, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "C", Target: "C2", Cutover: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if dry.Mechanism != "source" || dry.CopyReason != "counter" {
				t.Fatalf("dry run: mechanism %q (%q), want source (counter)", dry.Mechanism, dry.CopyReason)
			}
			sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "C", Target: "C2", Cutover: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("summary %+v", sum)
			wantMsgs := uint64(28)
			if tc.gap {
				wantMsgs = 27
			}
			if !sum.Verified || sum.Mechanism != "source" || sum.Messages != wantMsgs || sum.SequencesKept == tc.gap {
				t.Fatalf("summary %+v: want verified, source, %d messages, sequences kept %v", sum, wantMsgs, !tc.gap)
			}
			if got := totals(t, js, "C2"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("totals %v, the source's %v", got, want)
			}
			si := streamInfo(t, js, "C2")
			if !si.Config.AllowMsgCounter || len(si.Config.Sources) > 0 || fmt.Sprint(si.Config.Subjects) != "[c.>]" || si.State.Msgs != wantMsgs {
				t.Fatalf("C2: config %+v, state %+v", si.Config, si.State)
			}
			if _, err := js.Stream(ctx(t), "C"); !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Fatalf("the source: %v, want it deleted", err)
			}
			// The consumer delivers the message after its ack floor.
			c2, err := js.Consumer(ctx(t), "C2", "proj")
			if err != nil {
				t.Fatal(err)
			}
			m, err := c2.Next()
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Subject() + " " + string(m.Data()); got != next {
				t.Fatalf("proj delivers %q first, want %q (the first not acknowledged)", got, next)
			}
			if tc.gap && (len(sum.Consumers) != 1 || !strings.Contains(sum.Consumers[0].Changed, "ack floor seq")) {
				t.Errorf("consumers %+v: want the ack floor's new sequence said", sum.Consumers)
			}
			// Increments go on from the totals.
			before := totals(t, js, "C2")["c.a"]
			if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c.a", Header: nats.Header{"Nats-Incr": {"1000"}}}); err != nil {
				t.Fatal(err)
			}
			var n, after int
			fmt.Sscanf(strings.Trim(before, `{}"val:`), "%d", &n)
			fmt.Sscanf(strings.Trim(totals(t, js, "C2")["c.a"], `{}"val:`), "%d", &after)
			if after != n+1000 {
				t.Fatalf("c.a: %d after adding 1000 to %d", after, n)
			}
		})
	}
}

// Increments published while the target sources (a live round) and a
// message deleted from the source after it was sourced: the cutover
// deletes it from the target too, and the totals are the source's.
func TestMoveCounterStreamWhileIncrementing(t *testing.T) {
	js := embeddedtest.JetStream(t)
	counterSource(t, js, 300)
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "C", Target: "C2"})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Verified || sum.Cutover {
		t.Fatalf("copy: %+v", sum)
	}
	incr(t, js, 301, 400)
	src, err := js.Stream(ctx(t), "C")
	if err != nil {
		t.Fatal(err)
	}
	// The last increment of c.a (seq 399) deleted: its total goes back.
	if err := src.DeleteMsg(ctx(t), 399); err != nil {
		t.Fatal(err)
	}
	if err := src.DeleteMsg(ctx(t), 10); err != nil {
		t.Fatal(err)
	}
	want := totals(t, js, "C")
	sum, err = migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "C", Target: "C2", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Verified || sum.Messages != 398 {
		t.Fatalf("cutover: %+v", sum)
	}
	if got := totals(t, js, "C2"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("totals %v, the source's %v", got, want)
	}
}

// Between servers with no route jetctl would copy message by message,
// which applies each increment again: a counter stream is refused before
// anything is created.
func TestClientCopyRefusesACounterStream(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	counterSource(t, sjs, 3)
	for _, dry := range []bool{true, false} {
		_, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "C", Cutover: true, DryRun: dry})
		if !errors.Is(err, migrate.ErrInvalid) || !strings.Contains(err.Error(), "counter stream") {
			t.Fatalf("dry run %v: %v, want a refusal of the counter stream", dry, err)
		}
	}
	if _, err := djs.Stream(ctx(t), "C"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the target: %v, want none created", err)
	}
}

// A counter stream's move stopped at each of its steps in turn and run
// again, while a client keeps incrementing c.live through the cutovers
// (retrying what was certainly not stored): every subject's total is the
// source's, c.live's counts every increment acknowledged, and the
// consumer is where it was.
func TestKillAndRerunCounterStream(t *testing.T) {
	js := embeddedtest.JetStream(t)
	want := counterSource(t, js, 300)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "C", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "c.a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(20)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	floor := consumerInfo(t, js, "C", "proj").AckFloor.Stream
	var acked, uncertain int
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := js.PublishMsg(c, &nats.Msg{Subject: "c.live", Header: nats.Header{"Nats-Incr": {"1"}}})
			cancel()
			switch {
			case err == nil:
				acked++
			case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
				time.Sleep(time.Millisecond) // not stored: no stream had the subject
			default:
				uncertain++ // stored or not: the answer was lost
				time.Sleep(time.Millisecond)
			}
		}
	}()
	ep := migrate.Endpoint{JS: js}
	for _, step := range killSteps {
		stopAt, cancel := context.WithCancel(ctx(t))
		_, err := migrate.Stream(stopAt, ep, ep, migrate.Config{Stream: "C", Target: "C2", Cutover: true, AtStep: func(s string) {
			if s == step {
				cancel()
			}
		}})
		cancel()
		if step == "finished" && err != nil || step != "finished" && !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at %s: %v, want it stopped there (or, at finished, done)", step, err)
		}
	}
	sum, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "C", Target: "C2", Cutover: true})
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !sum.AlreadyDone || !sum.Verified || sum.Mechanism != "source" {
		t.Errorf("last run: %+v, want already done, verified, by source", sum)
	}
	if got := totals(t, js, "C2"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("totals %v, the source's %v", got, want)
	}
	s2, err := js.Stream(ctx(t), "C2")
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	if m, err := s2.GetLastMsgForSubject(ctx(t), "c.live"); err == nil {
		fmt.Sscanf(strings.Trim(string(m.Data), `{}"val:`), "%d", &live)
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatal(err)
	}
	if live < acked || live > acked+uncertain {
		t.Fatalf("c.live totals %d: %d increments acknowledged, %d unanswered", live, acked, uncertain)
	}
	if ci := consumerInfo(t, js, "C2", "proj"); ci.AckFloor.Stream != floor || ci.Paused {
		t.Errorf("proj on C2: ack floor %d (paused %v), want %d", ci.AckFloor.Stream, ci.Paused, floor)
	}
	t.Logf("c.live: %d acknowledged, %d unanswered, total %d", acked, uncertain, live)
}

// A message of the source missing from the counter way's target fails the
// cutover's verification (exit 4): the source gets its subjects back.
func TestMoveCounterStreamVerifyFailureGivesTheSourceBack(t *testing.T) {
	js := embeddedtest.JetStream(t)
	counterSource(t, js, 30)
	ep := migrate.Endpoint{JS: js}
	if _, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "C", Target: "C2"}); err != nil {
		t.Fatal(err)
	}
	t2, err := js.Stream(ctx(t), "C2")
	if err != nil {
		t.Fatal(err)
	}
	if err := t2.DeleteMsg(ctx(t), 12); err != nil {
		t.Fatal(err)
	}
	_, err = migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "C", Target: "C2", Cutover: true})
	if !errors.Is(err, migrate.ErrVerify) || !strings.Contains(err.Error(), "seq 12 is missing") {
		t.Fatalf("cutover: %v, want a verification failure naming seq 12", err)
	}
	if si := streamInfo(t, js, "C"); fmt.Sprint(si.Config.Subjects) != "[c.>]" {
		t.Fatalf("the source's subjects %v, want them back", si.Config.Subjects)
	}
}

// A counter stream moves to another JetStream domain (a leaf node's):
// the target sources it through $JS.hub.API, and the totals are kept.
func TestMoveCounterStreamToAnotherDomain(t *testing.T) {
	hub, leaf := embeddedtest.DomainPair(t)
	jsHub := embeddedtest.Connect(t, hub, "")
	jsLeaf := embeddedtest.Connect(t, leaf, "")
	want := counterSource(t, jsHub, 30)
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: jsHub}, migrate.Endpoint{JS: jsLeaf}, migrate.Config{Stream: "C", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Verified || sum.Mechanism != "source" || sum.Messages != 30 || !sum.SequencesKept {
		t.Fatalf("summary %+v", sum)
	}
	if got := totals(t, jsLeaf, "C"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("totals %v, the source's %v", got, want)
	}
}
