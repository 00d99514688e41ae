package dlq_test

// Server behaviour the sweep is built around (docs/dlq.md, sweep). If a
// future server changes it, the test fails and the sweep needs a look.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// A purge below a sequence moves the ack floor of a consumer with nothing
// pending to everything it has delivered, past dead messages above the
// purge it never acknowledged. On a workqueue stream those messages then
// count as acknowledged: a leader change or a restart removes them. That
// is why the sweep removes dead messages with a delete each, never with a
// purge of the ones it has copied (tried; a stream leader step-down in
// testscripts/cluster/dlq_stepdown then lost the dead messages not yet
// swept).
func TestFactPurgeMovesAckFloorPastDeadMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy,
		MaxDeliver: 1, AckWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := js.Publish(ctx, "jobs.run", []byte("poison")); err != nil {
			t.Fatal(err)
		}
	}
	// The worker gets all ten once and never acknowledges them: the ack
	// wait ends, MaxDeliver is reached, they are dead.
	b, err := cons.Fetch(10, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range b.Messages() {
		got++
	}
	if got != 10 {
		t.Fatalf("fetched %d, want 10", got)
	}
	var ci *jetstream.ConsumerInfo
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ci, err = cons.Info(ctx); err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ci.NumAckPending != 0 || ci.AckFloor.Stream != 0 {
		t.Fatalf("before the purge: %d pending, ack floor %d; want 0 and 0", ci.NumAckPending, ci.AckFloor.Stream)
	}

	if err := st.Purge(ctx, jetstream.WithPurgeSequence(4)); err != nil {
		t.Fatal(err)
	}
	if ci, err = cons.Info(ctx); err != nil {
		t.Fatal(err)
	}
	si, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.AckFloor.Stream != 10 || si.State.Msgs != 7 {
		t.Errorf("after purging below 4: ack floor %d with %d messages left, want 10 with 7 (the server changed: see docs/dlq.md)", ci.AckFloor.Stream, si.State.Msgs)
	}
}

// The retry subject a redrive uses (retry.go) rests on three things the
// server does: a stream takes a new subject in place; a durable's
// filter_subjects take one more subject in place, keeping its ack floor
// and what it delivered (nothing is delivered again); and a message on
// that subject goes to that consumer alone, while an interest stream
// keeps it until that consumer acknowledges it.
func TestFactRetrySubjectReachesOneConsumer(t *testing.T) {
	for _, retention := range []jetstream.RetentionPolicy{jetstream.LimitsPolicy, jetstream.InterestPolicy} {
		t.Run(retention.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			js := embeddedtest.JetStream(t)
			st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Retention: retention})
			if err != nil {
				t.Fatal(err)
			}
			var cons []jetstream.Consumer
			for _, name := range []string{"mailer", "billing"} {
				c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.>"})
				if err != nil {
					t.Fatal(err)
				}
				cons = append(cons, c)
			}
			for range 5 {
				if _, err := js.Publish(ctx, "orders.created", []byte("order")); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range cons {
				if n := fetchAck(t, c, 5); n != 5 {
					t.Fatalf("fetched %d, want 5", n)
				}
			}

			retry := "_jetctl.retry.ORDERS.mailer.>"
			sc := st.CachedInfo().Config
			sc.Subjects = append(sc.Subjects, retry)
			if _, err := js.UpdateStream(ctx, sc); err != nil {
				t.Fatal(err)
			}
			cc := cons[0].CachedInfo().Config
			cc.FilterSubject, cc.FilterSubjects = "", []string{"orders.>", retry}
			mailer, err := js.UpdateConsumer(ctx, "ORDERS", cc)
			if err != nil {
				t.Fatal(err)
			}
			ci, err := mailer.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ci.AckFloor.Stream != 5 || ci.Delivered.Stream != 5 || ci.NumPending != 0 || ci.NumAckPending != 0 {
				t.Fatalf("after the filter update: ack floor %d, delivered %d, %d pending, %d ack pending; want 5, 5, 0, 0",
					ci.AckFloor.Stream, ci.Delivered.Stream, ci.NumPending, ci.NumAckPending)
			}

			if _, err := js.Publish(ctx, "_jetctl.retry.ORDERS.mailer.orders.created", []byte("order")); err != nil {
				t.Fatal(err)
			}
			bi, err := cons[1].Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if bi.NumPending != 0 {
				t.Fatalf("billing has %d pending, want 0", bi.NumPending)
			}
			if retention == jetstream.InterestPolicy {
				if si, _ := st.Info(ctx); si.State.Msgs != 1 {
					t.Fatalf("interest stream holds %d messages before mailer's ack, want 1", si.State.Msgs)
				}
			}
			if n := fetchAck(t, mailer, 1); n != 1 {
				t.Fatalf("mailer fetched %d, want 1", n)
			}
			if retention == jetstream.InterestPolicy {
				waitMsgs(t, st, 0)
			}
			b, err := cons[1].FetchNoWait(10)
			if err != nil {
				t.Fatal(err)
			}
			for m := range b.Messages() {
				t.Fatalf("billing received %s", m.Subject())
			}
		})
	}
}

