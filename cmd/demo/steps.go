package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Steps is the demo, in order. A capability adds its steps here, next to
// the steps whose data it uses.
func Steps() []Step {
	return append([]Step{
		{
			Title: "Lint examples/orders.yaml before applying it: no setting that pages people (whether dead letters are captured needs the server)",
			Args:  []string{"lint", "-f", "examples/orders.yaml"},
		},
		{
			Title: "Create the ORDERS stream, its consumers and the config bucket from examples/orders.yaml",
			Args:  []string{"apply", "-f", "examples/orders.yaml", "--yes"},
		},
		{
			Title: "Plan again: the server matches the file, nothing to change",
			Args:  []string{"plan", "-f", "examples/orders.yaml", "--detailed-exitcode"},
		},
		{
			Title: "An outbox relay publishes 200 order events",
			Do:    func(ctx context.Context, env *Env) (string, error) { return publishOrders(ctx, env.JS, 200) },
		},
		{
			Title: "See the account at a glance",
			Args:  []string{"status"},
		},
		{
			Title: "The same as JSON, narrowed with jq",
			Args:  []string{"status", "--jq", `.streams[] | {name, messages}`},
		},
		{
			Title: "Incident timeline: the last cancelled orders of the past five minutes",
			Args:  []string{"replay", "ORDERS", "--since", "5m", "--subject", "orders.cancelled", "--last", "3", "--jq", `"\(.seq) \(.time) \(.data.order_id)"`},
		},
		{
			Title: "Re-feed a projector: republish the paid orders to a reprocessing subject, resumably",
			Do:    createReprocessStream,
			Args:  []string{"replay", "ORDERS", "--subject", "orders.paid", "--to", "reprocess.{subject}", "--rate", "2000/s", "--checkpoint", "{tmp}/reprocess.ckpt"},
		},
		{
			Title: "A CI job waits for an event: order ord-00042 shows up",
			Args:  []string{"stream", "tail", "ORDERS", "--from-seq", "1", "--filter", `.data.order_id == "ord-00042"`, "--count", "1", "--wait", "10s", "--jq", ".data"},
		},
		{
			Title: "Operators change the config bucket over a deploy",
			Do:    changeConfig,
		},
		{
			Title: "The key's history, full values in JSON",
			Args:  []string{"kv", "history", "config", "deploy.status", "-o", "jsonl", "--jq", `"\(.revision) \(.op) \(.value.state) \(.value.version)"`},
		},
		{
			Title: "What changed between the last two revisions",
			Args:  []string{"kv", "diff", "config", "deploy.status"},
		},
		{
			Title: "Wait until the deploy says ready (exit 0), as a CI job would",
			Args:  []string{"kv", "tail", "config", "deploy.status", "--filter", `.value.state == "ready"`, "--count", "1", "--wait", "10s"},
		},
		{
			Title: "Record what happens from now on: the server keeps JetStream's advisories and jetctl's audit records",
			Args:  []string{"events", "record"},
		},
		{
			Title: "Capture billing's dead-letter advisories (read from the recorder), create the DLQ stream, and give billing a retry subject of its own (a redrive must not reach shipping)",
			Args:  []string{"dlq", "setup", "--stream", "ORDERS", "--consumer", "billing", "--retry-subject"},
		},
		{
			Title: "The billing worker has a bug: it fails every paid order over 150 EUR until MaxDeliver (5) gives up",
			Do:    func(ctx context.Context, env *Env) (string, error) { return billingWorker(ctx, env.JS, 150) },
		},
		{
			Title: "Sweep the dead orders into DLQ_ORDERS (ORDERS has limits retention: the originals stay)",
			Args:  []string{"dlq", "sweep", "--stream", "ORDERS"},
		},
		{
			Title: "What is in the DLQ",
			Args:  []string{"dlq", "ls", "--stream", "ORDERS", "--list"},
		},
		{
			Title: "After the fix is deployed, redrive billing's dead letters to billing alone (its retry subject) at a gentle rate",
			Args:  []string{"dlq", "redrive", "--stream", "ORDERS", "--consumer", "billing", "--rate", "100/s", "--yes"},
		},
		{
			Title: "The fixed billing worker charges the redriven orders",
			Do:    func(ctx context.Context, env *Env) (string, error) { return billingWorker(ctx, env.JS, 0) },
		},
		{
			Title: "The incident's timeline: what happened to billing, in order, bursts folded",
			Args:  []string{"events", "timeline", "--stream", "ORDERS", "--consumer", "billing", "--fold"},
		},
	}, slices.Concat(consumerSteps(), checkSteps(), migrateSteps())...)
}

