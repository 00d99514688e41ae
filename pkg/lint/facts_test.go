package lint

import (
	stdcontext "context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// The facts the rules state about the server, pinned against the
// embedded one: when a test here fails, a rule's text (and maybe its
// check) is wrong.

func factStream(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := js.CreateStream(stdcontext.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

// apiErrorCode is the server's error code of err, 0 for none (and for an
// error the client made up).
func apiErrorCode(err error) int {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return int(apiErr.ErrorCode)
	}
	return 0
}

// backoff-overrides-ack-wait: the server stores backoff[0] as ack_wait,
// and redelivers after it, not after the ack_wait written.
func TestFactBackoffReplacesAckWait(t *testing.T) {
	ctx, cancel := stdcontext.WithTimeout(stdcontext.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	factStream(t, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	c, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "ship", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5,
		AckWait: 30 * time.Second, BackOff: []time.Duration{time.Second, 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config.AckWait; got != time.Second {
		t.Fatalf("ack_wait stored as %s, want backoff[0] (1s)", got)
	}
	if _, err := js.Publish(ctx, "orders.paid", []byte("1")); err != nil {
		t.Fatal(err)
	}
	first, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range first.Messages() {
		// not acknowledged
	}
	start := time.Now()
	again, err := c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range again.Messages() {
		md, _ := m.Metadata()
		if md.NumDelivered != 2 {
			t.Fatalf("delivery %d, want the first redelivery", md.NumDelivered)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("no redelivery within 10s (ack_wait written: 30s): %v", again.Error())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("redelivered after %s, want about backoff[0] (1s)", d)
	}
}

// backoff-exceeds-max-deliver: the server refuses more backoff values
// than max_deliver (10116), and takes as many.
func TestFactBackoffLongerThanMaxDeliverRefused(t *testing.T) {
	ctx := stdcontext.Background()
	js := embeddedtest.JetStream(t)
	factStream(t, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	backoff := []time.Duration{time.Second, 5 * time.Second}
	_, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "short", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1, BackOff: backoff})
	if code := apiErrorCode(err); code != 10116 {
		t.Fatalf("max_deliver 1, 2 backoff values: %v, want error 10116", err)
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "equal", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 2, BackOff: backoff}); err != nil {
		t.Fatalf("max_deliver 2, 2 backoff values: %v, want it accepted", err)
	}
	r, _ := RuleByID("backoff-exceeds-max-deliver")
	if !containsCode(r.Why, 10116) {
		t.Errorf("the rule's Why does not name error 10116: %s", r.Why)
	}
}

// containsCode reports whether a rule's text names a server error code.
func containsCode(text string, code int) bool {
	return strings.Contains(text, fmt.Sprint(code))
}

// consumer-mode-settings: every setting the rule names is refused in the
// other mode; the others pinned here are accepted there (so the rule
// does not name them).
func TestFactConsumerModeSettings(t *testing.T) {
	ctx := stdcontext.Background()
	js := embeddedtest.JetStream(t)
	factStream(t, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	setters := map[string]func(*jetstream.ConsumerConfig){
		"max_waiting":    func(c *jetstream.ConsumerConfig) { c.MaxWaiting = 10 },
		"max_batch":      func(c *jetstream.ConsumerConfig) { c.MaxRequestBatch = 10 },
		"max_expires":    func(c *jetstream.ConsumerConfig) { c.MaxRequestExpires = time.Minute },
		"max_bytes":      func(c *jetstream.ConsumerConfig) { c.MaxRequestMaxBytes = 1024 },
		"flow_control":   func(c *jetstream.ConsumerConfig) { c.FlowControl = true },
		"idle_heartbeat": func(c *jetstream.ConsumerConfig) { c.IdleHeartbeat = 5 * time.Second },
		"rate_limit_bps": func(c *jetstream.ConsumerConfig) { c.RateLimit = 1 << 20 },
		"deliver_group":  func(c *jetstream.ConsumerConfig) { c.DeliverGroup = "workers" },
	}
	n := 0
	create := func(push bool, key string) error {
		n++
		cfg := jetstream.ConsumerConfig{Durable: fmt.Sprintf("c%d", n), AckPolicy: jetstream.AckExplicitPolicy}
		if push {
			cfg.DeliverSubject = fmt.Sprintf("deliver.%d", n)
		}
		setters[key](&cfg)
		_, err := js.CreateConsumer(ctx, "ORDERS", cfg)
		if err != nil && apiErrorCode(err) == 0 {
			t.Fatalf("%s: %v, not the server's refusal", key, err)
		}
		return err
	}
	rule, _ := RuleByID("consumer-mode-settings")
	inRule := map[string]bool{}
	for _, m := range []struct {
		push     bool
		settings []modeSetting
	}{{true, pullOnlySettings}, {false, pushOnlySettings}} {
		for _, s := range m.settings {
			inRule[s.key] = true
			if setters[s.key] == nil {
				t.Fatalf("no test sets %s", s.key)
			}
			err := create(m.push, s.key)
			if err == nil {
				t.Errorf("%s on a push=%v consumer was accepted, but consumer-mode-settings says it is refused", s.key, m.push)
				continue
			}
			if code := apiErrorCode(err); !containsCode(rule.Why, code) {
				t.Errorf("%s on a push=%v consumer: error %d, which the rule's Why does not name: %s", s.key, m.push, code, rule.Why)
			}
		}
	}
	// The settings the server takes in the other mode.
	for _, s := range []struct {
		push bool
		key  string
	}{{true, "max_batch"}, {true, "max_expires"}, {true, "max_bytes"}, {false, "deliver_group"}} {
		if inRule[s.key] {
			t.Errorf("consumer-mode-settings names %s, which is accepted", s.key)
		}
		if err := create(s.push, s.key); err != nil {
			t.Errorf("%s on a push=%v consumer: %v, want it accepted", s.key, s.push, err)
		}
	}
}

// replicas-above-cluster: a single server refuses more than one replica
// (10074); a 3-server cluster refuses five (10005, no peers for them).
func TestFactReplicasAboveCluster(t *testing.T) {
	ctx := stdcontext.Background()
	js := embeddedtest.JetStream(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3})
	if code := apiErrorCode(err); code != 10074 {
		t.Fatalf("R3 on a single server: %v, want error 10074", err)
	}
	if testing.Short() {
		t.Skip("the cluster half starts 3 servers")
	}
	c, err := embedded.Start(embedded.Config{Nodes: 3, StoreDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	cjs := embeddedtest.Connect(t, c, "")
	_, err = cjs.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 5})
	if code := apiErrorCode(err); code != 10005 {
		t.Fatalf("R5 on 3 servers: %v, want error 10005", err)
	}
	r, _ := RuleByID("replicas-above-cluster")
	if !containsCode(r.Why, 10074) || !containsCode(r.Why, 10005) {
		t.Errorf("the rule's Why does not name errors 10074 and 10005: %s", r.Why)
	}
}

// interest-no-consumers: an interest stream with no consumer stores
// nothing; a consumer made later does not bring back what was published.
func TestFactInterestStreamWithoutConsumersKeepsNothing(t *testing.T) {
	ctx, cancel := stdcontext.WithTimeout(stdcontext.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	factStream(t, js, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Retention: jetstream.InterestPolicy})
	for i := range 5 {
		ack, err := js.Publish(ctx, "events.x", []byte("e"))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Sequence != uint64(i+1) {
			t.Fatalf("publish %d: seq %d", i, ack.Sequence)
		}
	}
	s, err := js.Stream(ctx, "EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if st := s.CachedInfo().State; st.Msgs != 0 || st.LastSeq != 5 {
		t.Fatalf("stream: %d messages, last seq %d; want 0 kept of 5 acknowledged", st.Msgs, st.LastSeq)
	}
	c, err := js.CreateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "late", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if ci := c.CachedInfo(); ci.NumPending != 0 {
		t.Fatalf("a consumer made afterwards has %d pending, want 0", ci.NumPending)
	}
}

// max-age-before-dead-letter: a message that fails every delivery becomes
// a dead letter (the max_deliveries advisory) only after max_deliver
// deliveries and the ack_wait after each; a stream whose max_age is
// shorter removes it first, and no advisory ever says it failed. With a
// longer max_age the same consumer makes the advisory.
func TestFactMaxAgeRemovesBeforeMaxDeliver(t *testing.T) {
	ctx, cancel := stdcontext.WithTimeout(stdcontext.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	const ackWait, maxDeliver = 400 * time.Millisecond, 5
	run := func(stream string, maxAge time.Duration) (deliveries int, advised bool) {
		factStream(t, js, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"}, MaxAge: maxAge})
		c, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "work", AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: ackWait, MaxDeliver: maxDeliver})
		if err != nil {
			t.Fatal(err)
		}
		advisories, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + stream + ".work")
		if err != nil {
			t.Fatal(err)
		}
		defer advisories.Unsubscribe()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, strings.ToLower(stream)+".job", []byte("fails")); err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		// Pull (never acknowledging) until the advisory comes, or until
		// the message is gone and a pull past its last ack_wait gets
		// nothing.
		for {
			batch, err := c.Fetch(1, jetstream.FetchMaxWait(2*ackWait))
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for range batch.Messages() {
				got++
			}
			deliveries += got
			if _, err := advisories.NextMsg(0); err == nil {
				return deliveries, true
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got == 0 && info.State.Msgs == 0 {
				return deliveries, false
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: neither an advisory nor the message gone after %d deliveries", stream, deliveries)
			}
		}
	}
	// max_deliver 5 x ack_wait 400ms: 2s; max_age 1s removes it first.
	if deliveries, advised := run("SHORT", time.Second); advised || deliveries == 0 || deliveries >= maxDeliver {
		t.Errorf("max_age 1s: %d deliveries, advisory %v; want the message gone before its %d deliveries, with no advisory", deliveries, advised, maxDeliver)
	}
	if deliveries, advised := run("LONG", time.Minute); !advised || deliveries != maxDeliver {
		t.Errorf("max_age 1m: %d deliveries, advisory %v; want %d and the advisory", deliveries, advised, maxDeliver)
	}
}

// priority-timeout-unused: the server takes priority_timeout with a
// policy other than pinned_client and keeps it, but pins a client (the
// Nats-Pin-Id header of a pull's first message) only with pinned_client.
func TestFactPriorityTimeoutOnlyPins(t *testing.T) {
	ctx, cancel := stdcontext.WithTimeout(stdcontext.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	nc := js.Conn()
	factStream(t, js, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	for range 2 {
		if _, err := js.Publish(ctx, "jobs.run", []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		policy jetstream.PriorityPolicy
		pins   bool
	}{{jetstream.PriorityPolicyOverflow, false}, {jetstream.PriorityPolicyPinned, true}} {
		name := fmt.Sprintf("p%d", tc.policy)
		c, err := js.CreateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy,
			PriorityPolicy: tc.policy, PriorityGroups: []string{"jobs"}, PinnedTTL: time.Minute})
		if err != nil {
			t.Fatalf("policy %d with priority_timeout: %v", tc.policy, err)
		}
		if got := c.CachedInfo().Config.PinnedTTL; got != time.Minute {
			t.Errorf("policy %d: priority_timeout stored as %s, want 1m", tc.policy, got)
		}
		// The raw pull: a group's request, as a client of the group sends it.
		msg, err := nc.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT.JOBS."+name, []byte(`{"batch":1,"expires":2000000000,"group":"jobs"}`))
		if err != nil {
			t.Fatal(err)
		}
		if string(msg.Data) != "job" {
			t.Fatalf("policy %d: pull answered %q %v", tc.policy, msg.Data, msg.Header)
		}
		if pinned := msg.Header.Get("Nats-Pin-Id") != ""; pinned != tc.pins {
			t.Errorf("policy %d: pinned %v, want %v", tc.policy, pinned, tc.pins)
		}
	}
}

// persist-async: the server takes persist_mode async on an R1 file
// stream and keeps it for the stream's life: an update back to default
// is refused (10052), so the choice is made at creation.
func TestFactAsyncPersistIsForLife(t *testing.T) {
	ctx := stdcontext.Background()
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "FAST", Subjects: []string{"fast.>"}, PersistMode: jetstream.AsyncPersistMode}
	s, err := js.CreateStream(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.PersistMode; got != jetstream.AsyncPersistMode {
		t.Fatalf("persist_mode stored as %v", got)
	}
	cfg.PersistMode = jetstream.DefaultPersistMode
	_, err = js.UpdateStream(ctx, cfg)
	if code := apiErrorCode(err); code != 10052 {
		t.Fatalf("async -> default in place: %v, want error 10052", err)
	}
	if r, _ := RuleByID("persist-async"); !containsCode(r.Why, 10052) {
		t.Errorf("the rule's Why does not name error 10052: %s", r.Why)
	}
}

// interest-no-consumers: the consumer through which a mirror reads an
// interest stream is an interest: what is published once it exists
// reaches the copy, though no user's consumer exists.
func TestFactMirrorIsAnInterestStreamsConsumer(t *testing.T) {
	ctx, cancel := stdcontext.WithTimeout(stdcontext.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	factStream(t, js, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Retention: jetstream.InterestPolicy})
	factStream(t, js, jetstream.StreamConfig{Name: "EVENTS_COPY", Mirror: &jetstream.StreamSource{Name: "EVENTS"}})
	events, err := js.Stream(ctx, "EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	// The mirror makes its consumer after the stream: wait for it.
	for {
		info, err := events.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the mirror made no consumer on EVENTS")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 5 {
		if _, err := js.Publish(ctx, "events.x", []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	copied, err := js.Stream(ctx, "EVENTS_COPY")
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := copied.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 5 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the copy holds %d messages, want 5", info.State.Msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workqueue-ack-none: the server refuses a consumer of a workqueue stream
// whose ack_policy is none or all, and takes explicit. The loader refuses
// such a consumer of a declared stream (lint reports the refusal under
// this rule), the rule finds it against a stream only the server has.
func TestFactWorkqueueRefusesConsumersThatDoNotAck(t *testing.T) {
	ctx := stdcontext.Background()
	js := embeddedtest.JetStream(t)
	factStream(t, js, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy})
	for ack, want := range map[jetstream.AckPolicy]int{jetstream.AckNonePolicy: 10084, jetstream.AckAllPolicy: 10098} {
		_, err := js.CreateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "c" + ack.String(), AckPolicy: ack})
		if code := apiErrorCode(err); code != want {
			t.Errorf("ack_policy %s on a workqueue stream: %v, want error %d", ack, err, want)
		}
	}
	if _, err := js.CreateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "explicit", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Errorf("ack_policy explicit on a workqueue stream: %v, want it accepted", err)
	}
}
