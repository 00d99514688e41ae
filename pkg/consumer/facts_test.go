package consumer_test

// Server behaviour the health model's priority-group and replication
// rules are built on (docs/consumer.md, "Priority groups" and
// "Replication consumers"). If a future server changes it, the test fails
// and the rules need a look.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// factServer starts a server and returns a function that connects one
// more client to it (each its own connection, closed when the test ends).
func factServer(t *testing.T) (*embedded.Cluster, func() (*nats.Conn, jetstream.JetStream)) {
	t.Helper()
	c := embeddedtest.Start(t)
	return c, func() (*nats.Conn, jetstream.JetStream) {
		nc, err := nats.Connect(c.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
}

// On a single server only a stream's info names the server it is on
// (cluster.leader, the server's name; no cluster name, no replicas): the
// stream list leaves cluster out, and neither a consumer's info nor the
// consumer list has any. On a cluster the list, the info and every
// consumer say their leader. So the leader jetctl shows for a single
// server's streams and consumers is what one stream info says
// (ListStreams, State.Leader; issue 34).
func TestFactSingleServerNamesItselfInStreamInfoOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, connect := factServer(t)
	_, js := connect()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	name := c.Servers()[0].Name()
	si, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.Cluster == nil || si.Cluster.Leader != name || si.Cluster.Name != "" || len(si.Cluster.Replicas) > 0 || si.Cluster.RaftGroup != "" {
		t.Fatalf("single server: stream info's cluster %+v, want only leader %q", si.Cluster, name)
	}
	listed := listedStream(t, ctx, js, "ORDERS")
	if listed.Cluster != nil {
		t.Fatalf("single server: the stream list says cluster %+v, want none", listed.Cluster)
	}
	ci, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if ci.CachedInfo().Cluster != nil {
		t.Fatalf("single server: consumer info's cluster %+v, want none", ci.CachedInfo().Cluster)
	}
	for ci := range st.ListConsumers(ctx).Info() {
		if ci.Cluster != nil {
			t.Fatalf("single server: the consumer list says cluster %+v, want none", ci.Cluster)
		}
	}

	if testing.Short() {
		t.Skip("the cluster half starts 3 servers")
	}
	cl, err := embedded.Start(embedded.Config{Nodes: 3, StoreDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Shutdown)
	cjs := embeddedtest.Connect(t, cl, "")
	cst, err := cjs.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	ccons, err := cst.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if l := listedStream(t, ctx, cjs, "ORDERS"); l.Cluster == nil || l.Cluster.Leader == "" {
		t.Fatalf("cluster: the stream list says cluster %+v, want its leader", l.Cluster)
	}
	if cc := ccons.CachedInfo().Cluster; cc == nil || cc.Leader == "" {
		t.Fatalf("cluster: consumer info's cluster %+v, want its leader", cc)
	}
}

// listedStream is the stream list's entry for name.
func listedStream(t *testing.T, ctx context.Context, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	l := js.ListStreams(ctx)
	var found *jetstream.StreamInfo
	for si := range l.Info() {
		if si.Config.Name == name {
			found = si
		}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	if found == nil {
		t.Fatalf("stream %s not listed", name)
	}
	return found
}

// pinnedConsumer makes stream JOBS and a pull consumer "workers" with the
// pinned_client policy and groups.
func pinnedConsumer(t *testing.T, ctx context.Context, js jetstream.JetStream, timeout time.Duration, groups ...string) jetstream.Stream {
	t.Helper()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: groups, PinnedTTL: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func publish(t *testing.T, ctx context.Context, js jetstream.JetStream, n int) {
	t.Helper()
	for range n {
		if _, err := js.Publish(ctx, "jobs.run", []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
}

// fetchOne pulls one message in group (waiting up to wait) and acks it;
// its Nats-Pin-Id, "" and false when nothing came.
func fetchOne(t *testing.T, c jetstream.Consumer, wait time.Duration, opts ...jetstream.FetchOpt) (string, bool) {
	t.Helper()
	b, err := c.Fetch(1, append([]jetstream.FetchOpt{jetstream.FetchMaxWait(wait)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(context.Background()); err != nil {
			t.Fatal(err)
		}
		return m.Headers().Get("Nats-Pin-Id"), true
	}
	return "", false
}

func info(t *testing.T, ctx context.Context, st jetstream.Stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := st.Consumer(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return c.CachedInfo()
}

// waitInfo polls the consumer's info until ok holds (at most 10 s).
func waitInfo(t *testing.T, ctx context.Context, st jetstream.Stream, name, what string, ok func(*jetstream.ConsumerInfo) bool) *jetstream.ConsumerInfo {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ci := info(t, ctx, st, name)
		if ok(ci) {
			return ci
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s, not %s: %+v", what, ci)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The server pins a group to the client whose pull it first delivers to,
// tells that client its id in the Nats-Pin-Id header, and reports the id
// and the time it pinned the group (pinned_ts) in the consumer info.
// pinned_ts is when the pin was given: the pinned client's later pulls do
// not move it, so now - pinned_ts is how long the group has been pinned.
// The info reports the first group of the config only (one pin per
// consumer), and nothing pinned before a delivery. A consumer with the
// pinned_client policy and no priority_timeout gets 2m.
func TestFactPinnedClientReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, connect := factServer(t)
	_, js := connect()
	st := pinnedConsumer(t, ctx, js, time.Hour, "jobs", "other")

	ci := info(t, ctx, st, "workers")
	if len(ci.PriorityGroups) != 1 || ci.PriorityGroups[0].Group != "jobs" || ci.PriorityGroups[0].PinnedClientID != "" || !ci.PriorityGroups[0].PinnedTS.IsZero() {
		t.Fatalf("before any delivery, priority_groups %+v; want the first group alone, not pinned", ci.PriorityGroups)
	}
	client, err := st.Consumer(ctx, "workers")
	if err != nil {
		t.Fatal(err)
	}
	// A pull that gets nothing pins nothing.
	if _, got := fetchOne(t, client, 100*time.Millisecond, jetstream.FetchPriorityGroup("jobs")); got {
		t.Fatal("a message from an empty stream")
	}
	if ci := info(t, ctx, st, "workers"); ci.PriorityGroups[0].PinnedClientID != "" {
		t.Fatalf("pinned by a pull that got nothing: %+v", ci.PriorityGroups)
	}

	publish(t, ctx, js, 2)
	before := time.Now()
	pin, got := fetchOne(t, client, 5*time.Second, jetstream.FetchPriorityGroup("jobs"))
	after := time.Now()
	if !got || pin == "" {
		t.Fatalf("first delivery: got %v, Nats-Pin-Id %q; want a pin id", got, pin)
	}
	ci = info(t, ctx, st, "workers")
	g := ci.PriorityGroups
	if len(g) != 1 || g[0].Group != "jobs" || g[0].PinnedClientID != pin {
		t.Fatalf("priority_groups %+v; want jobs pinned to %s", g, pin)
	}
	pinnedAt := g[0].PinnedTS
	if pinnedAt.Before(before.Add(-time.Second)) || pinnedAt.After(after.Add(time.Second)) {
		t.Errorf("pinned_ts %s, not between %s and %s", pinnedAt, before, after)
	}
	// The pinned client pulls again: same pin, same pinned_ts.
	time.Sleep(10 * time.Millisecond)
	if again, got := fetchOne(t, client, 5*time.Second, jetstream.FetchPriorityGroup("jobs")); !got || again != pin {
		t.Fatalf("second pull of the pinned client: got %v, pin %q; want %q", got, again, pin)
	}
	if g := info(t, ctx, st, "workers").PriorityGroups; g[0].PinnedClientID != pin || !g[0].PinnedTS.Equal(pinnedAt) {
		t.Errorf("after another pull: %+v; want pinned_ts to stay %s", g, pinnedAt)
	}

	// The default priority_timeout.
	c2, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "defaults", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := c2.CachedInfo().Config.PinnedTTL; d != 2*time.Minute {
		t.Errorf("default priority_timeout %s, want 2m", d)
	}
}

// When the pinned client goes away, the group stays pinned to it: another
// client's pull waits (num_waiting counts it) and gets nothing while
// messages wait, until priority_timeout passes with no pull from the
// pinned client. Then the server unpins the group and pins the waiting
// client (a new id), which gets the messages at once.
func TestFactPinnedClientGoneHoldsGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, connect := factServer(t)
	_, js := connect()
	st := pinnedConsumer(t, ctx, js, time.Hour, "jobs")
	short, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "short", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs"}, PinnedTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = short
	publish(t, ctx, js, 1)

	// Client A is pinned on both consumers, then goes away.
	ncA, jsA := connect()
	pins := map[string]string{}
	for _, name := range []string{"workers", "short"} {
		a, err := jsA.Consumer(ctx, "JOBS", name)
		if err != nil {
			t.Fatal(err)
		}
		pin, got := fetchOne(t, a, 5*time.Second, jetstream.FetchPriorityGroup("jobs"))
		if !got || pin == "" {
			t.Fatalf("%s: client A got %v, pin %q", name, got, pin)
		}
		pins[name] = pin
	}
	ncA.Close()
	publish(t, ctx, js, 1)

	// Client B pulls from "workers" (priority_timeout 1h): its pull waits,
	// counted, and gets nothing; the group stays pinned to A.
	_, jsB := connect()
	b, err := jsB.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() {
		bb, err := b.Fetch(1, jetstream.FetchMaxWait(2*time.Second), jetstream.FetchPriorityGroup("jobs"))
		got := false
		if err == nil {
			for range bb.Messages() {
				got = true
			}
		}
		done <- got
	}()
	ci := waitInfo(t, ctx, st, "workers", "a pull waiting with 1 unprocessed", func(ci *jetstream.ConsumerInfo) bool {
		return ci.NumWaiting >= 1 && ci.NumPending == 1
	})
	if ci.PriorityGroups[0].PinnedClientID != pins["workers"] {
		t.Errorf("while B waits: pinned %q, want A's %q", ci.PriorityGroups[0].PinnedClientID, pins["workers"])
	}
	if <-done {
		t.Fatal("B got a message while the group was pinned to A, who is gone")
	}
	if ci := info(t, ctx, st, "workers"); ci.NumPending != 1 || ci.PriorityGroups[0].PinnedClientID != pins["workers"] {
		t.Errorf("after B's pull: num_pending %d, pinned %q; want 1 and A's", ci.NumPending, ci.PriorityGroups[0].PinnedClientID)
	}

	// On "short" (priority_timeout 1s) B's pull is pinned once A's pin
	// times out, and gets the message.
	bs, err := jsB.Consumer(ctx, "JOBS", "short")
	if err != nil {
		t.Fatal(err)
	}
	pin, got := fetchOne(t, bs, 10*time.Second, jetstream.FetchPriorityGroup("jobs"))
	if !got || pin == "" || pin == pins["short"] {
		t.Fatalf("short: B got %v with pin %q; want a new pin (A's was %q)", got, pin, pins["short"])
	}
	if g := info(t, ctx, st, "short").PriorityGroups; g[0].PinnedClientID != pin {
		t.Errorf("short: pinned %q, want B's %q", g[0].PinnedClientID, pin)
	}
}

// $JS.API.CONSUMER.UNPIN (nats.go: Stream.UnpinConsumer) clears the pin
// at once: the info reports no pinned client, a waiting pull is pinned
// and gets the messages, and the old client's next pull is refused (423,
// nats.go's ErrPinIDMismatch). Unpinning a group that is not
// pinned succeeds and changes nothing. A group the consumer does not have
// is error 10160, also for a consumer without groups; a name that is not
// a group name 10162; an unknown consumer ErrConsumerNotFound (10014); an
// unknown stream 10059.
func TestFactUnpin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, connect := factServer(t)
	nc, js := connect()
	st := pinnedConsumer(t, ctx, js, time.Hour, "jobs")
	publish(t, ctx, js, 1)

	// Nothing pinned yet: unpinning succeeds.
	if err := st.UnpinConsumer(ctx, "workers", "jobs"); err != nil {
		t.Fatalf("unpin with nothing pinned: %v", err)
	}
	_, jsA := connect()
	a, err := jsA.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	pinA, got := fetchOne(t, a, 5*time.Second, jetstream.FetchPriorityGroup("jobs"))
	if !got || pinA == "" {
		t.Fatalf("A: got %v, pin %q", got, pinA)
	}
	publish(t, ctx, js, 1)

	// B waits; the unpin lets it be pinned and served.
	_, jsB := connect()
	b, err := jsB.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		pin string
		got bool
	}
	done := make(chan result, 1)
	go func() {
		bb, err := b.Fetch(1, jetstream.FetchMaxWait(10*time.Second), jetstream.FetchPriorityGroup("jobs"))
		r := result{}
		if err == nil {
			for m := range bb.Messages() {
				r = result{m.Headers().Get("Nats-Pin-Id"), true}
				_ = m.Ack()
			}
		}
		done <- r
	}()
	waitInfo(t, ctx, st, "workers", "B waiting", func(ci *jetstream.ConsumerInfo) bool { return ci.NumWaiting >= 1 })
	if err := st.UnpinConsumer(ctx, "workers", "jobs"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !r.got || r.pin == "" || r.pin == pinA {
		t.Fatalf("after the unpin, B got %v with pin %q; want a new pin (A's %q)", r.got, r.pin, pinA)
	}
	if g := info(t, ctx, st, "workers").PriorityGroups; g[0].PinnedClientID != r.pin {
		t.Errorf("pinned %q, want B's %q", g[0].PinnedClientID, r.pin)
	}
	// A pulls again with its old pin: refused.
	publish(t, ctx, js, 1)
	bb, err := a.Fetch(1, jetstream.FetchMaxWait(time.Second), jetstream.FetchPriorityGroup("jobs"))
	if err != nil {
		t.Fatal(err)
	}
	for range bb.Messages() {
		t.Error("A, unpinned, got a message")
	}
	if !errors.Is(bb.Error(), jetstream.ErrPinIDMismatch) {
		t.Errorf("A's pull with its old pin: %v, want %v", bb.Error(), jetstream.ErrPinIDMismatch)
	}

	// The errors.
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "plain", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	code := func(err error) jetstream.ErrorCode {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			return apiErr.ErrorCode
		}
		return 0
	}
	if err := st.UnpinConsumer(ctx, "workers", "nope"); code(err) != 10160 {
		t.Errorf("unknown group: %v, want error 10160", err)
	}
	if err := st.UnpinConsumer(ctx, "plain", "jobs"); code(err) != 10160 {
		t.Errorf("consumer without groups: %v, want error 10160", err)
	}
	if err := st.UnpinConsumer(ctx, "workers", "not a group!"); code(err) != 10162 {
		t.Errorf("invalid group name: %v, want error 10162", err)
	}
	if err := st.UnpinConsumer(ctx, "ghost", "jobs"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("unknown consumer: %v, want %v", err, jetstream.ErrConsumerNotFound)
	}
	msg, err := nc.Request("$JS.API.CONSUMER.UNPIN.NOPE.workers", []byte(`{"group":"jobs"}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Error == nil || resp.Error.ErrorCode != jetstream.JSErrCodeStreamNotFound {
		t.Errorf("unknown stream: %s, want error %d", msg.Data, jetstream.JSErrCodeStreamNotFound)
	}
}

// An overflow consumer's pull may carry min_pending and min_ack_pending:
// the server holds it (num_waiting counts it) and delivers nothing to it
// while the consumer's unprocessed messages are fewer than min_pending,
// and delivers as soon as they reach it. The thresholds are in the pull
// requests only: the consumer info reports the group, never a threshold,
// never a pin. So an overflow threshold never reached reads as pulls
// waiting while messages wait and nothing is delivered. A pull without
// thresholds is served at once.
func TestFactOverflowBelowMinPendingWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, connect := factServer(t)
	nc, js := connect()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "overflow", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, ctx, js, 3)

	done := make(chan bool, 1)
	go func() {
		b, err := c.Fetch(1, jetstream.FetchMaxWait(2*time.Second), jetstream.FetchPriorityGroup("jobs"), jetstream.FetchMinPending(5))
		got := false
		if err == nil {
			for range b.Messages() {
				got = true
			}
		}
		done <- got
	}()
	// (num_pending follows the stream a moment after the publishes.)
	ci := waitInfo(t, ctx, st, "overflow", "a pull waiting with 3 unprocessed", func(ci *jetstream.ConsumerInfo) bool {
		return ci.NumWaiting == 1 && ci.NumPending == 3
	})
	if ci.Delivered.Consumer != 0 {
		t.Errorf("while the pull waits: delivered %d, want 0", ci.Delivered.Consumer)
	}
	if len(ci.PriorityGroups) != 1 || ci.PriorityGroups[0] != (jetstream.PriorityGroupState{Group: "jobs"}) {
		t.Errorf("priority_groups %+v, want [{jobs}]", ci.PriorityGroups)
	}
	raw, err := nc.Request("$JS.API.CONSUMER.INFO.JOBS.overflow", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw.Data), "min_pending") || strings.Contains(string(raw.Data), "min_ack_pending") {
		t.Errorf("the info reports a threshold: %s", raw.Data)
	}
	if <-done {
		t.Fatal("a pull with min_pending 5 got a message with 3 unprocessed")
	}

	// At min_pending, the same pull is served.
	publish(t, ctx, js, 2)
	if _, got := fetchOne(t, c, 5*time.Second, jetstream.FetchPriorityGroup("jobs"), jetstream.FetchMinPending(5)); !got {
		t.Fatal("a pull with min_pending 5 got nothing with 5 unprocessed")
	}
	// Without thresholds, at once.
	if _, got := fetchOne(t, c, 5*time.Second, jetstream.FetchPriorityGroup("jobs")); !got {
		t.Fatal("a pull without thresholds got nothing")
	}
}

// A stream that sources (or mirrors) a workqueue or an interest stream
// reads it through a durable the server creates on the origin, listed
// among its consumers: JS_SRC_<hash> (JS_MIRROR_<hash>), a push consumer
// with ack policy flow_control, whose metadata names the reading stream
// under _nats.src. (_nats.mirror.): stream and acc. No key starts with
// _nats.source. (what jetctl once looked for). A limits origin gets an
// ephemeral consumer the list does not show. Deleting the reading stream
// deletes its durable.
func TestFactReplicationDurables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, connect := factServer(t)
	_, js := connect()
	origins := []jetstream.StreamConfig{
		{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy},
		{Name: "EVENTS", Subjects: []string{"events.>"}, Retention: jetstream.InterestPolicy},
		{Name: "LOGS", Subjects: []string{"logs.>"}},
	}
	for _, cfg := range origins {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	readers := []jetstream.StreamConfig{
		{Name: "WORK_COPY", Sources: []*jetstream.StreamSource{{Name: "WORK"}}},
		{Name: "EVENTS_COPY", Sources: []*jetstream.StreamSource{{Name: "EVENTS"}}},
		{Name: "EVENTS_MIRROR", Mirror: &jetstream.StreamSource{Name: "EVENTS"}},
		{Name: "LOGS_COPY", Sources: []*jetstream.StreamSource{{Name: "LOGS"}}},
	}
	for _, cfg := range readers {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []struct {
		origin, reader, prefix, metaPrefix string
		mirror                             bool
	}{
		{"WORK", "WORK_COPY", "JS_SRC_", "_nats.src.", false},
		{"EVENTS", "EVENTS_COPY", "JS_SRC_", "_nats.src.", false},
		{"EVENTS", "EVENTS_MIRROR", "JS_MIRROR_", "_nats.mirror.", true},
	} {
		ci := waitReplication(t, ctx, js, want.origin, want.reader)
		if !strings.HasPrefix(ci.Name, want.prefix) || ci.Config.Durable != ci.Name {
			t.Errorf("%s reads %s through %q (durable %q), want a durable %s*", want.reader, want.origin, ci.Name, ci.Config.Durable, want.prefix)
		}
		if ci.Config.DeliverSubject == "" || ci.Config.AckPolicy != jetstream.AckFlowControlPolicy {
			t.Errorf("%s: deliver subject %q, ack policy %s; want push, flow_control", ci.Name, ci.Config.DeliverSubject, ci.Config.AckPolicy)
		}
		md := ci.Config.Metadata
		if md[want.metaPrefix+"stream"] != want.reader || md[want.metaPrefix+"acc"] == "" {
			t.Errorf("%s: metadata %v, want %sstream=%s and %sacc", ci.Name, md, want.metaPrefix, want.reader, want.metaPrefix)
		}
		for k := range md {
			if strings.HasPrefix(k, "_nats.source.") {
				t.Errorf("%s: metadata key %s", ci.Name, k)
			}
		}
		if stream, mirror := jsapi.ReplicationTarget(md); !jsapi.ReplicationConsumer(md) || stream != want.reader || mirror != want.mirror {
			t.Errorf("%s: jsapi reads replication %v, target %q, mirror %v", ci.Name, jsapi.ReplicationConsumer(md), stream, mirror)
		}
	}
	// The limits origin lists none (its source reads it all the same).
	if _, err := js.Publish(ctx, "logs.x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := js.Stream(ctx, "LOGS_COPY")
		if err != nil {
			t.Fatal(err)
		}
		if st.CachedInfo().State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("LOGS_COPY never got the message")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if names := consumerNames(t, ctx, js, "LOGS"); len(names) != 0 {
		t.Errorf("LOGS lists consumers %v, want none", names)
	}
	// The sourcing stream deleted, the server deletes its durable.
	name := waitReplication(t, ctx, js, "WORK", "WORK_COPY").Name
	if err := js.DeleteStream(ctx, "WORK_COPY"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); slices.Contains(consumerNames(t, ctx, js, "WORK"), name); {
		if time.Now().After(deadline) {
			t.Fatalf("10s after WORK_COPY was deleted, WORK still lists %s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func consumerNames(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) []string {
	t.Helper()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	l := st.ConsumerNames(ctx)
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// waitReplication waits until origin lists the consumer through which
// reader reads it (at most 10 s).
func waitReplication(t *testing.T, ctx context.Context, js jetstream.JetStream, origin, reader string) *jetstream.ConsumerInfo {
	t.Helper()
	st, err := js.Stream(ctx, origin)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		l := st.ListConsumers(ctx)
		for ci := range l.Info() {
			if target, _ := jsapi.ReplicationTarget(ci.Config.Metadata); target == reader {
				return ci
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lists no consumer of %s after 10s", origin, reader)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The server (2.11–2.15) keeps one pin per consumer, whatever the group:
// a client pinned through the first group holds the others too (a pull
// in another group waits), the info reports the pin under the first
// group, and unpinning any of the consumer's groups clears it.
func TestFactOnePinPerConsumer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, connect := factServer(t)
	_, js := connect()
	st := pinnedConsumer(t, ctx, js, time.Hour, "jobs", "other")
	publish(t, ctx, js, 1)
	_, jsA := connect()
	a, err := jsA.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	pinA, got := fetchOne(t, a, 5*time.Second, jetstream.FetchPriorityGroup("jobs"))
	if !got || pinA == "" {
		t.Fatalf("A: got %v, pin %q", got, pinA)
	}
	publish(t, ctx, js, 1)
	_, jsB := connect()
	b, err := jsB.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	if _, got := fetchOne(t, b, 500*time.Millisecond, jetstream.FetchPriorityGroup("other")); got {
		t.Fatal("a pull in group other got a message while jobs is pinned to A")
	}
	if g := info(t, ctx, st, "workers").PriorityGroups; len(g) != 1 || g[0].Group != "jobs" || g[0].PinnedClientID != pinA {
		t.Fatalf("priority_groups %+v, want jobs pinned to A", g)
	}
	if err := st.UnpinConsumer(ctx, "workers", "other"); err != nil {
		t.Fatal(err)
	}
	if g := info(t, ctx, st, "workers").PriorityGroups; g[0].PinnedClientID != "" {
		t.Fatalf("after unpinning group other: %+v, want no pin", g)
	}
	pinB, got := fetchOne(t, b, 5*time.Second, jetstream.FetchPriorityGroup("other"))
	if !got || pinB == "" || pinB == pinA {
		t.Fatalf("B in group other: got %v, pin %q", got, pinB)
	}
	if g := info(t, ctx, st, "workers").PriorityGroups; len(g) != 1 || g[0].Group != "jobs" || g[0].PinnedClientID != pinB {
		t.Errorf("priority_groups %+v, want B's pin reported under jobs", g)
	}
}

// A server that restarts forgets when a consumer last acknowledged and
// last delivered (ack_floor.last_active, delivered.last_active), keeping
// the floor and the cursor themselves and the created time: the time of
// the last ack is then unknown, not "never" (issue 34; health.go,
// ackFloorAge).
func TestFactRestartForgetsLastActive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := embeddedtest.Start(t)
	js := embeddedtest.Reconnecting(t, c)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"jobs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, ctx, js, 5)
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := info(t, ctx, st, "billing")
	if before.AckFloor.Stream != 3 || before.AckFloor.Last == nil || before.Delivered.Last == nil {
		t.Fatalf("before the restart: ack floor %+v, delivered %+v", before.AckFloor, before.Delivered)
	}
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	var after *jetstream.ConsumerInfo
	for after == nil {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		ci, err := js.Consumer(try, "ORDERS", "billing")
		cancel()
		if err == nil {
			after = ci.CachedInfo()
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
	}
	if after.AckFloor.Stream != 3 || after.Delivered.Stream != 3 || !after.Created.Equal(before.Created) {
		t.Fatalf("after the restart: ack floor %+v, delivered %+v, created %v (was %v)", after.AckFloor, after.Delivered, after.Created, before.Created)
	}
	if after.AckFloor.Last != nil || after.Delivered.Last != nil {
		t.Fatalf("after the restart the server still says when: ack floor %+v, delivered %+v", after.AckFloor, after.Delivered)
	}
}