// billingWorker stands for the billing service: it charges paid orders
// from the billing consumer and, when failAbove > 0, NAKs those whose total
// is above it, until no message comes for a while.
func billingWorker(ctx context.Context, js jetstream.JetStream, failAbove float64) (string, error) {
	cons, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		return "", err
	}
	charged, failures := 0, 0
	failed := map[string]bool{}
	last := time.Now()
	for time.Since(last) < 700*time.Millisecond {
		batch, err := cons.Fetch(100, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			return "", err
		}
		for m := range batch.Messages() {
			last = time.Now()
			var o Order
			if err := json.Unmarshal(m.Data(), &o); err == nil && failAbove > 0 && o.Total > failAbove {
				failures++
				failed[o.OrderID] = true
				if err := m.Nak(); err != nil {
					return "", err
				}
				continue
			}
			if err := m.Ack(); err != nil {
				return "", err
			}
			charged++
		}
	}
	if failAbove > 0 {
		if err := waitCaptured(ctx, js, len(failed)); err != nil {
			return "", err
		}
		return fmt.Sprintf("charged %d orders; %d attempts failed on %d orders, which billing gave up on", charged, failures, len(failed)), nil
	}
	return fmt.Sprintf("charged %d orders, none failed", charged), nil
}

// waitCaptured waits (10 s at most) until ORDERS' dead-letter capture
// holds n advisories: it reads them from the recorder, a moment after the
// recorder stored them.
func waitCaptured(ctx context.Context, js jetstream.JetStream, n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := js.Stream(ctx, "DLQ_ADVISORIES_ORDERS")
		if err != nil {
			return err
		}
		if s.CachedInfo().State.Msgs >= uint64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("DLQ_ADVISORIES_ORDERS holds %d advisories after 10s, want %d", s.CachedInfo().State.Msgs, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func createReprocessStream(ctx context.Context, env *Env) (string, error) {
	_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "REPROCESS", Subjects: []string{"reprocess.>"}})
	if err != nil {
		return "", err
	}
	return "stream REPROCESS on reprocess.> (the projector's input)", nil
}

// changeConfig stands for operators editing the deploy status during a
// rollout.
func changeConfig(ctx context.Context, env *Env) (string, error) {
	kv, err := env.JS.KeyValue(ctx, "config")
	if err != nil {
		return "", err
	}
	for _, v := range []string{
		`{"state":"rolling","version":"1.4.0","replicas":3}`,
		`{"state":"rolling","version":"1.4.1","replicas":3}`,
		`{"state":"ready","version":"1.4.1","replicas":5}`,
	} {
		if _, err := kv.PutString(ctx, "deploy.status", v); err != nil {
			return "", err
		}
	}
	return "3 revisions of deploy.status: rolling 1.4.0, rolling 1.4.1, ready 1.4.1 with 5 replicas", nil
}

// Order is the event the demo's outbox relay publishes.
type Order struct {
	OrderID  string  `json:"order_id"`
	Customer string  `json:"customer"`
	Total    float64 `json:"total"`
	Currency string  `json:"currency"`
	Status   string  `json:"status"`
}

var statuses = []string{"created", "created", "paid", "shipped", "cancelled"}

// publishOrders publishes n order events asynchronously and waits for every
// acknowledgement.
func publishOrders(ctx context.Context, js jetstream.JetStream, n int) (string, error) {
	var futures []jetstream.PubAckFuture
	for i := 1; i <= n; i++ {
		o := Order{
			OrderID:  fmt.Sprintf("ord-%05d", i),
			Customer: fmt.Sprintf("cust-%03d", i%37),
			Total:    float64(i%50)*3.5 + 9.99,
			Currency: "EUR",
			Status:   statuses[i%len(statuses)],
		}
		data, err := json.Marshal(o)
		if err != nil {
			return "", err
		}
		f, err := js.PublishAsync("orders."+o.Status, data)
		if err != nil {
			return "", err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return "", ctx.Err()
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return "", err
		}
	}
	return fmt.Sprintf("%d events on orders.created, orders.paid, orders.shipped, orders.cancelled", n), nil
}