// fetchAck fetches up to n messages, acknowledges each (waiting for the
// server's answer) and returns how many came.
func fetchAck(t *testing.T, c jetstream.Consumer, n int) int {
	t.Helper()
	b, err := c.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range b.Messages() {
		if err := m.DoubleAck(context.Background()); err != nil {
			t.Fatal(err)
		}
		got++
	}
	return got
}

func waitMsgs(t *testing.T, st jetstream.Stream, want uint64) {
	t.Helper()
	var si *jetstream.StreamInfo
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if si, err = st.Info(context.Background()); err == nil && si.State.Msgs == want {
			return
		}
	}
	t.Fatalf("stream holds %v messages, want %d", si, want)
}

// dlq take (take.go) terminates one message for one consumer with a
// +TERM on that consumer's ack subject for the message's stream sequence,
// $JS.ACK.<stream>.<consumer>.<deliveries>.<stream seq>.<consumer seq>.
// <time>.<pending>, without receiving the delivery. The server keys an
// explicit ack on the stream sequence alone (the consumer sequence comes
// from its own pending record), so while the message is pending for that
// consumer it stops redelivering it and moves the ack floor past it; the
// other consumers of a limits stream are not touched and still receive
// it. For a sequence that is not pending (here: acknowledged), the +TERM
// changes nothing.
func TestFactTermOnAckSubjectTakesOneMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "other", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "orders.created", []byte("order")); err != nil {
			t.Fatal(err)
		}
	}
	// The worker takes seq 1 (the poison message) and holds it; it acks 2.
	b, err := worker.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var held []jetstream.Msg
	for m := range b.Messages() {
		held = append(held, m)
	}
	if len(held) != 2 {
		t.Fatalf("fetched %d, want 2", len(held))
	}
	if err := held[1].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	term := func(seq uint64) {
		t.Helper()
		if _, err := js.Conn().Request(fmt.Sprintf("$JS.ACK.ORDERS.worker.0.%d.0.0.0", seq), []byte("+TERM taken"), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Not pending (acknowledged): nothing changes.
	term(2)
	ci, err := worker.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.AckFloor.Stream != 0 || ci.NumAckPending != 1 {
		t.Fatalf("after a +TERM of an acknowledged message: ack floor %d, %d ack pending; want 0 and 1", ci.AckFloor.Stream, ci.NumAckPending)
	}
	// Pending: terminated for the worker, the ack floor moves past it.
	term(1)
	if ci, err = worker.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if ci.AckFloor.Stream != 2 || ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("after the +TERM: ack floor %d, %d ack pending, %d redelivered; want 2, 0, 0", ci.AckFloor.Stream, ci.NumAckPending, ci.NumRedelivered)
	}
	// The worker's next message is 3, not 1 again.
	b, err = worker.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		meta, _ := m.Metadata()
		if meta.Sequence.Stream != 3 {
			t.Fatalf("worker got seq %d next, want 3", meta.Sequence.Stream)
		}
	}
	// The other consumer still receives all three, the first one too.
	b, err = other.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range b.Messages() {
		meta, _ := m.Metadata()
		seqs = append(seqs, meta.Sequence.Stream)
	}
	if fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("other consumer got %v, want [1 2 3]", seqs)
	}
	if si, _ := st.Info(ctx); si.State.Msgs != 3 {
		t.Fatalf("the limits stream holds %d messages, want 3", si.State.Msgs)
	}
}

// What a publish does to the other messages of the stream it lands in,
// by the stream's limits: the facts behind the redrive's refusals
// (docs/dlq.md, "What a redrive never does"). A redrive is a new publish
// of an old message; where the server removes another message to store
// it, the redrive would act on messages it never touched.

// limitsStream creates a stream L on L.> with edit applied, and publishes
// each "subject=payload" of msgs.
func limitsStream(t *testing.T, edit func(*jetstream.StreamConfig), msgs ...string) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "L", Subjects: []string{"L.>"}}
	edit(&cfg)
	st, err := js.CreateStream(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		subject, data, _ := strings.Cut(m, "=")
		if _, err := js.Publish(ctx, subject, []byte(data)); err != nil {
			t.Fatalf("publish %s: %v", m, err)
		}
	}
	return js, st
}

