package dlq_test

// Server behaviour the sweep is built around (docs/dlq.md, sweep). If a
// future server changes it, the test fails and the sweep needs a look.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// The first update of a consumer after the server restarted is applied,
// and the server's reply carries the config the consumer had before it:
// the server answers a create or update with the info it kept when it
// made the consumer (its "initial info", meant for the reply to the
// create), and a consumer recovered at a restart keeps one nobody took.
// nats.go's UpdateConsumer checks the reply's filter_subjects and fails
// with "multiple consumer filter subjects not supported by nats-server",
// although the server holds the new filters; the second update's reply is
// right. That is why dlq setup --retry-subject judges an update by what
// the server holds, read back (retry.go), not by the reply.
func TestFactFirstUpdateAfterRestartRepliesTheOldConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := embeddedtest.Start(t)
	js := embeddedtest.Reconnecting(t, c)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>", "retry.>"}}); err != nil {
		t.Fatal(err)
	}
	cfg := jetstream.ConsumerConfig{Durable: "mailer", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.>"}
	if _, err := js.CreateConsumer(ctx, "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	waitConsumer(t, ctx, js, "ORDERS", "mailer")

	// The raw reply to the update: the old single filter.
	update := cfg
	update.FilterSubject, update.FilterSubjects = "", []string{"orders.>", "retry.>"}
	reply := updateRaw(t, ctx, js, "ORDERS", update)
	if reply.Config.FilterSubject != "orders.>" || len(reply.Config.FilterSubjects) != 0 {
		t.Errorf("the reply to the first update after a restart carries filter %q, filters %v; want the old config (orders.>, none): the server changed, see retry.go",
			reply.Config.FilterSubject, reply.Config.FilterSubjects)
	}
	// What the server holds: the new filters.
	if got := held(t, ctx, js, "ORDERS", "mailer"); !slices.Equal(got, []string{"orders.>", "retry.>"}) {
		t.Errorf("after the first update the server holds filters %v, want [orders.> retry.>]", got)
	}
	// The second update's reply is right, and nats.go is content.
	if _, err := js.UpdateConsumer(ctx, "ORDERS", update); err != nil {
		t.Errorf("the second update: %v", err)
	}

	// nats.go's own update fails the same way on a consumer recovered at
	// a restart, though the server applies it.
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.>"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	waitConsumer(t, ctx, js, "ORDERS", "billing")
	update.Durable = "billing"
	if _, err := js.UpdateConsumer(ctx, "ORDERS", update); !errors.Is(err, jetstream.ErrConsumerMultipleFilterSubjectsNotSupported) {
		t.Errorf("nats.go's first update after a restart: %v, want %v", err, jetstream.ErrConsumerMultipleFilterSubjectsNotSupported)
	}
	if got := held(t, ctx, js, "ORDERS", "billing"); !slices.Equal(got, []string{"orders.>", "retry.>"}) {
		t.Errorf("after nats.go's update the server holds filters %v, want [orders.> retry.>]", got)
	}
}

// waitConsumer waits until the restarted server answers for the consumer.
func waitConsumer(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, name string) {
	t.Helper()
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.Consumer(try, stream, name)
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("stream %q: consumer %q after the restart: %v", stream, name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// updateRaw sends an update request and returns the server's reply.
func updateRaw(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) *jetstream.ConsumerInfo {
	t.Helper()
	body, err := json.Marshal(map[string]any{"stream_name": stream, "config": cfg, "action": "update"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := js.Conn().RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE."+stream+"."+cfg.Durable, body)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		jetstream.ConsumerInfo
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Error != nil {
		t.Fatalf("update: %v", reply.Error)
	}
	return &reply.ConsumerInfo
}

// held are the filter subjects the server holds for the consumer.
func held(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, name string) []string {
	t.Helper()
	cons, err := js.Consumer(ctx, stream, name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cons.CachedInfo().Config
	if cfg.FilterSubject != "" {
		return []string{cfg.FilterSubject}
	}
	return cfg.FilterSubjects
}

// A capture that reads the recorder (capture_source.go) is a stream
// sourcing it, filtered by subject transforms. Its history rests on what
// the server does with a source's start: a source from sequence 1 copies
// every matching message the origin still holds (a start below the
// origin's first sequence starts there), once each, then goes on with new
// ones; and a second source of the same origin with other filters, added
// later, copies its own history from its start while the first goes on
// where it was (nothing it copied comes twice). That is how dlq setup
// captures the dead letters the recorder held before the capture existed,
// for the sweep to take (docs/dlq.md, "Dead letters the recorder holds").
func TestFactSourceCopiesTheOriginsHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "REC", Subjects: []string{"adv.>"}}); err != nil {
		t.Fatal(err)
	}
	pub := func(subject string, n int) {
		for range n {
			if _, err := js.Publish(ctx, subject, []byte("old")); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub("adv.dead.a", 3)
	pub("adv.nak.a", 5)
	pub("adv.dead.b", 2)
	// The oldest two are gone: the origin starts at seq 3.
	rec, err := js.Stream(ctx, "REC")
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Purge(ctx, jetstream.WithPurgeSequence(3)); err != nil {
		t.Fatal(err)
	}
	source := func(filter string, start uint64) *jetstream.StreamSource {
		return &jetstream.StreamSource{Name: "REC", OptStartSeq: start, SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: filter}}}
	}
	cfg := jetstream.StreamConfig{Name: "CAP", Sources: []*jetstream.StreamSource{source("adv.dead.a", 1)}}
	capture, err := js.CreateStream(ctx, cfg)
	if err != nil {
		t.Fatalf("a source from seq 1, below the origin's first: %v", err)
	}
	waitMsgs(t, capture, 1) // seq 3, the one of a's three left
	pub("adv.dead.a", 1)
	waitMsgs(t, capture, 2)

	// A second source of REC for b, from seq 1: b's history comes, a's
	// does not come again.
	cfg.Sources = append(cfg.Sources, source("adv.dead.b", 1))
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("a second source of the same stream with another filter: %v", err)
	}
	waitMsgs(t, capture, 4)
	// A new message of each after it: a source delivers in the origin's
	// order, so a's history, had it come again, would be here before it.
	for _, subject := range []string{"adv.dead.a", "adv.dead.b"} {
		if _, err := js.Publish(ctx, subject, []byte("new")); err != nil {
			t.Fatal(err)
		}
	}
	for _, subject := range []string{"adv.dead.a", "adv.dead.b"} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			m, err := capture.GetLastMsgForSubject(ctx, subject)
			if err == nil && string(m.Data) == "new" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the new message on %s never reached the capture: %v", subject, err)
			}
		}
	}
	si, err := capture.Info(ctx, jetstream.WithSubjectFilter("adv.>"))
	if err != nil {
		t.Fatal(err)
	}
	if si.State.Msgs != 6 || si.State.Subjects["adv.dead.a"] != 3 || si.State.Subjects["adv.dead.b"] != 3 || si.State.Subjects["adv.nak.a"] != 0 {
		t.Errorf("the capture holds %d messages by subject %v, want a 3 (one of its history, two new), b 3 (two of its history, one new), no nak", si.State.Msgs, si.State.Subjects)
	}
}
