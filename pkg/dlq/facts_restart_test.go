package dlq_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

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