// stored lists the stream's messages as "subject=payload", in order.
func stored(t *testing.T, st jetstream.Stream) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	si, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for seq := si.State.FirstSeq; seq <= si.State.LastSeq && si.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Subject+"="+string(m.Data))
	}
	return strings.Join(out, " ")
}

// republish publishes subject=data again, as a redrive would, and returns
// the server's refusal, if any.
func republish(t *testing.T, js jetstream.JetStream, m string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject, data, _ := strings.Cut(m, "=")
	_, err := js.Publish(ctx, subject, []byte(data))
	return err
}

// max_msgs_per_subject: a publish onto a subject that holds its limit
// removes the oldest message on that subject, whatever the discard
// policy (discard new refuses only with discard_new_per_subject). With
// history 1 (a KV bucket's stream, a last-value stream) the message
// removed is the subject's current value, newer than the dead letter
// republished over it.
func TestFactPerSubjectLimitRemovesTheSubjectsOldest(t *testing.T) {
	for _, discard := range []jetstream.DiscardPolicy{jetstream.DiscardOld, jetstream.DiscardNew} {
		js, st := limitsStream(t, func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 1; c.Discard = discard },
			"L.k=current", "L.other=x")
		if err := republish(t, js, "L.k=dead letter"); err != nil {
			t.Fatalf("discard %s: %v", discard, err)
		}
		if got := stored(t, st); got != "L.other=x L.k=dead letter" {
			t.Fatalf("discard %s: the stream holds %s; want the current value of L.k gone", discard, got)
		}
	}
}

// discard_new_per_subject (with discard new): the publish onto a full
// subject is refused instead, and nothing is removed.
func TestFactDiscardNewPerSubjectRefuses(t *testing.T) {
	js, st := limitsStream(t, func(c *jetstream.StreamConfig) {
		c.MaxMsgsPerSubject, c.Discard, c.DiscardNewPerSubject = 1, jetstream.DiscardNew, true
	}, "L.k=current")
	err := republish(t, js, "L.k=dead letter")
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errStoreFailed || !strings.Contains(apiErr.Description, "maximum messages per subject exceeded") {
		t.Fatalf("publish onto a full subject: %v; want error %d, maximum messages per subject exceeded", err, errStoreFailed)
	}
	if got := stored(t, st); got != "L.k=current" {
		t.Fatalf("the stream holds %s", got)
	}
}

// max_msgs with discard new: the publish into a full stream is refused,
// and nothing is removed.
func TestFactDiscardNewRefusesAtStreamLimit(t *testing.T) {
	js, st := limitsStream(t, func(c *jetstream.StreamConfig) { c.MaxMsgs, c.Discard = 2, jetstream.DiscardNew }, "L.a=1", "L.b=2")
	err := republish(t, js, "L.k=dead letter")
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errStoreFailed || !strings.Contains(apiErr.Description, "maximum messages exceeded") {
		t.Fatalf("publish into a full stream: %v; want error %d, maximum messages exceeded", err, errStoreFailed)
	}
	if got := stored(t, st); got != "L.a=1 L.b=2" {
		t.Fatalf("the stream holds %s", got)
	}
}

// max_msgs (and max_bytes) with discard old: the publish into a full
// stream removes the stream's oldest message, on any subject: what every
// publish into that stream does, the dead letter's first one included.
func TestFactDiscardOldRemovesTheStreamsOldest(t *testing.T) {
	js, st := limitsStream(t, func(c *jetstream.StreamConfig) { c.MaxMsgs = 2 }, "L.a=1", "L.b=2")
	if err := republish(t, js, "L.k=dead letter"); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, st); got != "L.b=2 L.k=dead letter" {
		t.Fatalf("the stream holds %s", got)
	}
}

// errStoreFailed is the server's JSStreamStoreFailedF: a publish the
// stream's limits refuse.
const errStoreFailed jetstream.ErrorCode = 10077

// interest retention: a publish no consumer receives is acknowledged and
// dropped at once. A redrive there, with its dead letter's consumer gone,
// would be acknowledged, its DLQ copy deleted, and the message lost.
func TestFactInterestStreamDropsWhatNoConsumerReceives(t *testing.T) {
	js, st := limitsStream(t, func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "other", FilterSubject: "L.other", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "L.k", []byte("dead letter"))
	if err != nil || ack.Sequence != 1 {
		t.Fatalf("publish: %v %v; want it acknowledged at seq 1", ack, err)
	}
	if got := stored(t, st); got != "" {
		t.Fatalf("the stream holds %s; want nothing", got)
	}
}
