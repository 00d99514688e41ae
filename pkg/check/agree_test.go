package check

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// One question, one answer: a priority group pinned to a client that is
// gone, and the durable through which a sourcing stream reads a
// workqueue stream, read by consumer ls (List), consumer explain
// (Explain) and check (Run): the same word, severity and findings, the
// same pinned client since the same time, and check's own checks judged
// by those findings.
func TestPriorityAndReplicationAgree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := embeddedtest.Start(t)
	connect := func() jetstream.JetStream {
		nc, err := nats.Connect(c.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	js := connect()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: "jobs.run", PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs"}, PinnedTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "COPY", Sources: []*jetstream.StreamSource{{Name: "JOBS", FilterSubject: "jobs.copy"}}}); err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		for range n {
			if _, err := js.Publish(ctx, "jobs.run", []byte("job")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A client is pinned, then goes away; three jobs wait for it.
	publish(1)
	gone, err := connect().Consumer(ctx, "JOBS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	b, err := gone.Fetch(1, jetstream.FetchMaxWait(5*time.Second), jetstream.FetchPriorityGroup("jobs"))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	publish(3)
	// The durable COPY reads JOBS through.
	var replica string
	for deadline := time.Now().Add(10 * time.Second); replica == ""; time.Sleep(20 * time.Millisecond) {
		for ci := range st.ListConsumers(ctx).Info() {
			if jsapi.ReplicationConsumer(ci.Config.Metadata) {
				replica = ci.Name
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("JOBS lists no replication consumer after 10s")
		}
	}

	th := consumer.Thresholds{Inactive: time.Nanosecond}
	listed, err := consumer.List(ctx, js, consumer.ListConfig{Streams: []string{"JOBS"}, Thresholds: th})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(ctx, js, Config{Streams: []string{"JOBS"}, Thresholds: th})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(fs []consumer.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.ID+"/"+string(f.Severity))
		}
		return out
	}
	// Nobody pulls from workers: no worker, and a pinned client gone.
	want := map[string][]string{"workers": {consumer.FindingNoWorker + "/critical", consumer.FindingPinnedClientGone + "/critical"},
		replica: {consumer.FindingReplication + "/info"}}
	if len(listed) != 2 || len(report.Consumers) != 2 {
		t.Fatalf("ls lists %d consumers, check %d; want 2", len(listed), len(report.Consumers))
	}
	for _, ls := range listed {
		ex, err := consumer.Explain(ctx, js, consumer.ExplainConfig{Stream: "JOBS", Consumer: ls.Consumer, Thresholds: th})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(report.Consumers, func(c *ConsumerResult) bool { return c.Consumer == ls.Consumer })
		ck := report.Consumers[i]
		if got := ids(ls.Findings); !slices.Equal(got, want[ls.Consumer]) {
			t.Errorf("%s: ls findings %v, want %v", ls.Consumer, got, want[ls.Consumer])
		}
		if !slices.Equal(ids(ex.Findings), ids(ls.Findings)) || !slices.Equal(ids(ck.Findings), ids(ls.Findings)) {
			t.Errorf("%s: findings ls %v, explain %v, check %v", ls.Consumer, ids(ls.Findings), ids(ex.Findings), ids(ck.Findings))
		}
		if ex.State.Health != ls.Health || ck.Health != ls.Health || ck.Severity != ls.Severity {
			t.Errorf("%s: health ls %s/%s, explain %s, check %s/%s", ls.Consumer, ls.Health, ls.Severity, ex.State.Health, ck.Health, ck.Severity)
		}
		checkNames := names(ck.Checks, func(c Check) string { return c.Name + "/" + c.Status.String() })
		switch ls.Consumer {
		case "workers":
			g, ok := ls.PinnedGroup()
			eg, _ := ex.State.PinnedGroup()
			if !ok || g.PinnedSince == nil || eg.PinnedClientID != g.PinnedClientID || !eg.PinnedSince.Equal(*g.PinnedSince) ||
				ck.PriorityGroups[0].PinnedClientID != g.PinnedClientID || !ck.PriorityGroups[0].PinnedSince.Equal(*g.PinnedSince) {
				t.Errorf("pins: ls %+v, explain %+v, check %+v", g, eg, ck.PriorityGroups)
			}
			ev := ex.Findings[slices.IndexFunc(ex.Findings, func(f consumer.Finding) bool { return f.ID == consumer.FindingPinnedClientGone })].Evidence
			if ev["pinned_client_id"] != g.PinnedClientID || ev["pinned_since"] != g.PinnedSince.Format(time.RFC3339Nano) {
				t.Errorf("explain's evidence %v, ls's pin %+v", ev, g)
			}
			if ck.Status != Critical || !slices.Contains(checkNames, "pinned-client/critical") || !slices.Contains(checkNames, "health/critical") {
				t.Errorf("check: %s, checks %v", ck.Status, checkNames)
			}
		case replica:
			if ls.Replication == nil || ls.Replication.Stream != "COPY" || ls.Replication.Kind != consumer.ReplicationSource || ck.Replication == nil {
				t.Errorf("replication: ls %+v, check %+v", ls.Replication, ck.Replication)
			}
			if ck.Status != OK || !slices.Equal(checkNames, []string{"health/ok"}) {
				t.Errorf("check of the replication consumer: %s, checks %v", ck.Status, checkNames)
			}
		}
	}
}
